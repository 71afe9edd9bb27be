package memory

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Lead stats.
//
// PermitStats must equal what paging PermitLeads yields for the same
// filter, for any filter, and answer a state geo (~10^6 leads over many
// years) within a couple of milliseconds whatever the window. The filter
// is a day range, a set of signal keys and an arbitrary confidence floor.
// The design:
//
//   - Every (anchor, key, day) cell keeps its aggregates (count,
//     confidence buckets, sparse counts per city, zip and county once it
//     holds sparseMin leads) and its leads as inline records (cellRecs:
//     confidence plus three interned ids, 24 bytes, no pointers), confidence descending with null
//     confidence last. A confidence floor keeps a prefix of each cell,
//     found by binary search; its top-list counts are added record by
//     record or as the cell's sparse totals less the other records,
//     whichever is cheaper.
//   - Roll-ups over all the key's leads, each year and each month
//     (rollup.go) hold the same counts by confidence bucket in a Fenwick
//     tree, so a window is a handful of roll-ups and at most about two
//     months of edge days (or everything less what lies outside it), and
//     a floor costs one tree read per roll-up plus the leads of the
//     floor's own bucket.
//   - Freshness only splits the last 30 days: read from their day cells.
//
// Rejected: a per-anchor Fenwick tree over (day, confidence) answers
// counts in O(log^2) but not the exact per-city/zip/county top lists
// without one tree per id; sorted arrays with prefix sparse counts per
// position cost O(n x ids) memory. Walking the B-trees chases a pointer
// per lead: ~20-60 ms for the state geo. Reading every day cell (the
// previous approach) grows with the days: 5 ms all-time over 3 years.
//
// Memory: one 24-byte record per lead per anchor (about 5 anchors per
// lead), kept in step by leadDayAggs.add, and the roll-ups' trees.

// leadStatsAcc accumulates PermitStats.
type leadStatsAcc struct {
	today    int32
	minConf  *float64
	bySignal map[string]int64
	total    int64
	conf     [3]int64
	fresh    [4]int64
	cities   idCounter
	zips     idCounter
	counties idCounter
	// Buffers reused across keys.
	planA, planB   statsPlan
	upBuf, downBuf []*leadRec
	pivots         [2]leadRec // floorBucket's seek keys
	kept           []idCountPair64
}

// statsAccs recycle accumulators: their counters are as long as the
// interned names, and a read should not allocate them (nor have the
// collector make it assist) each time. top leaves every counter at zero.
var statsAccs = sync.Pool{New: func() any { return &leadStatsAcc{bySignal: map[string]int64{}} }}

func (s *leadStatsAcc) reset(today int32, minConf *float64, names int) {
	s.today, s.minConf = today, minConf
	s.total, s.conf, s.fresh = 0, [3]int64{}, [4]int64{}
	clear(s.bySignal)
	for _, c := range []*idCounter{&s.cities, &s.zips, &s.counties} {
		if len(c.n) < names {
			c.n = make([]int64, names)
		}
		c.touched = c.touched[:0]
	}
}

// idCounter is a dense count per interned id that remembers which ids it
// touched (possibly more than once).
type idCounter struct {
	n       []int64
	touched []uint32
}

func (c *idCounter) add(id uint32, n int64) {
	if id == 0 || n == 0 {
		return
	}
	if c.n[id] == 0 {
		c.touched = append(c.touched, id)
	}
	c.n[id] += n
}

func leadFreshBucket(lag int32) int {
	switch {
	case lag <= 7:
		return 0
	case lag <= 14:
		return 1
	case lag <= 30:
		return 2
	}
	return 3
}

// scalars adds sign times the first p records of c (dated day) to every
// count but the top lists.
func (s *leadStatsAcc) scalars(c *leadDayCell, day int32, p int, sign int64) {
	if p == 0 {
		return
	}
	n := sign * int64(p)
	s.total += n
	if day == noDate {
		s.fresh[3] += n
	} else {
		s.fresh[leadFreshBucket(max(s.today-day, 0))] += n
	}
	if s.minConf == nil {
		for i := range c.conf {
			s.conf[i] += sign * c.conf[i]
		}
		return
	}
	high := min(p, c.recs.atLeast(0.75))
	medium := min(p, c.recs.atLeast(0.5)) - high
	s.conf[0] += sign * int64(high)
	s.conf[1] += sign * int64(medium)
	s.conf[2] += sign * int64(p-high-medium)
}

