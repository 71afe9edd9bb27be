package memory

import (
	"math"
	"slices"

	"github.com/permitd/permitd/readmodel"
)

// Permit filters (readmodel.PermitFilter). The side keeps, per geo_id and
// per folded value of permit_type, work_type, status, contractor key and
// valuation bucket (powers of two),
// the ordered set of the geo's permits with that value (a posting list,
// ordered like the geo's own set). A filtered page is read from the
// smallest candidate set: the union of the postings of one filtered field
// (any of its values) or, when no field is filtered, the geo's own set;
// the other conditions are checked on each candidate. So a selective
// filter reads only its postings, never every permit of the geo. A value
// held by more than a quarter of the geo's permits has a dense posting,
// a count without keys (permit_dense.go): its field is then no candidate
// set, as reading the geo's own set costs at most a few candidates a hit.
//
// A geo keeps postings (and its valuation order, permit_sort.go) only
// once it has held postingMin permits: below that, a page reads the
// geo's own set with the predicate, while postings and the order would
// cost about six ordered-set inserts per link of every permit written,
// each a few cache misses in a large store. On the real mix most links
// are to ZIPs, cities and jurisdictions of a few dozen to a few hundred
// permits. The threshold is 1,024 (it was 128): a store of 5M generated
// permits holds a fifth of its ZIPs and a tenth of its cities between
// the two, which take more than half of its permits' ZIP links, and the
// mix's round into it went from 13,324 events/s (128) to 15,825 and
// 16,777 (BenchmarkIngestMixFullStore), its heap 0.9 GB smaller. The
// price is on reads of those geos only: a filtered first page of 25 of a
// ZIP of about 1,000 permits costs about 31 to 36 µs without postings
// against 24 to 29 µs with them (one that matches nothing reads the whole
// set: 31 µs against 1 µs), a valuation_desc one 65 µs against 28 µs
// (BenchmarkPermitsPageSmallGeo): well inside a page's budget. The
// postings of a geo that reaches postingMin are built from its set at
// once, in order, and kept until the geo holds no permit.

type filterField uint8

const (
	ffType filterField = iota + 1
	ffWork
	ffStatus
	ffContractor
	ffValue // valuation bucket (valueBucket)
)

// valueBuckets is the number of valuation buckets: 0 for < 1, then one
// per power of two (bucket b holds [2^(b-1), 2^b)), the last open-ended.
const valueBuckets = 48

// postingMin is the number of permits from which a geo keeps postings.
var postingMin = 1024

func valueBucket(v float64) int {
	if v < 1 {
		return 0
	}
	return min(valueBuckets-1, 1+int(math.Floor(math.Log2(v))))
}

// fkey names a posting: the geo, the field and the value's id (valID:
// a fold or contractor key, or for ffValue the bucket). An id instead
// of the value's string makes the key 12 bytes that hash and compare
// as words: a permit written into a large store looks up about twenty
// postings, and hashing and comparing their strings cost more than the
// map's own probes.
type fkey struct {
	geo   uint32
	field filterField
	val   uint32
}

// permitFilterIndex is the side's filter state: postings and the folded
// form of every symbol a filterable field holds (readers look folds up
// instead of folding per candidate).
type permitFilterIndex struct {
	postings *postingTable          // kept and dense (permit_dense.go; permit_posting_table.go)
	posted   map[uint32]bool        // geos with postings (postingMin)
	dense    map[uint32][]fkey      // a posted geo's dense postings
	fold     map[uint32]string      // symbol -> FoldValue (type, work type, status)
	ckey     map[uint32]string      // symbol -> ContractorKey
	foldID   map[uint32]uint32      // symbol -> valID of its FoldValue
	ckeyID   map[uint32]uint32      // symbol -> valID of its ContractorKey
	vals     map[string]uint32      // a fold or contractor key -> its valID (1 on; "" is 0, not indexed)
	text     textIndex              // permit_text.go
	byValue  map[uint32]*valueOrder // permit_sort.go
	cells    map[cellKey]slotKeys   // permit_geo.go
	months   monthIndex             // permit_monthly.go
	// The postings and the geos due a density check after the batch
	// (permit_dense.go): the postings lane's and the main lane's.
	postCheck []fkey
	geoCheck  []uint32
}

