package memory

import (
	"container/list"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// The stats cache keeps PermitStats answers, as OpenSearch's shard request
// cache keeps aggregation results until the next refresh, but finer: an
// answer is keyed by the query, its anchor and the anchor's lead version
// (bumped by every lead write that touches the anchor, leadIndex) and the
// location generation (stats name the anchor's type, and top lists name
// locations). A write elsewhere leaves the answer valid. Both sides apply
// the same batches in the same order, so equal versions mean equal
// contents on either side. Least recently used answers are dropped beyond
// the size.

type statsCache struct {
	mu   sync.Mutex
	size int
	ll   *list.List // front: most recently used; values *statsEntry
	m    map[string]*list.Element

	hits, misses int64 // for tests
}

type statsEntry struct {
	key string
	st  readmodel.PermitStats
}

func newStatsCache(size int) *statsCache {
	return &statsCache{size: size, ll: list.New(), m: map[string]*list.Element{}}
}

// get returns a copy of the answer stored under key.
func (c *statsCache) get(key string) (readmodel.PermitStats, bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	if !ok {
		c.misses++
		c.mu.Unlock()
		return readmodel.PermitStats{}, false
	}
	c.hits++
	c.ll.MoveToFront(e)
	st := e.Value.(*statsEntry).st
	c.mu.Unlock()
	return cloneStats(st), true
}

// put stores a copy of st under key.
func (c *statsCache) put(key string, st readmodel.PermitStats) {
	st = cloneStats(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		e.Value.(*statsEntry).st = st
		c.ll.MoveToFront(e)
		return
	}
	c.m[key] = c.ll.PushFront(&statsEntry{key: key, st: st})
	for c.ll.Len() > c.size {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*statsEntry).key)
	}
}

func (c *statsCache) counts() (hits, misses int64, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.ll.Len()
}

func cloneStats(st readmodel.PermitStats) readmodel.PermitStats {
	cp := func(v []readmodel.ValueCount) []readmodel.ValueCount {
		if v == nil {
			return nil
		}
		return append([]readmodel.ValueCount(nil), v...)
	}
	st.BySignal = cp(st.BySignal)
	st.TopCounties = cp(st.TopCounties)
	st.TopCities = cp(st.TopCities)
	st.TopZips = cp(st.TopZips)
	return st
}

// statsKey names q and the state of the side it depends on.
func (s *side) statsKey(q readmodel.StatsQuery) string {
	var b strings.Builder
	f := q.Filter
	b.Grow(96 + len(f.Geo.ID()))
	field := func(v string) {
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	field(f.Geo.ID())
	b.WriteString(strconv.Itoa(len(f.SignalKeys)))
	for _, k := range f.SignalKeys {
		field(k)
	}
	field(f.FromDate)
	field(f.ToDate)
	field(f.FreshSince)
	if f.MinConfidence != nil {
		b.WriteString("c" + strconv.FormatUint(math.Float64bits(*f.MinConfidence), 16))
	}
	field(q.Today)
	b.WriteString("|" + strconv.Itoa(q.TopN))
	b.WriteString("|" + strconv.FormatUint(s.signals.leads.anchorVersion(f.Geo.ID()), 10))
	b.WriteString("|" + strconv.FormatUint(s.locGen, 10))
	return b.String()
}
