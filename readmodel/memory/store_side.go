package memory

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
)

// side is one complete copy of the read model: every table and index. A
// Store holds two (store.go); one writer at a time changes the side no
// reader reads, so nothing in a side is guarded by a lock.
type side struct {
	locations  locTable
	permits    *table[*cpermit]
	props      *propertyTable // properties with their permits and address indexes
	geoSignals *table[readmodel.GeoSignal]
	leads      *table[*leadRec] // the documents live in their records (leads.go)
	catalog    *table[readmodel.CatalogEntry]

	signals signalIndexes     // signals.go
	pi      permitIndexes     // intern.go, permits.go
	pf      permitFilterIndex // permit_filters.go

	resolver Resolver
	names    displayNames // names.go
	// locGen counts location writes that took: stats name locations, so
	// the stats cache keys on it (statscache.go).
	locGen uint64
	// bulk is set while an Import builds the side (setIn); deferGeo
	// while its per-geo permit indexes wait for buildGeoIndexes
	// (permit_bulk.go).
	bulk     bool
	deferGeo bool
	// lean: the side has its permit sets but not the per-geo indexes
	// derived from them, the text index or the map cells (an Import's
	// first side until settle; permit_bulk.go).
	lean bool
	// quiet: no reader can be waiting for this side's writer, so its
	// writes do not yield (applyStep): a replay's side until EndReplay
	// (replay.go), which readers do not see and which is not ready.
	quiet bool
	// yields counts the steps' yields taken (yield.go; a test reads it;
	// shared with the side's views, import_stages.go).
	yields *atomic.Int64
	// leanLists are a lean side's geo lists as its build left them (each
	// geo's permits in index order: what its set holds) until a permit
	// is written (dropped then): buildLean reads them.
	leanLists *geoLists
	// lanes is set while putPermits writes a batch's permits in lanes
	// (permit_lanes.go); postedNow holds the geos whose postings were
	// given (true) or ended (false) meanwhile, until the lanes join.
	lanes     bool
	postedNow map[uint32]bool
	// seeks is the seek logs of the batch being applied, if it has any
	// (Store.commit): recorded on the side written first, read on the
	// other (permit_seeklog.go); seekMain is its main lane's while the
	// lanes run.
	seeks    *seekLogs
	seekMain *seekLog
	// leadChanges is putLeads' list of changes, kept for the next batch
	// (lead_lanes.go).
	leadChanges []leadChange
	// leadsDropped is putLeads' list of the records it replaced.
	leadsDropped []*leadRec
	// quit is set on a second side built in the background: true once
	// StopBuilding abandoned it (standby.go). nil on the others.
	quit *atomic.Bool
	// exports counts the Exports reading the side (Store.wmu;
	// export_hold.go).
	exports int
}

// locTable is the side's location table. A row points at the document
// in the batch that wrote it (cloneBatch), the same one for both sides:
// no side changes a stored location in place, so sharing saves each side
// a copy of every location. get hands out the document by value (its
// lists still shared: readers copy them, cloneLocation).
type locTable struct{ *table[*readmodel.Location] }

func (t locTable) get(id string) (readmodel.Location, bool) {
	l, ok := t.table.get(id)
	if !ok {
		return readmodel.Location{}, false
	}
	return *l, true
}

func newSide(r Resolver) *side {
	return &side{
		locations:  locTable{newTable[*readmodel.Location]()},
		permits:    newTable[*cpermit](),
		props:      newPropertyTable(),
		pi:         newPermitIndexes(),
		pf:         newPermitFilterIndex(),
		signals:    newSignalIndexes(),
		geoSignals: newTable[readmodel.GeoSignal](),
		leads:      newTable[*leadRec](),
		catalog:    newTable[readmodel.CatalogEntry](),
		resolver:   r,
		names:      newDisplayNames(),
		yields:     new(atomic.Int64),
	}
}

// applyStep is the number of documents a side's writer applies before it
// yields its P (runtime.Gosched): a batch of thousands of documents takes
// tens of milliseconds or more (much more at a million permits, when
// leads move), and with few Ps (2 on the development machine) a reader
// the scheduler preempted, or one just woken, would otherwise wait for the
// writer's whole batch or for sysmon to preempt it. Readers never wait
// for the writer's locks (store.go); this keeps them from waiting for its
// CPU. A yield costs well under a microsecond while the other P is busy
// (more while it is idle: a replay's side does not yield, yield.go); a
// step of 64 documents tens to hundreds of microseconds.
const applyStep = 64

// apply writes a batch the Store owns (cloneBatch): documents are stored
// as they are, shared with the other side, and never changed in place by
// either (reads clone what they hand out). A replay's permits and
// properties are the caller's, lent for the call (lentBatch, store.go):
// their compact forms copy what they keep.
func (s *side) apply(b *readmodel.Batch) readmodel.ApplyResult {
	return s.applyShaped(b, nil)
}