// sparse adds sign times c's sparse totals (its records' when it keeps
// none) to the top-list counters.
func (s *leadStatsAcc) sparse(c *leadDayCell, sign int64) {
	if c.sp == nil {
		s.records(c.recs.r, sign)
		return
	}
	for _, e := range c.sp.cities {
		s.cities.add(e.id, sign*int64(e.n))
	}
	for _, e := range c.sp.zips {
		s.zips.add(e.id, sign*int64(e.n))
	}
	for _, e := range c.sp.counties {
		s.counties.add(e.id, sign*int64(e.n))
	}
}

// records adds sign once per record to the top-list counters.
func (s *leadStatsAcc) records(recs []cellRec, sign int64) {
	for _, r := range recs {
		s.cities.add(r.ids.city, sign)
		s.zips.add(r.ids.zip, sign)
		s.counties.add(r.ids.county, sign)
	}
}

// part adds sign times records [from, to) of c, a prefix or a suffix, to
// the top-list counters the cheaper way: k records directly, or the
// cell's sparse totals less the other n-k records.
func (s *leadStatsAcc) part(c *leadDayCell, from, to int, sign int64) {
	n := len(c.recs.r)
	k := to - from
	switch {
	case k == 0:
	case k == n:
		s.sparse(c, sign)
	case 3*k <= c.sparseLen()+3*(n-k):
		s.records(c.recs.r[from:to], sign)
	default:
		s.sparse(c, sign)
		s.records(c.recs.r[:from], -sign)
		s.records(c.recs.r[to:], -sign)
	}
}

// key adds the leads of one signal key that pass the window and floor:
// the window as a signed sum of roll-ups and day cells (rollup.go), each
// day cell read by its passing prefix, each roll-up by its confidence
// tree and the floor's bucket lead by lead.
func (s *leadStatsAcc) key(k *keyLeads, w leadWindow) {
	d := &k.days
	p := d.plan(w, &s.planA, &s.planB)
	var kept int64
	for _, sc := range p.cells {
		n := sc.c.passing(s.minConf)
		s.scalars(sc.c, sc.day, n, sc.sign)
		s.part(sc.c, 0, n, sc.sign)
		kept += sc.sign * int64(n)
	}
	if len(p.rolls) > 0 {
		kept += s.rolls(k, p.rolls)
		s.freshFix(d, p.rolls)
	}
	if kept != 0 {
		s.bySignal[k.key] += kept
	}
}

// rolls adds the roll-ups' leads that pass the floor, all counted as
// 31+ days old (freshFix corrects that), and returns their number.
func (s *leadStatsAcc) rolls(k *keyLeads, rolls []signedRoll) int64 {
	b := 0 // the first bucket taken whole
	if s.minConf != nil {
		b = confBucket(*s.minConf) + 1
	}
	var kept int64
	for _, sr := range rolls {
		f, sign := sr.ru.fen, sr.sign
		n := f.atLeast(b)
		high := f.atLeast(max(b, 48)) // 48/64 = 0.75
		medium := f.atLeast(max(b, 32)) - high
		low := n - high - medium
		if s.minConf == nil {
			n += f.null
			low += f.null
			f.nullIDsInto(s, sign)
		}
		f.idsAtLeast(b, s, sign)
		s.total += sign * n
		s.conf[0] += sign * high
		s.conf[1] += sign * medium
		s.conf[2] += sign * low
		s.fresh[3] += sign * n
		kept += sign * n
	}
	if s.minConf != nil {
		kept += s.floorBucket(k, rolls)
	}
	return kept
}

// stepConf moves it (at a lead when ok; leads by confidence descending)
// to the next lead with confidence in [lo, hi), appended to buf, and
// past it; false once it reaches a lead below lo, one without
// confidence, or the end.
func stepConf(x *leadIndex, it *leadIter, ok bool, lo, hi float64, buf []*leadRec) (bool, []*leadRec) {
	for ok {
		r := it.Item()
		if !r.hasConf || r.conf < lo {
			return false, buf
		}
		if r.conf < hi {
			return it.Next(), append(buf, x.rec(r))
		}
		ok = it.Next()
	}
	return false, buf
}

