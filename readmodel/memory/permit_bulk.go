package memory

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// An Import's side defers the permit indexes that are per geo_id and
// derived from the geo's own set (filter postings, valuation order, month
// stats: permit_filters.go, permit_sort.go, permit_monthly.go) while it
// loads, then builds them in one pass per geo (buildGeoIndexes): the
// geo's permits, already in index order, append to their postings; the
// valuation order and each month's valuations are sorted once and
// appended. Per permit that is a few slice appends instead of a few
// dozen map lookups and B-tree inserts. The result is the state the
// per-permit path builds, in any order of the permits.
//
// Postings and the valuation order follow the postingMin rule
// (permit_filters.go): only a geo that ends the load with postingMin
// permits or more gets them (and is posted); a smaller one is read from
// its own set, and gets them from Apply when it reaches postingMin. Month
// stats are built for every geo.

// While the indexes are deferred the side has no permit sets either
// (pi.geoIdx): indexPermit appends each permit to its geos' lists
// (geoLists, a slice per geo symbol: an append where a B-tree Load
// walked a cold tree), and the build makes each geo's set from its list
// with the rest. The lists and the sets belong to the build while it
// runs (geoBuild): the side hands the lists over and gets the sets back
// only from the build's wait, so a permit indexed in between finds no
// lists (a nil *geoLists, a panic at its first link) and never a set
// the build is still making.

// geoLists are the permits of each geo while the geo indexes are
// deferred, by geo symbol, in the order indexed.
type geoLists struct {
	lists [][]*cpermit
	geos  int // lists that are not empty
	// sorted: the permits were indexed in index order (indexOrder), so
	// each list is sorted as it is, a permit linked twice to the geo
	// being in it twice in a row.
	sorted bool
}

// geoListFirst is the capacity of a geo's first list: most geos (ZIPs,
// cities) hold a few permits, and a list grown from one took four
// allocations for eight (BenchmarkHandleMix: 11.28 allocations an event
// with lists from one, 11.18 with 8, 11.15 with 32 at more bytes).
const geoListFirst = 8

func (g *geoLists) add(geo uint32, c *cpermit) {
	if int(geo) >= len(g.lists) {
		n := max(int(geo)+1, 2*len(g.lists), 1024)
		g.lists = append(g.lists, make([][]*cpermit, n-len(g.lists))...)
	}
	l := g.lists[geo]
	if l == nil {
		g.geos++
		l = make([]*cpermit, 0, geoListFirst)
	}
	g.lists[geo] = append(l, c)
}

// deferGeoIndexes starts the deferral on a new side (bulkSide).
func (s *side) deferGeoIndexes() {
	s.deferGeo = true
	s.pi.deferred = &geoLists{}
}

// geoBuild is a build of the deferred indexes, perhaps in the background.
// It holds the side's permit lists from its start and makes the side's
// permit sets: wait is the one way they reach the side.
//
// Geos are independent, so up to four builders (workersFor) share them,
// each taking the next geo not taken yet; each has its own output maps
// but the first's, which are the side's, and wait merges the others'.
// The side's deferred indexes are empty until then (deferral starts on a
// new side, and ends before a permit leaves a geo set: unindexPermit).
// All but one start with the build and run in the background; the
// goroutine that waits is the last (wait works before it waits). An
// Import's build runs beside the Import's own stages, which keep the
// other cores busy until they wait for it: on 2 cores one builder ran
// on while the stages took the properties, and the second only once they
// were done (until then the two builders and the stages shared the cores,
// and the stages' last stretch ran on one core alone).
type geoBuild struct {
	v     *side // the view the builders read; the first writes through it
	lists *geoLists
	geos  []uint32
	sets  []treeSet
	next  atomic.Int64 // the next index into geos to build
	parts geoParts     // what the build makes

	mu      sync.Mutex
	bs      []*geoBuilder // the builders so far, the side's own first
	most    int           // builders at most
	workers sync.WaitGroup
}