// applyShaped is apply with the shapes of b's link lists (an Import's,
// AddShaped): its properties' are used, its permits' are not (an
// Import's permits are converted by importStages.add).
func (s *side) applyShaped(b *readmodel.Batch, shapes *readmodel.LinkShapes) readmodel.ApplyResult {
	s.awaitResolver() // a late resolver's build reads the locations (resolver_late.go)
	var res readmodel.ApplyResult
	n := 0
	count := func(ok bool) {
		if ok {
			res.Applied++
		} else {
			res.Stale++
		}
		s.yieldEvery(n) // a bounded step: let waiting readers have this P
		n++
	}
	for i := range b.Locations {
		l := &b.Locations[i] // shared with the other side (locTable)
		prev, hadPrev, ok := s.locations.put(l.GeoID, l.Version, l)
		if ok {
			s.locGen++
			if hadPrev {
				s.names.remove(*prev)
			}
			s.names.put(*l)
			if s.resolver != nil {
				s.resolver.Upsert(*l) // the resolver keeps its own copy
			}
		}
		count(ok)
	}
	s.putPermits(b.Permits, count)
	for i, p := range b.Properties {
		count(s.putProperty(p, shapes.PropertyShape(i, len(b.Properties))))
	}
	for _, g := range b.GeoSignals {
		count(s.putGeoSignal(g))
	}
	s.putLeads(b.Leads, count)
	for _, c := range b.Catalog {
		count(s.putCatalog(c))
	}
	for _, d := range b.Deletes {
		ok, _ := s.delete(d) // kinds were checked before either side changed
		count(ok)
	}
	return res
}

func (s *side) delete(d readmodel.Delete) (bool, error) {
	switch d.Kind {
	case readmodel.KindLocation:
		prev, hadPrev, ok := s.locations.del(d.ID, d.Version)
		if ok {
			s.locGen++
		}
		if hadPrev {
			s.names.remove(*prev)
		}
		if ok && s.resolver != nil {
			s.resolver.Delete(d.ID)
		}
		return ok, nil
	case readmodel.KindPermit:
		ok := s.delPermit(d.ID, d.Version)
		s.checkPostings() // the postings' densities (permit_dense.go)
		return ok, nil
	case readmodel.KindProperty:
		return s.delProperty(d.ID, d.Version), nil
	case readmodel.KindGeoSignal:
		return s.delGeoSignal(d.ID, d.Version), nil
	case readmodel.KindLead:
		return s.delLead(d.ID, d.Version), nil
	case readmodel.KindCatalog:
		return s.delCatalog(d.ID, d.Version), nil
	}
	return false, fmt.Errorf("memory: delete of unknown kind %q", d.Kind)
}

// Location implements readmodel.Reader. PermitCount and LatestPermitDate
// are read from the permit index of the geo_id. A property_id is a geo_id
// of the property scope: its location is the property (canonical address,
// lat/lon, hierarchy from its links, its permits).
func (s *side) Location(ctx context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	if geo.IsProperty() {
		e := s.liveProperty(geo)
		if e == nil {
			return readmodel.Location{}, readmodel.ErrNotFound
		}
		return s.propertyLocation(e, s.expandProperty(e)), nil
	}
	geoID := geo.ID()
	l, ok := s.locations.get(geoID)
	if !ok {
		return readmodel.Location{}, readmodel.ErrNotFound
	}
	l = cloneLocation(l)
	l.PermitCount, l.LatestPermitDate = 0, "" // the index's, never the document's
	if set, _ := s.geoPermits(geoID); set != nil {
		l.PermitCount, l.LatestPermitDate = int64(set.size()), latest(set)
	}
	return l, nil
}

// ResolveCandidates implements readmodel.Reader. Address-like text (a
// leading house number) also matches properties (geo_type property, geo_id
// the property_id, match_method address; see SearchProperties), ranked
// with the resolver's candidates by score. The property scope needs no
// resolver; the other scopes do.
func (s *side) ResolveCandidates(ctx context.Context, q readmodel.ResolveQuery) ([]readmodel.Candidate, error) {
	if s.resolver == nil && q.GeoType != readmodel.GeoProperty {
		return nil, readmodel.ErrUnsupported
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var out []readmodel.Candidate
	if q.GeoType == "" || q.GeoType == readmodel.GeoProperty {
		out = s.propertyCandidates(q)
	}
	if q.GeoType == readmodel.GeoProperty {
		return out, nil
	}
	if len(out) == 0 {
		return s.resolver.Search(q), nil
	}
	return propmatch.MergeCandidates(out, s.resolver.Search(q), q.Limit), nil
}