func newPermitFilterIndex() permitFilterIndex {
	return permitFilterIndex{postings: newPostingTable(), posted: map[uint32]bool{}, dense: map[uint32][]fkey{}, fold: map[uint32]string{}, ckey: map[uint32]string{}, foldID: map[uint32]uint32{}, ckeyID: map[uint32]uint32{}, vals: map[string]uint32{}, text: newTextIndex(), byValue: map[uint32]*valueOrder{}, cells: map[cellKey]slotKeys{}, months: monthIndex{}}
}

// foldSymID is the valID of the symbol's FoldValue (0 for an empty
// one), and contractorSymID of its ContractorKey. Each computes the
// string (kept in pf.fold or pf.ckey, which readers look up) and its id
// once per symbol.
func (s *side) foldSymID(sym uint32) uint32 {
	return s.symValID(s.pf.foldID, s.pf.fold, sym, readmodel.FoldValue)
}

func (s *side) contractorSymID(sym uint32) uint32 {
	return s.symValID(s.pf.ckeyID, s.pf.ckey, sym, readmodel.ContractorKey)
}

func (s *side) symValID(ids map[uint32]uint32, memo map[uint32]string, sym uint32, key func(string) string) uint32 {
	id, ok := ids[sym]
	if !ok {
		id = s.valID(s.keyOf(memo, sym, key))
		ids[sym] = id
	}
	return id
}

// valID is v's id, given at its first sight (0 for "").
func (s *side) valID(v string) uint32 {
	if v == "" {
		return 0
	}
	id, ok := s.pf.vals[v]
	if !ok {
		id = uint32(len(s.pf.vals) + 1)
		s.pf.vals[v] = id
	}
	return id
}

// keyOf is key(the symbol's string), computed once per symbol and kept
// in memo.
func (s *side) keyOf(memo map[uint32]string, sym uint32, key func(string) string) string {
	f, ok := memo[sym]
	if !ok {
		f = key(s.pi.syms.str(sym))
		memo[sym] = f
	}
	return f
}

// fieldValue is one (field, value) pair of a permit's postings.
type fieldValue struct {
	f filterField
	v uint32 // valID, or the bucket of ffValue
}

// filterKeys are c's (field, value) pairs, in kvs[:n]; empty values are
// not indexed. They are the same for every geo c is linked to, so the
// callers fold them once per permit.
func (s *side) filterKeys(c *cpermit, kvs *[5]fieldValue) (n int) {
	for _, kv := range [...]fieldValue{{ffType, s.foldSymID(c.typ)}, {ffWork, s.foldSymID(c.work)}, {ffStatus, s.foldSymID(c.status)}, {ffContractor, s.contractorSymID(c.contractor)}} {
		if kv.v != 0 {
			kvs[n] = kv
			n++
		}
	}
	if !math.IsNaN(c.valuation) {
		kvs[n] = fieldValue{ffValue, uint32(valueBucket(c.valuation))}
		n++
	}
	return n
}

// indexFilters adds c to its postings (the side's writer); c is in its
// geos' sets already (indexPermit). While an Import defers them
// (deferGeo, permit_bulk.go), the per-geo indexes (postings, valuation
// order, month stats) are left to buildGeoIndexes.
func (s *side) indexFilters(c *cpermit) {
	if s.lean { // no text or cell index until buildLean (permit_bulk.go)
		s.descWords(c.desc) // what textMatch reads
	} else {
		s.indexText(c)
		s.indexCell(c)
	}
	if s.lanes { // postings, valuation orders and month stats: the other lanes' (permit_lanes.go)
		s.markPosted(c, true)
		return
	}
	var kvs [5]fieldValue
	kv := kvs[:s.filterKeys(c, &kvs)] // also caches the folds readers look up (match)
	if s.deferGeo {
		return
	}
	var gbuf [16]uint32
	geos := gbuf[:0] // once each: c may link twice to one geo, and a dense posting counts
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty || slices.Contains(geos, l.geo) {
			continue
		}
		geos = append(geos, l.geo)
		if !s.pf.posted[l.geo] {
			if t, ok := s.pi.geoIdx[l.geo]; ok && t.size() >= postingMin && !s.lean { // a lean side gets them all at once (permit_bulk.go)
				s.buildPostings(l.geo, t) // c included
			}
			continue
		}
		for _, x := range kv {
			k := fkey{l.geo, x.f, x.v}
			t := s.posting(k)
			if t.t.dense {
				t.t.count(true)
			} else {
				s.setIn(t, c)
			}
			s.duePosting(k, t.t)
		}
	}
	s.indexValue(c)
	s.indexMonthly(c, true)
}

