package memory

import (
	"context"
	"math"
	"sort"

	"github.com/tidwall/btree"

	"github.com/permitd/permitd/readmodel"
)

// Valuation order (readmodel.SortValuationDesc). Per geo_id the side keeps
// the geo's permits ordered by valuation descending (unknown last), then
// permit_id: a page is one seek and a scan, the filters and the date
// window checked on each permit. A geo without postings (fewer than
// postingMin permits, permit_filters.go) has no such tree either: its
// few permits are sorted when read, as a property's are.

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
// ties of valuation, which compare ids through the slab (an id never
// changes for a slot, so a version's key is found and removed while the
// slot already names the next version: permits.go). No pointer: the
// collector does not trace the items.
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

// sortedWalk sorts ps (the caller's own) in valuation order and walks it
// from a pivot.
func sortedWalk(ps []*cpermit) func(pivot *cpermit, fn func(*cpermit) bool) {
	sorted := ps
	sort.Slice(sorted, func(i, j int) bool { return valueLess(sorted[i], sorted[j]) })
	return func(pivot *cpermit, fn func(*cpermit) bool) {
		for _, c := range sorted[sort.Search(len(sorted), func(i int) bool { return !valueLess(sorted[i], pivot) }):] {
			if !fn(c) {
				return
			}
		}
	}
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
	var walk func(pivot *cpermit, fn func(*cpermit) bool)
	if t := s.pf.byValue[geo]; t != nil && !q.Geo.IsProperty() {
		walk = func(pivot *cpermit, fn func(*cpermit) bool) { ascendValues(t, s.pi.slab, pivot, fn) }
	} else { // a property's few permits, or a geo's fewer than postingMin (permit_filters.go)
		var all []*cpermit
		base.ascend(&cpermit{ik: minIK}, func(c *cpermit) bool { all = append(all, c); return true })
		walk = sortedWalk(all)
	}
	keep := s.filteredSet(geo, base, &q.Filter)
	pred, ok := keep.(predSet)
	check := func(c *cpermit) bool { return !ok || pred.keep(c) }
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
	walk(pivot, func(c *cpermit) bool {
		if q.After != nil && c.id == pivot.id && !valueLess(c, pivot) && !valueLess(pivot, c) {
			return true
		}
		if inWindow(c) && check(c) {
			hits = append(hits, geoHit{c: c})
		}
		return len(hits) < n
	})
	return hits, geo, nil
}