// startGeoBuild builds the deferred indexes of s in the background, on
// v, a view of s whose maps are s's own (importStages.view) or s itself:
// what the build reads (the permits, their folds, the lists) no other
// write changes until wait, and what it writes (postings, valuation
// orders, month stats) no other write reads. The lists are the build's
// from now on. The folds the builders read were cached as the permits
// were indexed (indexFilters), so the side is only read while they run.
// With parts geoSets the build makes the permit sets alone: the side is
// then lean (side.lean, below) until buildLean gives it the rest.
func (s *side) startGeoBuild(v *side, parts geoParts) *geoBuild {
	lists := s.pi.deferred
	s.pi.deferred, v.pi.deferred = nil, nil
	lists.sorted = s.pi.order.sorted
	return newGeoBuild(v, lists, parts)
}

// geoParts says what a geoBuild makes of each geo's list.
type geoParts uint8

const (
	geoSets    geoParts = 1 << iota // the geo's permit set
	geoDerived                      // its postings, valuation order and month stats
	geoAll     = geoSets | geoDerived
)

// newGeoBuild starts the build of parts of every geo of lists on v.
func newGeoBuild(v *side, lists *geoLists, parts geoParts) *geoBuild {
	g := &geoBuild{v: v, lists: lists, geos: make([]uint32, 0, lists.geos), parts: parts}
	for geo, l := range lists.lists {
		if len(l) > 0 {
			g.geos = append(g.geos, uint32(geo))
		}
	}
	g.sets = make([]treeSet, len(g.geos))
	g.most = workersFor(len(g.geos), parallelGeos)
	for range max(1, g.most-1) { // the waiter is the last
		g.workers.Go(g.work)
	}
	return g
}

// work builds geos not taken yet until none is left, with a builder of
// its own (none when the build has its most already).
func (g *geoBuild) work() {
	if g.next.Load() >= int64(len(g.geos)) {
		return
	}
	b := g.builder()
	if b == nil {
		return
	}
	for {
		i := int(g.next.Add(1) - 1)
		if i >= len(g.geos) || g.v.quitting() { // quitting: an abandoned second side, nothing reads its sets (standby.go)
			return
		}
		geo := g.geos[i]
		var items []*cpermit
		g.sets[i], items = b.build(geo, g.lists.lists[geo], g.lists.sorted, g.parts)
		if g.parts&geoDerived != 0 {
			items = nil
		}
		g.lists.lists[geo] = items // a lean side's, for buildLean
	}
}

// builder adds a builder to the build, or returns nil when it has its
// most.
func (g *geoBuild) builder() *geoBuilder {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.bs) == g.most {
		return nil
	}
	b := newGeoBuilder(g.v, len(g.bs) == 0)
	g.bs = append(g.bs, b)
	return b
}

// wait builds what is left beside the background builders, waits for
// them and gives s the permit sets; the side indexes permits as Apply
// does from then on.
func (g *geoBuild) wait(s *side) {
	g.work()
	g.workers.Wait()
	v := g.v
	for i, b := range g.bs {
		if i == 0 {
			continue // wrote the side's own maps
		}
		for k, t := range b.postings.all() {
			v.pf.postings.put(k, t)
		}
		maps.Copy(v.pf.dense, b.dense) // each geo is one builder's
		maps.Copy(v.pf.byValue, b.byValue)
		maps.Copy(v.pf.posted, b.posted)
		maps.Copy(v.pf.months, b.months)
	}
	if g.parts&geoSets != 0 {
		if len(s.pi.geoIdx) == 0 {
			s.pi.geoIdx = make(map[uint32]treeSet, len(g.geos))
		}
		for i, geo := range g.geos {
			s.pi.geoIdx[geo] = g.sets[i]
		}
		s.deferGeo = false
	}
	s.leanLists = nil
	if g.parts&geoDerived == 0 { // a lean side's
		g.lists.sorted = true // build sorted them
		s.leanLists = g.lists
	}
}

// buildGeoIndexes ends the deferral at once, if the side defers.
func (s *side) buildGeoIndexes() {
	if s.deferGeo {
		s.startGeoBuild(s, s.geoParts()).wait(s)
	}
}

// geoParts is what a build of the side's deferred geo indexes makes: the
// sets alone on a lean side (the rest at settle: buildLean).
func (s *side) geoParts() geoParts {
	if s.lean {
		return geoSets
	}
	return geoAll
}