// floorBucket adds the roll-ups' leads of the floor's own bucket that
// pass it, from the key's confidence tree: the leads at or above the
// floor, or the whole bucket less those below it, whichever side of the
// floor holds fewer leads (both sides are walked in step until one ends).
func (s *leadStatsAcc) floorBucket(k *keyLeads, rolls []signedRoll) int64 {
	f := *s.minConf
	bf := confBucket(f)
	hi, lo := math.Inf(1), math.Inf(-1)
	if bf < confBuckets-1 {
		hi = float64(bf+1) / confBuckets
	}
	if bf > 0 {
		lo = float64(bf) / confBuckets
	}
	up, down := k.byConf.Iter(), k.byConf.Iter()
	defer up.Release()
	defer down.Release()
	upOK := up.First()
	if !math.IsInf(hi, 1) {
		s.pivots[0] = leadRec{hasConf: true, conf: hi, date: noDate}
		upOK = up.Seek(seekItem(&s.pivots[0]))
	}
	s.pivots[1] = leadRec{hasConf: true, conf: f, date: noDate}
	downOK := down.Seek(seekItem(&s.pivots[1]))
	s.upBuf, s.downBuf = s.upBuf[:0], s.downBuf[:0]
	for {
		// The upper side: [f, hi).
		if upOK, s.upBuf = stepConf(k.x, &up, upOK, f, hi, s.upBuf); !upOK {
			return s.floorRecs(s.upBuf, rolls, 1)
		}
		// The lower side: [lo, f).
		if downOK, s.downBuf = stepConf(k.x, &down, downOK, lo, f, s.downBuf); !downOK {
			break
		}
	}
	// The whole bucket from the roll-ups, less its leads below the floor.
	var kept int64
	for _, sr := range rolls {
		fen, sign := sr.ru.fen, sr.sign
		n := fen.atLeast(bf) - fen.atLeast(bf+1)
		fen.idsOfBucket(bf, s, sign)
		s.total += sign * n
		s.conf[bucketConf(bf)] += sign * n
		s.fresh[3] += sign * n
		kept += sign * n
	}
	return kept + s.floorRecs(s.downBuf, rolls, -1)
}

// bucketConf is the confidence bucket (high, medium, low) of a whole
// confidence bucket.
func bucketConf(b int) int {
	switch {
	case b >= 48:
		return 0
	case b >= 32:
		return 1
	}
	return 2
}

// floorRecs adds sign times each lead, weighted by the roll-ups that
// hold it, and returns the net count.
func (s *leadStatsAcc) floorRecs(recs []*leadRec, rolls []signedRoll, sign int64) int64 {
	var kept int64
	for _, r := range recs {
		var w int64
		for _, sr := range rolls {
			if sr.ru.contains(r.date) {
				w += sr.sign
			}
		}
		w *= sign
		if w == 0 {
			continue
		}
		s.total += w
		s.conf[leadConfBucket(r)] += w
		s.fresh[3] += w
		s.cities.add(r.city, w)
		s.zips.add(r.zip, w)
		s.counties.add(r.county, w)
		kept += w
	}
	return kept
}

// freshFix moves the roll-ups' leads of the last 30 days (and later) from
// 31+ to their freshness bucket, from the day cells.
func (s *leadStatsAcc) freshFix(d *leadDayAggs, rolls []signedRoll) {
	i, _ := slices.BinarySearch(d.days, s.today-30)
	for ; i < len(d.days); i++ {
		day := d.days[i]
		var w int64
		for _, sr := range rolls {
			if sr.ru.contains(day) {
				w += sr.sign
			}
		}
		if w == 0 {
			continue
		}
		n := w * int64(d.cell(i).passing(s.minConf))
		s.fresh[leadFreshBucket(max(s.today-day, 0))] += n
		s.fresh[3] -= n
	}
}

// packed adds sign times counts of packed keys to the top-list counters.
func (s *leadStatsAcc) packed(c sparseCounts, sign int64) {
	for _, e := range c {
		id := e.id &^ kindMask
		switch e.id & kindMask {
		case kindCity:
			s.cities.add(id, sign*int64(e.n))
		case kindZip:
			s.zips.add(id, sign*int64(e.n))
		default:
			s.counties.add(id, sign*int64(e.n))
		}
	}
}

