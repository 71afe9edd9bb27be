package memory

import (
	"context"
	"math"
	"slices"

	"github.com/tidwall/btree"

	"github.com/permitd/permitd/readmodel"
)

// Valuation order (readmodel.SortValuationDesc). Per geo_id the side keeps
// the geo's permits ordered by valuation descending (unknown last), then
// permit_id: a page is one seek and a scan, the filters and the date
// window checked on each permit. A geo without postings (fewer than
// postingMin permits, permit_filters.go) has no such tree either: a
// page of it, as of a property, selects its permits from the geo's own
// set in one pass (topValues).

func valueLess(a, b *cpermit) bool {
	an, bn := math.IsNaN(a.valuation), math.IsNaN(b.valuation)
	if an != bn {
		return bn
	}
	if !an && a.valuation != b.valuation {
		return a.valuation > b.valuation
	}
	return a.id < b.id
}

// valueTree is a geo's permits in valueLess order, as keys: the
// valuation inline (vkey.ord) and the permit's slot. A B-tree of permit
// pointers loaded the permit for every comparison of a seek, a cache
// miss each in a large store; a key's own ord decides all but exact
// ties of valuation, which compare the slots' abbreviated ids (abbr.go:
// one load each from the slab's arrays) and, when those say nothing,
// the ids through the slab (an id never changes for a slot, so a
// version's key is found and removed while the slot already names the
// next version: permits.go). Valuations are whole dollars, so a state's
// order holds runs of equal ones, and a seek's last steps compared ids:
// three dependent cache misses a side. No pointer: the collector does
// not trace the items.
type valueTree = *btree.BTreeG[vkey]

// vkey is a permit's key in valuation order.
type vkey struct {
	ord  uint64 // valueOrd of the valuation: ascending ord is valueLess's order
	slot uint32 // 0 only in a seek's pivot, which sorts before its ord's keys
}

// valueOrd maps a valuation to an integer whose ascending order is
// valuation descending, unknown (NaN) last; equal valuations (0 and -0
// too) map to one ord.
func valueOrd(v float64) uint64 {
	if math.IsNaN(v) {
		return math.MaxUint64
	}
	if v == 0 {
		v = 0 // -0
	}
	b := math.Float64bits(v)
	if b>>63 == 0 { // ascending unsigned order of the floats
		b |= 1 << 63
	} else {
		b = ^b
	}
	return ^b // descending
}

func vkeyOf(c *cpermit) vkey { return vkey{valueOrd(c.valuation), c.slot} }

// newValueTree makes an empty valueTree of slab's permits.
func newValueTree(slab *permitSlab) valueTree {
	return btree.NewBTreeGOptions(func(a, b vkey) bool {
		switch {
		case a.ord != b.ord:
			return a.ord < b.ord
		case a.slot == b.slot:
			return false
		case a.slot == 0: // a pivot
			return true
		case b.slot == 0:
			return false
		}
		if x, y := slab.abbrAt(a.slot), slab.abbrAt(b.slot); x != y && !x.none() && !y.none() {
			return x.less(y)
		}
		return slab.at(a.slot).id < slab.at(b.slot).id
	}, btree.Options{NoLocks: true, Degree: 32})
}

// ascendValues calls fn for the permits of t from pivot (which need not
// be stored) in valueLess order until fn returns false.
func ascendValues(t valueTree, slab *permitSlab, pivot *cpermit, fn func(*cpermit) bool) {
	ord := valueOrd(pivot.valuation)
	t.Ascend(vkey{ord: ord}, func(k vkey) bool {
		c := slab.at(k.slot)
		if k.ord == ord && c.id < pivot.id {
			return true // the pivot's valuation, before its id
		}
		return fn(c)
	})
}

func (s *side) indexValue(c *cpermit) {
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty || !s.pf.posted[l.geo] {
			continue
		}
		s.value(l.geo, c)
	}
}

// value adds c to geo's valuation order, made when missing.
func (s *side) value(geo uint32, c *cpermit) {
	t, ok := s.pf.byValue[geo]
	if !ok {
		t = newValueTree(s.pi.slab)
		s.pf.byValue[geo] = t
	}
	t.Set(vkeyOf(c))
}

func (s *side) unindexValue(c *cpermit) {
	for _, l := range s.pi.links.get(c.links) {
		s.unvalue(l.geo, c)
	}
}