// buildPostings gives geo, whose set t has reached postingMin, the
// postings of its permits (walked in index order, so each posting's
// B-tree is filled by appending: Load), dense ones as counts
// (permit_dense.go), and its valuation order (permit_sort.go).
func (s *side) buildPostings(geo uint32, t treeSet) {
	s.pf.posted[geo] = true
	n := t.size()
	var kvs [5]fieldValue
	counts := map[fieldValue]int{}
	t.t.scan(func(k pkey) bool {
		for _, x := range kvs[:s.filterKeys(t.t.permit(k), &kvs)] {
			counts[x]++
		}
		return true
	})
	t.t.scan(func(k pkey) bool { // in order: each posting is appended to
		for _, x := range kvs[:s.filterKeys(t.t.permit(k), &kvs)] {
			if !isDense(counts[x], n) {
				s.posting(fkey{geo, x.f, x.v}).t.push(k)
			}
		}
		return true
	})
	for x, m := range counts {
		k := fkey{geo, x.f, x.v}
		if isDense(m, n) {
			s.pf.postings.put(k, treeSet{denseSet(s.pi.slab, m, n)})
			s.pf.dense[geo] = append(s.pf.dense[geo], k)
		} else {
			t, _ := s.pf.postings.get(k)
			t.t.setMark(n)
		}
	}
	s.buildValueOrder(geo, t)
}

// buildValueOrder makes geo's valuation order from its set t.
func (s *side) buildValueOrder(geo uint32, t treeSet) {
	vs := make([]valued, 0, t.size())
	t.t.scan(func(k pkey) bool {
		c := t.t.permit(k)
		vs = append(vs, valued{vkey: vkeyOf(c), c: c})
		return true
	})
	slices.SortFunc(vs, valuedCmp)
	s.pf.byValue[geo], _ = valueOrderOfSorted(s.pi.slab, vs, nil)
}

// posting returns the posting of k, made empty when missing.
func (s *side) posting(k fkey) treeSet {
	t, ok := s.pf.postings.get(k)
	if !ok {
		t = newTreeSet(s.pi.slab)
		s.pf.postings.put(k, t)
	}
	return t
}

// unpost removes c from geo's postings of its (field, value) pairs kv; a
// posting left empty goes.
func (s *side) unpost(geo uint32, kv []fieldValue, c *cpermit) {
	for _, x := range kv {
		k := fkey{geo, x.f, x.v}
		if t, ok := s.pf.postings.get(k); ok {
			if t.t.dense {
				t.t.count(false)
			} else {
				t.delete(c)
			}
			s.duePosting(k, t.t)
		}
	}
	s.dropEmptyPostings(geo, kv)
}

// dropEmptyPostings removes geo's postings of kv that hold no permit.
func (s *side) dropEmptyPostings(geo uint32, kv []fieldValue) {
	for _, x := range kv {
		k := fkey{geo, x.f, x.v}
		if t, ok := s.pf.postings.get(k); ok && t.size() == 0 {
			s.pf.postings.del(k)
			if t.t.dense {
				s.undense(k)
			}
		}
	}
}

// unindexFilters removes c from its postings (the side's writer).
func (s *side) unindexFilters(c *cpermit) {
	if s.lanes { // postings, valuation orders and month stats: the other lanes' (permit_lanes.go)
		s.markPosted(c, false)
		s.unindexText(c)
		s.unindexCell(c)
		return
	}
	var kvs [5]fieldValue
	kv := kvs[:s.filterKeys(c, &kvs)]
	var gbuf [16]uint32
	geos := gbuf[:0] // once each, as indexFilters counts
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty || !s.pf.posted[l.geo] || slices.Contains(geos, l.geo) {
			continue
		}
		geos = append(geos, l.geo)
		if _, ok := s.pi.geoIdx[l.geo]; !ok {
			delete(s.pf.posted, l.geo) // c was its last permit (unindexPermit)
		}
		s.unpost(l.geo, kv, c)
	}
	if !s.lean {
		s.unindexText(c)
		s.unindexCell(c)
	}
	s.unindexValue(c)
	s.indexMonthly(c, false)
}

