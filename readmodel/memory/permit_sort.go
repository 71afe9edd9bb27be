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
// postingMin permits, permit_filters.go) has no such order either: a
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

// valueOrder is a geo's permits in valueLess order, in two parts:
//
//   - blocks: the permits whose valuation is exact (valueIK: a whole
//     number of dollars of at most maxExactValue either way, or
//     unknown), in a block set (permit_blocks.go) whose key's ik is the
//     valueIK. Keys of one ik hold equal valuations, so they tie as a
//     day's keys do in a geo's set, on the ids (abbreviated first:
//     abbr.go), and a permit's write seeks its geos' orders in lock
//     step as it seeks its geos' sets (writeAll). Valuations are whole
//     dollars in nearly every source record we have (gen rounds them;
//     15 of the bundled city's 14,425 have cents), so this part holds
//     nearly every permit;
//   - odd: the others (cents, or beyond maxExactValue), in a B-tree of
//     their valuation's full ord (valueTree), made when the first comes.
//
// A walk merges the two parts (ascend). The parts are the permit's
// valuation's, fixed for a version: a new version's valuation may move
// the permit from one part to the other, as its old key goes and its
// new one comes. A key is found and removed while its slot already
// names the next version (permits.go): both parts order a tie of
// valuations on the ids, which never change for a slot, and never on a
// valuation read through the slab.
//
// BenchmarkIngestMixFullStore's round into 5M permits took 3.6
// CPU-seconds in the B-trees that held every permit before, each seek a
// chain of a node's misses, one tree after another: 3.2 more than the
// same round into an empty store.
type valueOrder struct {
	blocks *blockSet
	odd    valueTree
}

func newValueOrder(slab *permitSlab) *valueOrder {
	return &valueOrder{blocks: &blockSet{slab: slab, byValue: true}}
}

// maxExactValue is the largest magnitude of a valuation of the blocks.
const maxExactValue = math.MaxInt32 - 1

// exactValue reports whether v is a block key's valuation: a whole
// number of at most maxExactValue either way, or unknown (NaN).
func exactValue(v float64) bool {
	return math.IsNaN(v) || v == math.Trunc(v) && math.Abs(v) <= maxExactValue
}

// valueIK is the ik of an exact valuation v in a valuation order's
// blocks: ascending ik is valuation descending, unknown last (0 and -0
// are one).
func valueIK(v float64) int32 {
	if math.IsNaN(v) {
		return math.MaxInt32
	}
	return int32(-v)
}

// blockPivot is the pivot of a walk of the blocks from pivot: pivot
// itself when its valuation is exact, else a pivot before every key of
// the largest exact valuation after pivot's (valueLess), or of the
// unknown ones.
func blockPivot(pivot *cpermit) *cpermit {
	v := pivot.valuation
	if exactValue(v) {
		return pivot
	}
	switch f := math.Floor(v); {
	case f > maxExactValue: // +Inf too
		return &cpermit{valuation: maxExactValue}
	case f < -maxExactValue: // -Inf too
		return &cpermit{valuation: math.NaN()}
	default:
		return &cpermit{valuation: f}
	}
}

func (o *valueOrder) len() int {
	n := o.blocks.len()
	if o.odd != nil {
		n += o.odd.Len()
	}
	return n
}

// set adds c, one at a time (writeAll writes the blocks of many orders
// together: laneValues).
func (o *valueOrder) set(c *cpermit) {
	if exactValue(c.valuation) {
		o.blocks.set(c)
		return
	}
	o.setOdd(c)
}

func (o *valueOrder) setOdd(c *cpermit) {
	if o.odd == nil {
		o.odd = newValueTree(o.blocks.slab)
	}
	o.odd.Set(vkeyOf(c))
}

// delete removes c's key, if held.
func (o *valueOrder) delete(c *cpermit) {
	if exactValue(c.valuation) {
		o.blocks.delete(c)
		return
	}
	o.deleteOdd(c)
}

func (o *valueOrder) deleteOdd(c *cpermit) {
	if o.odd != nil {
		o.odd.Delete(vkeyOf(c))
		if o.odd.Len() == 0 {
			o.odd = nil
		}
	}
}

// ascend calls fn for the permits of o from pivot (which need not be
// stored) in valueLess order until fn returns false: the blocks' walk
// and the odd ones' merged.
func (o *valueOrder) ascend(pivot *cpermit, fn func(*cpermit) bool) {
	it := blockIter{s: o.blocks}
	ok := it.seekGE(blockPivot(pivot))
	if o.odd != nil {
		stopped := false
		ascendValues(o.odd, o.blocks.slab, pivot, func(c *cpermit) bool {
			for ; ok; ok = it.next() {
				b := it.item()
				if !valueLess(b, c) {
					break
				}
				if !fn(b) {
					stopped = true
					return false
				}
			}
			if !fn(c) {
				stopped = true
				return false
			}
			return true
		})
		if stopped {
			return
		}
	}
	for ; ok; ok = it.next() {
		if !fn(it.item()) {
			return
		}
	}
}

// valueTree is the odd part of a valuation order, as keys: the
// valuation inline (vkey.ord) and the permit's slot. Exact ties of
// valuation compare the slots' abbreviated ids (abbr.go) and, when
// those say nothing, the ids through the slab (an id never changes for
// a slot). No pointer: the collector does not trace the items.
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

// valueOrderOf returns geo's valuation order, made when missing if
// create is set, else nil.
func (s *side) valueOrderOf(geo uint32, create bool) *valueOrder {
	o, ok := s.pf.byValue[geo]
	if !ok && create {
		o = newValueOrder(s.pi.slab)
		s.pf.byValue[geo] = o
	}
	return o
}

// value adds c to geo's valuation order, made when missing.
func (s *side) value(geo uint32, c *cpermit) {
	s.valueOrderOf(geo, true).set(c)
}

func (s *side) unindexValue(c *cpermit) {
	for _, l := range s.pi.links.get(c.links) {
		s.unvalue(l.geo, c)
	}
}

// unvalue removes c from geo's valuation order, if geo has one; an order
// left empty goes.
func (s *side) unvalue(geo uint32, c *cpermit) {
	if o := s.valueOrderOf(geo, false); o != nil {
		o.delete(c)
		if o.len() == 0 {
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
	o := s.pf.byValue[geo]
	if o == nil || q.Geo.IsProperty() { // a property's few permits, or a geo's fewer than postingMin (permit_filters.go)
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
	o.ascend(pivot, func(c *cpermit) bool {
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
