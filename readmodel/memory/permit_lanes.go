package memory

import (
	"slices"
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Permit lanes. A permit's write into a large store is mostly inserts
// into large ordered structures: its geos' sets, the filter postings and
// valuation orders of its posted geos, and its geos' month stats. In the
// round into a store of 5M permits (BenchmarkIngestMixFullStore) the
// permit write was the critical path of a step, on one goroutine, while
// the other core was half idle (1.26 cores used).
//
// putPermits writes a batch's permits in three parts:
//
//  1. in order, on the writer: the permits table, which version each
//     permit replaces, and a slot for each new permit (storePermit);
//  2. three lanes at once, each applying every change of the batch in
//     order to its own structures:
//     - the main lane puts the new version in the slab, and unindexes
//     the replaced one and indexes the new one (reindexPermit) in the
//     geo sets, the property lists, the text index and the map cells;
//     it decides which geos gain or lose postings (markPosted), but
//     leaves s.pf.posted as it was (postedNow holds the changes);
//     - the postings lane: the filter postings of the geos posted when
//     the batch began (s.pf.postings), and the folds the filters read
//     (filterKeys);
//     - the value lane: the valuation orders of those geos
//     (s.pf.byValue, their blocks in lock step) and every geo's month stats (s.pf.months).
//     The lanes share no structure they write. The postings and value
//     lanes read the permits (immutable), their links, s.pf.posted
//     (which nothing writes while they run) and, through the slab, the
//     ids that break ties: a slot's version changes under them (an
//     atomic pointer) but its id does not. The main lane reads other
//     permits' fields through the slab (a text posting grown into a
//     set) and finds each slot's version as putPermit one permit at a
//     time would;
//  3. after the join, the replaced versions' texts are released (the
//     main lane's text unindex reads them), and each geo whose postings
//     began or ended during the batch is settled (settlePosted).
//
// The postings and value lanes keep a geo posted when the batch began
// as if it stayed posted: its postings and order hold exactly the
// permits of its set with their values, even if the set emptied and
// refilled meanwhile. So a geo posted before and after the batch is
// right as it is; one posted only after it gets its postings and order
// built from its set, as buildPostings does when a set reaches
// postingMin; one posted only before it loses them. The store after a
// batch is the same as after putPermit one permit at a time
// (TestPermitLanesMatchOneByOne).
//
// Batches with fewer than laneMin permits, the bulk and deferred writes
// of an Import or a replay, and the writes to a lean side (an Import's
// journal: permit_bulk.go), take putPermit.
const laneMin = 64

// permitChange is one stored permit of a batch: the version it replaced
// (nil for a new permit) and its own.
type permitChange struct{ prev, c *cpermit }

// putPermits stores ps in order (the side's writer), calling count with
// each one's result.
func (s *side) putPermits(ps []readmodel.Permit, count func(bool)) {
	if len(ps) == 0 {
		return // (also the signal families' lane: apply.go)
	}
	id := func(j int) string { return ps[j].PermitID }
	if len(ps) < laneMin || s.bulk || s.deferGeo || s.lean {
		for i, p := range ps {
			s.permits.touchRun(i, len(ps), id)
			count(s.putPermit(p))
		}
		s.checkPostings() // the postings' densities (permit_dense.go)
		return
	}
	changes := make([]permitChange, 0, len(ps))
	for i, p := range ps {
		s.permits.touchRun(i, len(ps), id)
		prev, c, ok := s.storePermit(p)
		if ok {
			changes = append(changes, permitChange{prev, c})
		}
		count(ok)
	}
	s.lanes = true
	var postings, values *seekLog // the lanes' seek logs (permit_seeklog.go)
	if l := s.seeks; l != nil {
		s.seekMain, postings, values = &l.main, &l.postings, &l.values
	}
	var wg sync.WaitGroup
	lane := func(fn func(c *cpermit, add bool, log *seekLog), log *seekLog) {
		wg.Go(func() {
			for i, ch := range changes {
				if ch.prev != nil {
					fn(ch.prev, false, log)
				}
				fn(ch.c, true, log)
				s.yieldEvery(i)
			}
		})
	}
	lane(s.lanePostings, postings)
	lane(s.laneValues, values)
	for i, ch := range changes {
		s.reindexPermit(ch.prev, ch.c)
		s.yieldEvery(i)
	}
	wg.Wait()
	s.lanes, s.seekMain = false, nil
	for _, ch := range changes {
		if ch.prev != nil {
			s.releaseTexts(ch.prev)
		}
	}
	s.settlePosted()
	s.checkPostings()
}

// postedAt reports whether geo has postings now (the main lane's view
// while the lanes run).
func (s *side) postedAt(geo uint32) bool {
	if now, ok := s.postedNow[geo]; ok {
		return now
	}
	return s.pf.posted[geo]
}

// markPosted records, for the main lane, the geos of c that gain
// postings as c is indexed (add: a set that reached postingMin) or lose
// them as it leaves (its set emptied), as indexFilters and
// unindexFilters decide them one permit at a time.
func (s *side) markPosted(c *cpermit, add bool) {
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty || s.postedAt(l.geo) == add {
			continue
		}
		t, ok := s.pi.geoIdx[l.geo]
		if add && ok && t.size() >= postingMin || !add && !ok {
			if s.postedNow == nil {
				s.postedNow = map[uint32]bool{}
			}
			s.postedNow[l.geo] = add
		}
	}
}