// parallelGeos is the number of geos from which buildGeo shares
// them among builders (a variable for tests).
var parallelGeos = 4096

// geoBuilder builds the deferred indexes of some geos, with its scratch
// space reused across them.
type geoBuilder struct {
	s        *side
	postings *postingTable // the side's (first builder), or merged after
	dense    map[uint32][]fkey
	byValue  map[uint32]*valueOrder
	posted   map[uint32]bool
	months   monthIndex
	byVal    []valued
	valKeys  []pkey // a valuation order's block keys
	vals     []float64
	// trees[field][symbol, or bucket for ffValue] is the geo's posting
	// of that value when its gen is the builder's (a nil posting: the
	// value is not indexed); gen changes per geo, so nothing is cleared.
	trees [ffValue + 1][]genTree
	gen   uint32
	// pend holds the keys of the geo's postings, by posting (two symbols
	// may fold to one value), until each is made in one piece; free keeps
	// their key slices for the next geo.
	pend map[fkey]*pendPosting
	free []*pendPosting
	keys []pkey // a geo set's keys
}

// pendPosting is the keys of a posting being built, in order.
type pendPosting struct{ keys []pkey }

func newGeoBuilder(s *side, own bool) *geoBuilder {
	b := &geoBuilder{s: s, postings: s.pf.postings, dense: s.pf.dense, byValue: s.pf.byValue, posted: s.pf.posted, months: s.pf.months}
	if !own {
		b.postings, b.dense, b.byValue, b.posted, b.months = newPostingTable(), map[uint32][]fkey{}, map[uint32]*valueOrder{}, map[uint32]bool{}, monthIndex{}
	}
	for f := ffType; f < ffValue; f++ { // the symbol fields
		b.trees[f] = make([]genTree, len(s.pi.syms.strs))
	}
	b.trees[ffValue] = make([]genTree, valueBuckets)
	b.pend = map[fkey]*pendPosting{}
	return b
}

type genTree struct {
	gen uint32
	p   *pendPosting
}

// build builds the deferred indexes of geo from its list and returns its
// permit set. The list is in index order when the permits came so (a
// snapshot's: sorted says so); else it is sorted here. A permit linked
// twice to geo is in it twice, and kept once. It returns the list too,
// sorted and each permit once.
func (b *geoBuilder) build(geo uint32, items []*cpermit, sorted bool, parts geoParts) (treeSet, []*cpermit) {
	if sorted {
		items = slices.Compact(items) // the same permit twice in a row
	} else {
		for i := 1; i < len(items); i++ {
			if !permitLess(items[i-1], items[i]) {
				slices.SortFunc(items, permitCmp)
				items = slices.Compact(items) // equal keys: the same permit (see above)
				break
			}
		}
	}
	var set treeSet
	if parts&geoSets != 0 {
		keys := b.keys[:0] // sorted, each once
		for _, c := range items {
			keys = append(keys, keyOf(c))
		}
		set = treeSet{blockSetOf(b.s.pi.slab, keys)}
		clear(keys)
		b.keys = keys[:0]
	}
	if parts&geoDerived == 0 {
		return set, items
	}
	if len(items) >= postingMin {
		b.buildPostings(geo, items)
	}
	b.buildMonths(geo, items)
	return set, items
}

// newPend returns an empty pendPosting, reusing a freed one.
func (b *geoBuilder) newPend() *pendPosting {
	if n := len(b.free); n > 0 {
		p := b.free[n-1]
		b.free = b.free[:n-1]
		return p
	}
	return &pendPosting{}
}