// filterPlan is a filter in the side's terms.
type filterPlan struct {
	f     *readmodel.PermitFilter
	text  *readmodel.TextQuery // nil without q
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

// planOf prepares f for match.
func (s *side) planOf(f *readmodel.PermitFilter) *filterPlan {
	p := &filterPlan{f: f, types: setOf(f.PermitTypes), works: setOf(f.WorkTypes), stats: setOf(f.Statuses)}
	if f.Text != "" {
		tq := readmodel.ParseText(f.Text)
		p.text = &tq
	}
	return p
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
	if f.Contractor != "" && s.pf.ckey[c.contractor] != f.Contractor {
		return false
	}
	if f.HasGeometry() && !s.geoMatch(f, c) {
		return false
	}
	return p.text == nil || s.textMatch(f.Text, p.text, c)
}

// filteredSet picks the smallest candidate set of geo for f and wraps it
// with the filter's predicate. base is the geo's own set.
func (s *side) filteredSet(geo uint32, base permitSet, f *readmodel.PermitFilter) permitSet {
	if f.IsZero() {
		return base
	}
	p := s.planOf(f)
	best, bestSize := base, base.size()
	global := false // best spans every geo: check the link
	if p.text != nil {
		tq := *p.text
		if geo != selfProperty {
			if set, n := s.textCandidates(f.Text, &tq, bestSize); n >= 0 {
				best, bestSize, global = set, n, true
			}
		}
	}
	if geo != selfProperty && s.pf.posted[geo] {
		// try the postings of field for ids (of values filtered on): an
		// empty list filters nothing; a value never seen has no posting.
		try := func(field filterField, ids []uint32) {
			if len(ids) == 0 {
				return
			}
			var sets []iterable
			n := 0
			for _, v := range ids {
				if t, ok := s.pf.postings.get(fkey{geo, field, v}); ok {
					if t.t.dense {
						return // not a candidate set (permit_dense.go)
					}
					sets = append(sets, t)
					n += t.size()
				}
			}
			if n < bestSize {
				best, bestSize, global = unionOf(sets), n, false
			}
		}
		tryVals := func(field filterField, vals []string) {
			ids := make([]uint32, len(vals))
			for i, v := range vals {
				ids[i] = s.pf.vals[v] // 0 (no posting) when never seen
			}
			try(field, ids)
		}
		tryVals(ffType, f.PermitTypes)
		tryVals(ffWork, f.WorkTypes)
		tryVals(ffStatus, f.Statuses)
		if f.Contractor != "" {
			tryVals(ffContractor, []string{f.Contractor})
		}
		if f.MinValuation != nil || f.MaxValuation != nil {
			lo, hi := 0, valueBuckets-1
			if f.MinValuation != nil {
				lo = valueBucket(*f.MinValuation)
			}
			if f.MaxValuation != nil {
				hi = valueBucket(*f.MaxValuation)
			}
			if lo <= hi {
				ids := make([]uint32, 0, hi-lo+1)
				for b := lo; b <= hi; b++ {
					ids = append(ids, uint32(b))
				}
				try(ffValue, ids)
			}
		}
	}
	if bestSize == 0 {
		return sliceSet{}
	}
	return predSet{inner: best, keep: func(c *cpermit) bool {
		return (!global || s.linked(c, geo)) && s.match(p, c)
	}}
}

// geoMatch checks near and bbox on one permit.
func (s *side) geoMatch(f *readmodel.PermitFilter, c *cpermit) bool {
	if math.IsNaN(c.lat) || math.IsNaN(c.lon) {
		return false
	}
	if f.BBox != nil && !f.BBox.Contains(c.lat, c.lon) {
		return false
	}
	return f.Near == nil || readmodel.DistanceM(*f.Near, readmodel.GeoPoint{Lat: c.lat, Lon: c.lon}) <= f.RadiusM
}
