package memory

import (
	"context"
	"math"
	"slices"

	"github.com/permitd/permitd/readmodel"
)

// Permits live in s.permits as immutable *cpermit (one per version) and
// in two indexes kept in step on every put and delete from the previous
// and new documents the table returns:
//
//   - s.pi.geoIdx: per geo_id symbol, a B-tree of the permits linked to it
//     (every link except the permit's own property link);
//   - s.props: per property, the sorted permits whose PropertyID it is.
//
// A location's permit_count is the size of its set and its
// latest_permit_date the first item's issue date, so both are exact after
// any sequence of adds, changes (links may move), deletes and replays.

// putPermit stores a permit (the side's writer); true when it took.
func (s *side) putPermit(p readmodel.Permit) bool {
	prev, c, ok := s.storePermit(p)
	if !ok {
		return false
	}
	s.reindexPermit(prev, c)
	if prev != nil {
		s.releaseTexts(prev)
	}
	return true
}

// storePermit puts p in the permits table, and returns the version it
// replaced (nil when none) and its own; ok false when it did not take. A
// new permit is given its slot, a new version its previous version's,
// but it is not in the slab yet, nor in the indexes: reindexPermit puts
// it in both.
func (s *side) storePermit(p readmodel.Permit) (prev, c *cpermit, ok bool) {
	c = s.compactPermit(p, 0)
	prev, hadPrev, ok := s.permits.put(c.id, c.version, c)
	if !ok && p.Linked() {
		prev, ok = s.relinkPermit(c) // equal version: a re-link (relink.go)
		hadPrev = ok
	}
	if !ok {
		s.releaseTexts(c) // stale: never stored
		return nil, nil, false
	}
	if hadPrev {
		c.id = prev.id // share the table key's bytes
		c.slot = prev.slot
		return prev, c, true
	}
	s.pi.slab.take(c)
	return nil, c, true
}

// reindexPermit indexes c, stored by storePermit, in place of prev (nil
// when c is new).
func (s *side) reindexPermit(prev, c *cpermit) {
	if prev != nil {
		s.pi.slab.replace(c)
		s.unindexPermit(prev) // its keys name c now: the same id, so the same places
	}
	s.indexPermit(c)
}

func (s *side) delPermit(id string, version int64) bool {
	prev, hadPrev, ok := s.permits.del(id, version)
	if hadPrev {
		s.unindexPermit(prev)
		s.releaseTexts(prev)
		s.pi.slab.release(prev)
	}
	return ok
}

func (s *side) indexPermit(c *cpermit) {
	s.leanLists = nil // no longer what the sets hold (permit_bulk.go)
	s.pi.order.next(c)
	inserts := !s.bulk && !s.pi.order.appends(c) // seeks, not appends: in lock step (writeAll)
	var buf [16]*blockSet
	var gbuf [16]uint32
	sets, geos := buf[:0], gbuf[:0]
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty {
			continue
		}
		if s.deferGeo { // an Import's: its set is made later (permit_bulk.go)
			s.pi.deferred.add(l.geo, c)
			continue
		}
		t, ok := s.pi.geoIdx[l.geo]
		if !ok {
			t = newTreeSet(s.pi.slab)
			s.pi.geoIdx[l.geo] = t
		}
		if !inserts {
			n := t.size()
			s.setIn(t, c)
			if !s.bulk && t.size() > n {
				s.grewTo(l.geo, t.size())
			}
		} else if !slices.Contains(sets, t.t) { // c may link twice to one geo
			sets, geos = append(sets, t.t), append(geos, l.geo)
		}
	}
	writeAll(sets, c, true, s.seekMain)
	for i, t := range sets {
		s.grewTo(geos[i], t.len()) // dense postings' shares fell (permit_dense.go)
	}
	if c.prop.kind != 0 {
		e := s.props.entry(c.prop, true)
		e.permits = s.insertPermit(e.permits, c)
	}
	s.indexFilters(c)
}

func (s *side) unindexPermit(c *cpermit) {
	s.buildGeoIndexes() // an Import's deferred indexes hold c (permit_bulk.go)
	// After the build: on a lean side it leaves its lists for buildLean,
	// and they hold c, which leaves the sets now.
	s.leanLists = nil
	var buf [16]*blockSet
	sets := buf[:0]
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == selfProperty {
			continue
		}
		if t, ok := s.pi.geoIdx[l.geo]; ok && !slices.Contains(sets, t.t) {
			sets = append(sets, t.t)
		}
	}
	writeAll(sets, c, false, s.seekMain) // in lock step
	for _, l := range s.pi.links.get(c.links) {
		if t, ok := s.pi.geoIdx[l.geo]; ok && l.geo != selfProperty && t.size() == 0 {
			delete(s.pi.geoIdx, l.geo)
		}
	}
	if c.prop.kind != 0 {
		if e := s.props.entry(c.prop, false); e != nil {
			e.permits = removeSorted(s.pi.slab, e.permits, c)
			s.props.gc(e)
		}
	}
	s.unindexFilters(c)
}

