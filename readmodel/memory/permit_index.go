package memory

import (
	"math"
	"slices"
	"sort"
)

// Permit indexes. Every set of permits (those linked to one geo_id, those
// of one property) is ordered by (ik, permit_id): issue date descending,
// permit_id ascending, undated last. That is the default (desc) order of
// permit pages, read with one seek and a scan. The asc order (issue date
// ascending, permit_id ascending within a day, undated last) is read day
// by day: one seek finds the next day, one scans it. A page of 25 costs
// O(log n + 25) in desc and O(d log n + 25) in asc, d being the number of
// distinct days on the page (at most 26).

func permitLess(a, b *cpermit) bool {
	if a.ik != b.ik {
		return a.ik < b.ik
	}
	return a.id < b.id
}

// permitSet is an ordered set of permits.
type permitSet interface {
	// ascend calls fn for the items >= pivot in order until fn returns false.
	ascend(pivot *cpermit, fn func(*cpermit) bool)
	// descend calls fn for the items <= pivot in reverse order until fn
	// returns false.
	descend(pivot *cpermit, fn func(*cpermit) bool)
	size() int
	first() (*cpermit, bool)
}

// treeSet holds the permits of one geo_id (and of a filter posting, a
// text word) in a blockSet (permit_blocks.go). Items carry the permit's
// ik inline so that most comparisons need not load the permit (a cache
// miss each in a large set); only same-day ties compare ids. The other
// half of an item is the permit's slot in the side's permitSlab, not a
// pointer: 8 bytes an item, none of them scanned by the collector.
type treeSet struct{ t *blockSet }

type pkey struct {
	ik   int32
	slot uint32
}

func keyOf(c *cpermit) pkey { return pkey{c.ik, c.slot} }

func newTreeSet(slab *permitSlab) treeSet { return treeSet{newBlockSet(slab)} }

func (s treeSet) set(c *cpermit)    { s.t.set(c) }
func (s treeSet) delete(c *cpermit) { s.t.delete(c) }

// setIn adds c to t. While the side is bulk loaded (import.go) it is a
// load: appended when c sorts after every item, as permits in index
// order do, else an ordinary insert, so the result is the same in any
// order.
func (s *side) setIn(t treeSet, c *cpermit) {
	if s.pi.order.appends(c) {
		if k, ok := t.t.max(); !ok || k.slot != c.slot { // c may link twice to one geo
			t.t.appendSorted(c)
		}
		return
	}
	if s.bulk {
		t.t.load(c)
		return
	}
	t.set(c)
}

func (s treeSet) ascend(p *cpermit, fn func(*cpermit) bool)  { s.t.ascend(p, fn) }
func (s treeSet) descend(p *cpermit, fn func(*cpermit) bool) { s.t.descend(p, fn) }

func (s treeSet) size() int { return s.t.len() }

func (s treeSet) first() (*cpermit, bool) {
	k, ok := s.t.min()
	if !ok {
		return nil, false
	}
	return s.t.permit(k), true
}

// slotKeys is a short sorted list of a side's permits as keys (issue day
// and slot, as a blockSet's: 8 bytes and no pointer, so the collector
// has nothing to trace in it): the permits of a property, of a map cell,
// of a permit number, a small text posting. There are millions of these
// lists in a large store; as lists of pointers they were a large share
// of what each collection marks.
type slotKeys []pkey

// sliceSet reads a slotKeys as an ordered permit set.
type sliceSet struct {
	keys slotKeys
	slab *permitSlab // the side's: what the keys' slots name
}

func (s sliceSet) ascend(p *cpermit, fn func(*cpermit) bool) {
	for i := sort.Search(len(s.keys), func(i int) bool { return !keyBefore(s.slab, s.keys[i], p) }); i < len(s.keys); i++ {
		if !fn(s.slab.at(s.keys[i].slot)) {
			return
		}
	}
}

func (s sliceSet) descend(p *cpermit, fn func(*cpermit) bool) {
	for i := sort.Search(len(s.keys), func(i int) bool { return keyAfter(s.slab, s.keys[i], p) }) - 1; i >= 0; i-- {
		if !fn(s.slab.at(s.keys[i].slot)) {
			return
		}
	}
}

