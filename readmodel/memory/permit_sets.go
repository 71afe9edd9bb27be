package memory

import (
	"sort"
)

// The ordered permit sets a page reads besides a geo's own set (tree or
// slice): a set filtered by a predicate (a filtered page's candidates),
// and the k-way union of sets (a filter field's postings, a text word's
// postings and description groups), with the iterators the union walks.

// predSet is the items of inner that keep accepts.
type predSet struct {
	inner permitSet
	keep  func(*cpermit) bool
}

func (p predSet) ascend(pivot *cpermit, fn func(*cpermit) bool) {
	p.inner.ascend(pivot, func(c *cpermit) bool { return !p.keep(c) || fn(c) })
}

func (p predSet) descend(pivot *cpermit, fn func(*cpermit) bool) {
	p.inner.descend(pivot, func(c *cpermit) bool { return !p.keep(c) || fn(c) })
}

func (p predSet) size() int { return p.inner.size() } // an upper bound

func (p predSet) first() (*cpermit, bool) {
	var out *cpermit
	p.ascend(&cpermit{ik: minIK}, func(c *cpermit) bool { out = c; return false })
	return out, out != nil
}

const minIK = -1 << 31

// setIter walks an ordered set from a position.
type setIter interface {
	seekGE(p *cpermit) bool // first item >= p
	seekLE(p *cpermit) bool // last item <= p
	next() bool
	prev() bool
	item() *cpermit
	release()
}

// iterable is an ordered set that hands out iterators.
type iterable interface {
	permitSet
	iter() setIter
}

func (s treeSet) iter() setIter { return &blockIter{s: s.t} }

type sliceIter struct {
	s sliceSet
	i int
}

func (s sliceSet) iter() setIter { return &sliceIter{s: s} }

func (t *sliceIter) seekGE(p *cpermit) bool {
	k := t.s.keys
	t.i = sort.Search(len(k), func(i int) bool { return !keyBefore(t.s.slab, k[i], p) })
	return t.i < len(k)
}
func (t *sliceIter) seekLE(p *cpermit) bool {
	k := t.s.keys
	t.i = sort.Search(len(k), func(i int) bool { return keyAfter(t.s.slab, k[i], p) }) - 1
	return t.i >= 0
}
func (t *sliceIter) next() bool     { t.i++; return t.i < len(t.s.keys) }
func (t *sliceIter) prev() bool     { t.i--; return t.i >= 0 }
func (t *sliceIter) item() *cpermit { return t.s.slab.at(t.s.keys[t.i].slot) }
func (t *sliceIter) release()       {}

// unionSet is the ordered union of sets, merged k ways; an item in
// several sets is given once.
type unionSet []iterable

func unionOf(sets []iterable) permitSet {
	if len(sets) == 1 {
		return sets[0]
	}
	return unionSet(sets)
}

func (u unionSet) size() int {
	n := 0
	for _, t := range u {
		n += t.size()
	}
	return n
}

func (u unionSet) first() (*cpermit, bool) {
	var out *cpermit
	u.ascend(&cpermit{ik: minIK}, func(c *cpermit) bool { out = c; return false })
	return out, out != nil
}

func (u unionSet) walk(pivot *cpermit, fn func(*cpermit) bool, asc bool) {
	its := make([]setIter, len(u))
	ok := make([]bool, len(u))
	for i, t := range u {
		its[i] = t.iter()
		if asc {
			ok[i] = its[i].seekGE(pivot)
		} else {
			ok[i] = its[i].seekLE(pivot)
		}
	}
	defer func() {
		for _, it := range its {
			it.release()
		}
	}()
	var last *cpermit
	for {
		best := -1
		for i := range its {
			if !ok[i] {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			a, b := its[i].item(), its[best].item()
			if asc && permitLess(a, b) || !asc && permitLess(b, a) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		c := its[best].item()
		if c != last {
			if !fn(c) {
				return
			}
			last = c
		}
		if asc {
			ok[best] = its[best].next()
		} else {
			ok[best] = its[best].prev()
		}
	}
}

func (u unionSet) ascend(pivot *cpermit, fn func(*cpermit) bool)  { u.walk(pivot, fn, true) }
func (u unionSet) descend(pivot *cpermit, fn func(*cpermit) bool) { u.walk(pivot, fn, false) }