// lanePostings adds c to (add) or removes it from the postings of its
// geos posted when the batch began, and caches its folds.
//
// Its kept postings are written together (writeAll: their seeks in lock
// step), each once though c may link twice to one geo; its dense ones
// count it, once each too (permit_dense.go). The postings are found a
// step at a time, as the seeks are: every key, then every lookup (each
// a cache miss into a large map, none waiting on another), then every
// posting's header.
func (s *side) lanePostings(c *cpermit, add bool, log *seekLog) {
	var kvs [5]fieldValue
	kv := kvs[:s.filterKeys(c, &kvs)]
	var kbuf [32]fkey
	keys := kbuf[:0]
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty || !s.pf.posted[l.geo] {
			continue
		}
		for _, x := range kv {
			if k := (fkey{l.geo, x.f, x.v}); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	var tbuf [32]*blockSet
	ts := tbuf[:0]
	if len(keys) > len(tbuf) {
		ts = make([]*blockSet, 0, len(keys))
	}
	ts = ts[:len(keys)]
	s.pf.postings.getAll(keys, ts) // nil: none
	var dbuf [32]bool
	dense := dbuf[:0]
	for i, t := range ts {
		if t == nil && add {
			t = s.posting(keys[i]).t
			ts[i] = t
		}
		dense = append(dense, t != nil && t.dense)
	}
	var sbuf [32]*blockSet
	sets := sbuf[:0]
	for i, t := range ts {
		if t != nil && !dense[i] {
			sets = append(sets, t)
		}
	}
	writeAll(sets, c, add, log)
	for i, t := range ts {
		switch {
		case t == nil:
		case dense[i]:
			t.count(add)
			s.duePosting(keys[i], t)
		case add:
			s.duePosting(keys[i], t)
		}
	}
	if add {
		return
	}
	for _, l := range s.pi.links.get(c.links) { // a posting left empty goes
		if l.geo != selfProperty && s.pf.posted[l.geo] {
			s.dropEmptyPostings(l.geo, kv)
		}
	}
}

// laneValues adds c to (add) or removes it from the valuation orders of
// its geos posted when the batch began, and its geos' month stats.
//
// An exact valuation's orders (permit_sort.go) are written together
// (writeAll: their blocks' seeks in lock step), each once though c may
// link twice to one geo.
func (s *side) laneValues(c *cpermit, add bool, log *seekLog) {
	var buf [32]*blockSet
	sets := buf[:0]
	exact := exactValue(c.valuation)
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty || !s.pf.posted[l.geo] {
			continue
		}
		o := s.valueOrderOf(l.geo, add)
		switch {
		case o == nil:
		case !exact && add:
			o.setOdd(c)
		case !exact:
			o.deleteOdd(c)
		case !slices.Contains(sets, o.blocks):
			sets = append(sets, o.blocks)
		}
	}
	writeAll(sets, c, add, log)
	if !add { // an order left empty goes
		for _, l := range s.pi.links.get(c.links) {
			if o, ok := s.pf.byValue[l.geo]; ok && o.len() == 0 {
				delete(s.pf.byValue, l.geo)
			}
		}
	}
	s.indexMonthly(c, add)
}

// settlePosted gives the geos posted during the batch their postings
// and valuation orders, from their sets, and takes them from the geos
// whose postings ended (their sets emptied, and may hold a few permits
// again: the postings lane kept those).
func (s *side) settlePosted() {
	for geo, now := range s.postedNow {
		if now == s.pf.posted[geo] {
			continue
		}
		t, held := s.pi.geoIdx[geo]
		if now {
			s.buildPostings(geo, t)
			continue
		}
		delete(s.pf.posted, geo)
		delete(s.pf.byValue, geo)
		delete(s.pf.dense, geo)
		if held {
			var kvs [5]fieldValue
			t.t.scan(func(k pkey) bool {
				for _, x := range kvs[:s.filterKeys(t.t.permit(k), &kvs)] {
					s.pf.postings.del(fkey{geo, x.f, x.v})
				}
				return true
			})
		}
	}
	clear(s.postedNow)
}
