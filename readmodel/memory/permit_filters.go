package memory

import (
	"github.com/tidwall/btree"

	"github.com/permitd/permitd/readmodel"
)

// Permit filters (readmodel.PermitFilter). The side keeps, per geo_id and
// per folded value of permit_type, work_type, status and contractor key,
// the ordered set of the geo's permits with that value (a posting list,
// ordered like the geo's own set). A filtered page is read from the
// smallest candidate set: the union of the postings of one filtered field
// (any of its values) or, when no field is filtered, the geo's own set;
// the other conditions are checked on each candidate. So a selective
// filter reads only its postings, never every permit of the geo.

type filterField uint8

const (
	ffType filterField = iota + 1
	ffWork
	ffStatus
	ffContractor
)

type fkey struct {
	geo   uint32
	field filterField
	val   string
}

// permitFilterIndex is the side's filter state: postings and the folded
// form of every symbol a filterable field holds (readers look folds up
// instead of folding per candidate).
type permitFilterIndex struct {
	postings map[fkey]treeSet
	fold     map[uint32]string // symbol -> FoldValue (type, work type, status)
	ckey     map[uint32]string // symbol -> ContractorKey
}

func newPermitFilterIndex() permitFilterIndex {
	return permitFilterIndex{postings: map[fkey]treeSet{}, fold: map[uint32]string{}, ckey: map[uint32]string{}}
}

func (s *side) foldSym(sym uint32) string {
	f, ok := s.pf.fold[sym]
	if !ok {
		f = readmodel.FoldValue(s.pi.syms.str(sym))
		s.pf.fold[sym] = f
	}
	return f
}

func (s *side) contractorSym(sym uint32) string {
	f, ok := s.pf.ckey[sym]
	if !ok {
		f = readmodel.ContractorKey(s.pi.syms.str(sym))
		s.pf.ckey[sym] = f
	}
	return f
}

// filterKeys are c's (field, value) pairs; empty values are not indexed.
func (s *side) filterKeys(c *cpermit, fn func(filterField, string)) {
	for _, kv := range [...]struct {
		f filterField
		v string
	}{{ffType, s.foldSym(c.typ)}, {ffWork, s.foldSym(c.work)}, {ffStatus, s.foldSym(c.status)}, {ffContractor, s.contractorSym(c.contractor)}} {
		if kv.v != "" {
			fn(kv.f, kv.v)
		}
	}
}

// indexFilters adds c to its postings (the side's writer).
func (s *side) indexFilters(c *cpermit) {
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty {
			continue
		}
		s.filterKeys(c, func(f filterField, v string) {
			k := fkey{l.geo, f, v}
			t, ok := s.pf.postings[k]
			if !ok {
				t = treeSet{btree.NewBTreeGOptions(pkeyLess, btree.Options{NoLocks: true, Degree: 16})}
				s.pf.postings[k] = t
			}
			t.set(c)
		})
	}
}

// unindexFilters removes c from its postings (the side's writer).
func (s *side) unindexFilters(c *cpermit) {
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty {
			continue
		}
		s.filterKeys(c, func(f filterField, v string) {
			k := fkey{l.geo, f, v}
			if t, ok := s.pf.postings[k]; ok {
				t.delete(c)
				if t.size() == 0 {
					delete(s.pf.postings, k)
				}
			}
		})
	}
}

// filterPlan is a filter in the side's terms.
type filterPlan struct {
	f     *readmodel.PermitFilter
	types map[string]bool
	works map[string]bool
	stats map[string]bool
}

func setOf(vs []string) map[string]bool {
	if len(vs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// match checks every condition of the filter on one permit (a reader).
func (s *side) match(p *filterPlan, c *cpermit) bool {
	if p.types != nil && !p.types[s.pf.fold[c.typ]] ||
		p.works != nil && !p.works[s.pf.fold[c.work]] ||
		p.stats != nil && !p.stats[s.pf.fold[c.status]] {
		return false
	}
	f := p.f
	if f.MinValuation != nil && !(c.valuation >= *f.MinValuation) { // NaN fails
		return false
	}
	if f.MaxValuation != nil && !(c.valuation <= *f.MaxValuation) {
		return false
	}
	return f.Contractor == "" || s.pf.ckey[c.contractor] == f.Contractor
}

// filteredSet picks the smallest candidate set of geo for f and wraps it
// with the filter's predicate. base is the geo's own set.
func (s *side) filteredSet(geo uint32, base permitSet, f *readmodel.PermitFilter) permitSet {
	if f.IsZero() {
		return base
	}
	p := &filterPlan{f: f, types: setOf(f.PermitTypes), works: setOf(f.WorkTypes), stats: setOf(f.Statuses)}
	best, bestSize := base, base.size()
	if geo != selfProperty {
		try := func(field filterField, vals []string) {
			if len(vals) == 0 {
				return
			}
			var sets []treeSet
			n := 0
			for _, v := range vals {
				if t, ok := s.pf.postings[fkey{geo, field, v}]; ok {
					sets = append(sets, t)
					n += t.size()
				}
			}
			if n < bestSize {
				best, bestSize = unionOf(sets), n
			}
		}
		try(ffType, f.PermitTypes)
		try(ffWork, f.WorkTypes)
		try(ffStatus, f.Statuses)
		if f.Contractor != "" {
			try(ffContractor, []string{f.Contractor})
		}
	}
	return predSet{inner: best, keep: func(c *cpermit) bool { return s.match(p, c) }}
}

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

// unionSet is the ordered union of disjoint sets (a permit has one value
// per field), merged k ways with B-tree iterators.
type unionSet []treeSet

func unionOf(sets []treeSet) permitSet {
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

func (u unionSet) ascend(pivot *cpermit, fn func(*cpermit) bool) {
	its := make([]btree.IterG[pkey], len(u))
	ok := make([]bool, len(u))
	for i, t := range u {
		its[i] = t.t.Iter()
		ok[i] = its[i].Seek(keyOf(pivot))
	}
	defer func() {
		for i := range its {
			its[i].Release()
		}
	}()
	for {
		best := -1
		for i := range its {
			if ok[i] && (best < 0 || pkeyLess(its[i].Item(), its[best].Item())) {
				best = i
			}
		}
		if best < 0 || !fn(its[best].Item().p) {
			return
		}
		ok[best] = its[best].Next()
	}
}

func (u unionSet) descend(pivot *cpermit, fn func(*cpermit) bool) {
	its := make([]btree.IterG[pkey], len(u))
	ok := make([]bool, len(u))
	pk := keyOf(pivot)
	for i, t := range u {
		its[i] = t.t.Iter()
		if its[i].Seek(pk) {
			if pkeyLess(pk, its[i].Item()) {
				ok[i] = its[i].Prev()
			} else {
				ok[i] = true
			}
		} else {
			ok[i] = its[i].Last()
		}
	}
	defer func() {
		for i := range its {
			its[i].Release()
		}
	}()
	for {
		best := -1
		for i := range its {
			if ok[i] && (best < 0 || pkeyLess(its[best].Item(), its[i].Item())) {
				best = i
			}
		}
		if best < 0 || !fn(its[best].Item().p) {
			return
		}
		ok[best] = its[best].Prev()
	}
}