// permitCmp is permitLess as a comparison.
func permitCmp(a, b *cpermit) int {
	if c := cmp.Compare(a.ik, b.ik); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// buildPostings builds the postings and the valuation order of geo, whose
// permits are items (in index order, so every posting Load appends).
func (b *geoBuilder) buildPostings(geo uint32, items []*cpermit) {
	s := b.s
	b.posted[geo] = true
	b.gen++
	post := func(f filterField, sym uint32, c *cpermit) {
		g := &b.trees[f][sym]
		if g.gen != b.gen {
			g.gen, g.p = b.gen, nil
			var v uint32 // valID (filterKeys gave every symbol's), or the bucket
			switch f {
			case ffContractor:
				v = s.pf.ckeyID[sym]
			case ffValue:
				v = sym
			default:
				v = s.pf.foldID[sym]
			}
			if v != 0 || f == ffValue { // empty values are not indexed (filterKeys)
				k := fkey{geo, f, v}
				p, ok := b.pend[k]
				if !ok {
					p = b.newPend()
					b.pend[k] = p
				}
				g.p = p
			}
		}
		if g.p != nil {
			g.p.keys = append(g.p.keys, keyOf(c)) // items are sorted
		}
	}
	for _, c := range items {
		post(ffType, c.typ, c)
		post(ffWork, c.work, c)
		post(ffStatus, c.status, c)
		post(ffContractor, c.contractor, c)
		if !math.IsNaN(c.valuation) {
			post(ffValue, uint32(valueBucket(c.valuation)), c)
		}
	}
	// Each posting in one piece: full blocks of one array (a posting
	// that some other way already holds keys takes them one by one).
	// A value of more than a quarter of the geo's permits gets a dense
	// posting, its count alone (permit_dense.go).
	for k, p := range b.pend {
		switch t, ok := b.postings.get(k); {
		case ok && t.t.dense: // no keys to load into; each geo is built once, into maps without its postings, so not met
			t.t.n = max(t.t.n, len(p.keys))
		case ok && t.size() > 0:
			for _, x := range p.keys {
				t.t.load(t.t.permit(x))
			}
		case isDense(len(p.keys), len(items)):
			b.postings.put(k, treeSet{denseSet(b.s.pi.slab, len(p.keys), len(items))})
			b.dense[geo] = append(b.dense[geo], k)
		default:
			t := blockSetOf(b.s.pi.slab, p.keys)
			t.setMark(len(items))
			b.postings.put(k, treeSet{t})
		}
		clear(p.keys)
		p.keys = p.keys[:0]
		b.free = append(b.free, p)
	}
	clear(b.pend)

	// Valuation order: sorted on keys held beside the permits (the
	// tree's own keys), so that neither the sort nor the loads go to a
	// permit but for ties of valuation.
	byVal := b.byVal[:0]
	for _, c := range items {
		byVal = append(byVal, valued{vkey: vkeyOf(c), c: c})
	}
	slices.SortFunc(byVal, valuedCmp)
	var o *valueOrder
	o, b.valKeys = valueOrderOfSorted(b.s.pi.slab, byVal, b.valKeys)
	b.byValue[geo] = o
	clear(byVal)
	b.byVal = byVal[:0]
}

// valued is a permit with its key in valuation order (valueLess:
// valuations descending, then the null ones, each by permit_id).
type valued struct {
	vkey
	c *cpermit
}

func valuedCmp(a, b valued) int {
	if c := cmp.Compare(a.ord, b.ord); c != 0 {
		return c
	}
	return strings.Compare(a.c.id, b.c.id)
}

// valueOrderOfSorted makes the valuation order of the permits of vs,
// sorted by valuedCmp; keys is scratch space for the blocks' keys,
// returned for reuse.
func valueOrderOfSorted(slab *permitSlab, vs []valued, keys []pkey) (*valueOrder, []pkey) {
	o := &valueOrder{}
	keys = keys[:0]
	for _, v := range vs { // an exact valuation's ord orders as its valueIK does
		if exactValue(v.c.valuation) {
			keys = append(keys, pkey{valueIK(v.c.valuation), v.c.slot})
			continue
		}
		if o.odd == nil {
			o.odd = newValueTree(slab)
		}
		o.odd.Load(v.vkey)
	}
	o.blocks = blockSetOf(slab, keys)
	o.blocks.byValue = true
	clear(keys)
	return o, keys[:0]
}

// buildMonths builds the month stats of geo, whose permits are items.
func (b *geoBuilder) buildMonths(geo uint32, items []*cpermit) {
	// Dated items come month by month (newest first), undated ones last.
	gm := &geoMonths{}
	for i := 0; i < len(items) && items[i].ik != undated; {
		m := monthOfIK(items[i].ik)
		lo := -monthFirstDay(m) // the largest ik of month m
		gm.months = append(gm.months, m)
		gm.stats = append(gm.stats, monthStats{})
		st := &gm.stats[len(gm.stats)-1]
		vals := b.vals[:0]
		for ; i < len(items) && items[i].ik <= lo; i++ {
			c := items[i]
			st.count++
			if !math.IsNaN(c.valuation) {
				st.cents += cents(c.valuation)
				vals = append(vals, c.valuation)
			}
		}
		slices.Sort(vals)
		for _, v := range vals {
			st.vals.load(v)
		}
		clear(vals)
		b.vals = vals[:0]
	}
	if len(gm.months) > 0 {
		slices.Reverse(gm.months) // ascending
		slices.Reverse(gm.stats)
		b.months[geo] = gm
	}
}

// monthFirstDay is the first day (days since 1970) of month m
// (year*12 + month-1).
func monthFirstDay(m int32) int32 {
	return int32(time.Date(int(m/12), time.Month(m%12+1), 1, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// A lean side (side.lean) has its documents, permit sets and property
// indexes but none of the permit indexes that only speed reads up: no
// per-geo indexes derived from the sets (postings, valuation orders,
// month stats), no text index (word postings, permit numbers) and no map
// cells; its leads' trees are built by their readers (lead_bulk.go's
// readersBuild). An Import's first side is built so (import.go), and a
// replay's (replay.go): readers get it as soon as the rest is in, and
// read it as they read a geo of fewer than postingMin permits, from the
// geo's set (filters and q checked per permit on the descriptions'
// cached words, the valuation order sorted per page, month sums added up
// from the permits: PermitMonthly, a geometry's permits taken from the
// set or every permit instead of its cells: geometryHits), so the
// answers are the same, only slower for a large geo. At 1M permits those
// indexes were about a third of the CPU before readers had the first
// side.
//
// A write to a lean side keeps it lean: Apply adds to none of those
// indexes (it does not give a geo that reaches postingMin its postings),
// and a permit leaves none; a lead key stays unbuilt until read or left
// by a lead (lead_bulk.go).
// Settle, once the second side is built whole, makes that side the
// readers' and then gives the lean one, which no reader is left on, the
// indexes it lacks (buildLean), so that both sides are whole before the
// next write.

// buildLean builds the indexes a lean side lacks (under the Store's
// writer lock, no reader on the side).
func (s *side) buildLean() {
	if !s.lean {
		return
	}
	s.buildLeanGeos()
	// The text and cell indexes, empty so far, permit by permit in slot
	// order (a load's index order), with an order of their own (each
	// permit appends to their lists while it sorts after the ones
	// before it: indexOrder), as bulk writes add.
	order := s.pi.order
	s.pi.order, s.bulk = &indexOrder{sorted: true}, true
	for slot := uint32(1); slot < s.pi.slab.next; slot++ {
		if c := s.pi.slab.at(slot); c != nil {
			s.pi.order.next(c)
			s.indexText(c)
			s.indexCell(c)
		}
	}
	s.pi.order, s.bulk = order, false
	s.lean = false
}

// buildLeanGeos builds the derived geo indexes of a lean side from its
// permit sets: from the lists its build left (leanLists) while no permit
// was written since, else from the sets themselves.
func (s *side) buildLeanGeos() {
	s.pf.postings = newPostingTable()
	s.pf.dense = map[uint32][]fkey{}
	s.pf.byValue = map[uint32]*valueOrder{}
	s.pf.posted = map[uint32]bool{}
	s.pf.months = monthIndex{}
	if lists := s.leanLists; lists != nil {
		s.leanLists = nil
		newGeoBuild(s, lists, geoDerived).wait(s)
		return
	}
	n := 0
	for geo := range s.pi.geoIdx {
		n = max(n, int(geo)+1)
	}
	lists := &geoLists{lists: make([][]*cpermit, n), sorted: true} // a set's order is index order
	for geo, t := range s.pi.geoIdx {
		if t.size() == 0 {
			continue
		}
		items := make([]*cpermit, 0, t.size())
		t.t.scan(func(k pkey) bool {
			items = append(items, t.t.permit(k))
			return true
		})
		lists.lists[geo] = items
		lists.geos++
	}
	newGeoBuild(s, lists, geoDerived).wait(s)
}