// geoSet is what a permit read of g starts from: the permits g holds and
// the geo they are matched on (a symbol, or selfProperty for a property,
// whose permits are props too). ErrNotFound for an unknown geography; a
// known location without permits has a nil set.
func (s *side) geoSet(g readmodel.GeoRef) (set permitSet, geo uint32, err error) {
	if g.IsProperty() {
		e := s.liveProperty(g)
		if e == nil {
			return nil, 0, readmodel.ErrNotFound
		}
		return sliceSet{e.permits, s.pi.slab}, selfProperty, nil
	}
	if _, ok := s.locations.get(g.ID()); !ok {
		return nil, 0, readmodel.ErrNotFound
	}
	set, geo = s.geoPermits(g.ID())
	return set, geo, nil
}

// geoPermits returns the permit set of a location's geo_id (a reader of the
// side); nil when no permit is linked to it.
func (s *side) geoPermits(geoID string) (permitSet, uint32) {
	sym, ok := s.pi.syms.lookup(geoID)
	if !ok {
		return nil, 0
	}
	t, ok := s.pi.geoIdx[sym]
	if !ok {
		return nil, sym
	}
	return t, sym
}

// SearchPermits implements readmodel.Reader. A property_id is a geo_id of
// the property scope: its permits, matched by their property link.
func (s *side) SearchPermits(ctx context.Context, q readmodel.PermitQuery) (readmodel.PermitPage, error) {
	if err := q.Validate(); err != nil {
		return readmodel.PermitPage{}, err
	}
	hits, geo, err := s.permitHits(ctx, &q, q.Limit+1)
	if err != nil {
		return readmodel.PermitPage{}, err
	}
	return s.permitPage(&q, geo, hits), nil
}

// permitHits returns the permits q pages, in q's order, strictly after
// q.After, at most n (the candidates of SearchPermits and of the export
// scan, permit_scan.go; q passed Validate), and the geo they are matched on (a symbol,
// selfProperty, or 0 for a geometry without geo_id).
func (s *side) permitHits(ctx context.Context, q *readmodel.PermitQuery, n int) ([]geoHit, uint32, error) {
	if q.Filter.HasGeometry() {
		return s.geometryHits(ctx, q, n) // permit_geo.go
	}
	if q.Sort == readmodel.SortValuationDesc {
		return s.valuationHits(ctx, q, n) // permit_sort.go
	}
	set, geo, err := s.geoSet(q.Geo)
	if err != nil || set == nil {
		return nil, geo, err
	}
	sp := newPageSpec(q.Desc, q.FromDate, q.ToDate, n)
	if q.After != nil {
		sp.after = &cpermit{ik: ikOf(q.After.IssueDate), id: q.After.PermitID}
	}
	items := page(s.filteredSet(geo, set, &q.Filter), sp)
	hits := make([]geoHit, len(items))
	for i, c := range items {
		hits[i].c = c
	}
	return hits, geo, nil
}

// permitPage is the page of hits (q.Limit of them, Next set when more
// follow) matched on geo.
func (s *side) permitPage(q *readmodel.PermitQuery, geo uint32, hits []geoHit) readmodel.PermitPage {
	out := readmodel.PermitPage{Permits: make([]readmodel.PermitHit, 0, min(len(hits), q.Limit))}
	for i := range hits {
		if i == q.Limit {
			out.Next = permitKeyOf(q, &hits[i-1])
			break
		}
		out.Permits = append(out.Permits, s.permitHit(q, geo, &hits[i], hits[i].c))
	}
	return out
}

// permitHit is hit h as a result; c is h.c or a copy that names its texts
// elsewhere (permit_scan.go).
func (s *side) permitHit(q *readmodel.PermitQuery, geo uint32, h *geoHit, c *cpermit) readmodel.PermitHit {
	hit := readmodel.PermitHit{Permit: s.expandPermit(c)}
	if geo != 0 {
		m, ok := s.link(c, geo)
		if !ok { // a permit of the property without a property link
			m = readmodel.GeoLink{GeoID: q.Geo.ID(), GeoType: readmodel.GeoProperty, Confidence: 1, Method: "property_id"}
		}
		hit.Match = m
	}
	if q.Filter.Near != nil {
		d := math.Round(h.dist*10) / 10
		hit.DistanceM = &d
	}
	return hit
}

// permitKeyOf is the cursor key after h in q's order.
func permitKeyOf(q *readmodel.PermitQuery, h *geoHit) *readmodel.PermitKey {
	k := &readmodel.PermitKey{IssueDate: issueOf(h.c.ik), PermitID: h.c.id, DistanceM: h.dist}
	if q.Sort == readmodel.SortValuationDesc && !math.IsNaN(h.c.valuation) {
		k.HasValuation, k.Valuation = true, h.c.valuation
	}
	return k
}