// packedOne adds n to the top-list counter of one packed key.
func (s *leadStatsAcc) packedOne(k uint32, n int64) {
	id := k &^ kindMask
	switch k & kindMask {
	case kindCity:
		s.cities.add(id, n)
	case kindZip:
		s.zips.add(id, n)
	default:
		s.counties.add(id, n)
	}
}

// stats aggregates the leads PermitLeads pages for the same filter, from
// the day cells and roll-ups (see the comment at the top of this file).
func (x *leadIndex) stats(q readmodel.StatsQuery, names displayNames) (readmodel.PermitStats, error) {
	w, err := leadWindowOf(q.Filter)
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	today := parseDay(q.Today)
	if today == noDate {
		return readmodel.PermitStats{}, fmt.Errorf("%w: stats need Today", readmodel.ErrInvalidQuery)
	}
	n := len(x.names.strs)
	acc := statsAccs.Get().(*leadStatsAcc)
	defer statsAccs.Put(acc)
	acc.reset(today, w.minConf, n)
	for _, k := range x.anchors[q.Filter.Geo.ID()].selected(q.Filter.SignalKeys) {
		acc.key(k, w)
	}
	st := readmodel.PermitStats{
		Total:            acc.total,
		ConfidenceHigh:   acc.conf[0],
		ConfidenceMedium: acc.conf[1],
		ConfidenceLow:    acc.conf[2],
		Fresh0to7:        acc.fresh[0],
		Fresh8to14:       acc.fresh[1],
		Fresh15to30:      acc.fresh[2],
		Fresh31Plus:      acc.fresh[3],
		TopCounties:      x.top(&acc.counties, q.TopN, names.county, &acc.kept),
		TopCities:        x.top(&acc.cities, q.TopN, names.city, &acc.kept),
		TopZips:          x.top(&acc.zips, q.TopN, nil, &acc.kept),
	}
	for k, n := range acc.bySignal {
		if n > 0 {
			st.BySignal = append(st.BySignal, readmodel.ValueCount{Value: k, Count: n})
		}
	}
	sortValueCounts(st.BySignal)
	return st, nil
}

// top lists the counter's positive counts under their display names
// (names.go; nil: the key itself), count descending then name ascending,
// at most n (all when n < 0). It keeps the best n as it goes (counts are
// many, n is small) and spells only those. It consumes the counter. buf
// is scratch space, reused across calls.
func (x *leadIndex) top(c *idCounter, n int, names map[string]string, buf *[]idCountPair64) []readmodel.ValueCount {
	value := func(id uint32) string { return spell(names, x.names.str(id)) }
	before := func(a, b idCountPair64) bool {
		if a.n != b.n {
			return a.n > b.n
		}
		return value(a.id) < value(b.id)
	}
	kept := (*buf)[:0]
	defer func() { *buf = kept[:0] }()
	for _, id := range c.touched {
		cnt := c.n[id]
		c.n[id] = 0 // an id touched twice is listed once
		if cnt <= 0 {
			continue
		}
		e := idCountPair64{id: id, n: cnt}
		if n < 0 {
			kept = append(kept, e)
			continue
		}
		if len(kept) == n && (n == 0 || !before(e, kept[n-1])) {
			continue
		}
		i := sort.Search(len(kept), func(i int) bool { return before(e, kept[i]) })
		if len(kept) < n {
			kept = append(kept, idCountPair64{})
		}
		copy(kept[i+1:], kept[i:])
		kept[i] = e
	}
	if n < 0 {
		sortByLess(kept, before)
	}
	out := make([]readmodel.ValueCount, len(kept))
	for i, e := range kept {
		out[i] = readmodel.ValueCount{Value: value(e.id), Count: e.n}
	}
	return out
}

type idCountPair64 struct {
	id uint32
	n  int64
}

func sortValueCounts(v []readmodel.ValueCount) {
	slices.SortFunc(v, func(a, b readmodel.ValueCount) int {
		if a.Count != b.Count {
			return cmp.Compare(b.Count, a.Count)
		}
		return cmp.Compare(a.Value, b.Value)
	})
}