// unvalue removes c from geo's valuation order, if geo has one; an order
// left empty goes.
func (s *side) unvalue(geo uint32, c *cpermit) {
	if t, ok := s.pf.byValue[geo]; ok {
		t.Delete(vkeyOf(c))
		if t.Len() == 0 {
			delete(s.pf.byValue, geo)
		}
	}
}

// topValues returns, in valueLess order, the first n permits of set
// (walked whole, in any order) that come after pivot (after: the permit
// pivot names is left out, a cursor's) and that keep keeps: a page of a
// geo without a valuation order (fewer than postingMin permits) or of a
// property. A bounded heap holds the n best so far, its worst at the
// root, so a page of a geo of m permits costs m pivot comparisons and
// about log n heap steps for the few that enter, not a sort of all m
// (a first page of 25 of a ZIP of about 1,000 permits: 58 µs, where
// sorting them all took 253 µs; BenchmarkPermitsPageSmallGeo).
func topValues(set permitSet, pivot *cpermit, after bool, n int, keep func(*cpermit) bool) []*cpermit {
	if n <= 0 {
		return nil
	}
	top := make([]*cpermit, 0, min(n, 128))
	down := func(i int) { // restore the heap below i: each parent sorts after its children
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < len(top) && valueLess(top[w], top[l]) {
				w = l
			}
			if r < len(top) && valueLess(top[w], top[r]) {
				w = r
			}
			if w == i {
				return
			}
			top[i], top[w] = top[w], top[i]
			i = w
		}
	}
	set.ascend(&cpermit{ik: minIK}, func(c *cpermit) bool {
		if valueLess(c, pivot) || after && c.id == pivot.id && !valueLess(pivot, c) {
			return true // before the pivot, or the cursor's own permit
		}
		if len(top) == n && !valueLess(c, top[0]) || !keep(c) {
			return true
		}
		if len(top) < n {
			top = append(top, c)
			for i := len(top) - 1; i > 0; { // up
				p := (i - 1) / 2
				if !valueLess(top[p], top[i]) {
					break
				}
				top[p], top[i] = top[i], top[p]
				i = p
			}
			return true
		}
		top[0] = c
		down(0)
		return true
	})
	slices.SortFunc(top, func(a, b *cpermit) int {
		if valueLess(a, b) {
			return -1
		}
		return 1 // ids differ: never equal
	})
	return top
}

// valuationHits is permitHits in valuation order.
func (s *side) valuationHits(_ context.Context, q *readmodel.PermitQuery, n int) ([]geoHit, uint32, error) {
	lo, hi := int32(math.MinInt32), int32(undated)
	if q.FromDate != "" {
		hi = -parseDay(q.FromDate)
	}
	if q.ToDate != "" {
		lo = -parseDay(q.ToDate)
	}
	inWindow := func(c *cpermit) bool {
		if q.FromDate == "" && q.ToDate == "" {
			return true
		}
		return c.ik != undated && c.ik >= lo && c.ik <= hi
	}
	base, geo, err := s.geoSet(q.Geo)
	if err != nil {
		return nil, 0, err
	}
	if base == nil {
		return nil, geo, nil
	}
	keep := s.filteredSet(geo, base, &q.Filter)
	pred, ok := keep.(predSet)
	check := func(c *cpermit) bool { return inWindow(c) && (!ok || pred.keep(c)) }
	if _, empty := keep.(sliceSet); empty && keep.size() == 0 {
		return nil, geo, nil
	}
	pivot := &cpermit{valuation: math.Inf(1)}
	if q.After != nil {
		pivot = &cpermit{valuation: math.NaN(), id: q.After.PermitID}
		if q.After.HasValuation {
			pivot.valuation = q.After.Valuation
		}
	}
	var hits []geoHit
	t := s.pf.byValue[geo]
	if t == nil || q.Geo.IsProperty() { // a property's few permits, or a geo's fewer than postingMin (permit_filters.go)
		// The smallest candidate set, its predicate checked only for a
		// permit that would enter the page so far.
		walk := keep
		if ok {
			walk = pred.inner
		}
		for _, c := range topValues(walk, pivot, q.After != nil, n, check) {
			hits = append(hits, geoHit{c: c})
		}
		return hits, geo, nil
	}
	ascendValues(t, s.pi.slab, pivot, func(c *cpermit) bool {
		if q.After != nil && c.id == pivot.id && !valueLess(c, pivot) && !valueLess(pivot, c) {
			return true
		}
		if check(c) {
			hits = append(hits, geoHit{c: c})
		}
		return len(hits) < n
	})
	return hits, geo, nil
}