func (s sliceSet) size() int { return len(s.keys) }

func (s sliceSet) first() (*cpermit, bool) {
	if len(s.keys) == 0 {
		return nil, false
	}
	return s.slab.at(s.keys[0].slot), true
}

// insertSorted adds c (stored: it has its slot) to a sorted list,
// replacing an equal key.
func insertSorted(slab *permitSlab, l slotKeys, c *cpermit) slotKeys {
	k := keyOf(c)
	if n := len(l); n == 0 || keyBefore(slab, l[n-1], c) {
		return append(l, k) // after every item: an Import's permits come in order
	}
	i := sort.Search(len(l), func(i int) bool { return !keyBefore(slab, l[i], c) })
	if i < len(l) && !keyAfter(slab, l[i], c) {
		l[i] = k
		return l
	}
	return slices.Insert(l, i, k)
}

// removeSorted removes the item with c's key.
func removeSorted(slab *permitSlab, l slotKeys, c *cpermit) slotKeys {
	i := sort.Search(len(l), func(i int) bool { return !keyBefore(slab, l[i], c) })
	if i < len(l) && !keyAfter(slab, l[i], c) {
		l = slices.Delete(l, i, i+1)
		if len(l) == 0 {
			return nil
		}
	}
	return l
}

// latest is the issue date of the newest dated permit of a set, "" when
// none is dated.
func latest(s permitSet) string {
	c, ok := s.first()
	if !ok {
		return ""
	}
	return issueOf(c.ik)
}

// pageSpec is a permit page request in index terms.
type pageSpec struct {
	desc    bool
	lo, hi  int32 // inclusive ik bounds of dated permits (hi = -from, lo = -to)
	undated bool  // undated permits are included (no date bound given)
	after   *cpermit
	n       int // items wanted (limit + 1 to see whether more follow)
}

func newPageSpec(desc bool, fromDate, toDate string, n int) pageSpec {
	sp := pageSpec{desc: desc, lo: math.MinInt32, hi: undated - 1, undated: true, n: n}
	if fromDate != "" {
		sp.hi, sp.undated = -parseDay(fromDate), false
	}
	if toDate != "" {
		sp.lo, sp.undated = -parseDay(toDate), false
	}
	return sp
}

// page returns up to sp.n permits of set in the requested order, strictly
// after sp.after.
func page(set permitSet, sp pageSpec) []*cpermit {
	out := make([]*cpermit, 0, min(sp.n, set.size())) // size: at least what can come
	if sp.n <= 0 || sp.lo > sp.hi {
		return out
	}
	if sp.desc {
		start := &cpermit{ik: sp.lo}
		if sp.after != nil {
			start = sp.after
		}
		set.ascend(start, func(c *cpermit) bool {
			if sp.after != nil && c.ik == sp.after.ik && c.id == sp.after.id {
				return true
			}
			if c.ik > sp.hi && !(c.ik == undated && sp.undated) {
				return false
			}
			out = append(out, c)
			return len(out) < sp.n
		})
		return out
	}
	// oneDay appends the permits of one day (ik) in id order: after
	// sp.after when the page resumes inside that day.
	oneDay := func(day int32, resume bool) {
		pivot := &cpermit{ik: day}
		if resume {
			pivot = sp.after
		}
		set.ascend(pivot, func(c *cpermit) bool {
			if c.ik != day {
				return false
			}
			if resume && c.id == sp.after.id {
				return true
			}
			out = append(out, c)
			return len(out) < sp.n
		})
	}
	afterUndated := sp.after != nil && sp.after.ik == undated
	if !afterUndated {
		g := sp.hi
		if sp.after != nil {
			g = sp.after.ik
		}
		for len(out) < sp.n {
			// The next day: the largest ik <= g.
			var day int32
			found := false
			set.descend(&cpermit{ik: g + 1}, func(c *cpermit) bool {
				if c.ik <= g {
					day, found = c.ik, true
					return false
				}
				return true
			})
			if !found || day < sp.lo {
				break
			}
			oneDay(day, sp.after != nil && day == sp.after.ik)
			if day == math.MinInt32 {
				break
			}
			g = day - 1
		}
	}
	if sp.undated && len(out) < sp.n {
		oneDay(undated, afterUndated)
	}
	return out
}
