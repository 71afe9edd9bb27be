// Package memory is the embedded read-model backend: every index lives in
// process behind one RWMutex. Reads run concurrently with each other and
// see either all or nothing of a batch; Apply holds the write lock for one
// batch. Nothing internal is handed out: every document returned is a
// copy.
package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/propmatch"
)

// Resolver ranks locations for free text. It is kept in step with the
// location table under the Store's lock: Upsert and Delete are called with
// the write lock held, Search with the read lock held.
type Resolver interface {
	Upsert(loc readmodel.Location)
	Delete(geoID string)
	Search(q readmodel.ResolveQuery) []readmodel.Candidate
}

// Store is the memory backend. The zero value is not usable; call New.
type Store struct {
	mu sync.RWMutex

	locations  *table[readmodel.Location]
	permits    *table[*cpermit]
	props      *propertyTable // properties with their permits and address indexes
	geoSignals *table[readmodel.GeoSignal]
	leads      *table[readmodel.Lead]
	catalog    *table[readmodel.CatalogEntry]

	signals signalIndexes // signals.go
	pi      permitIndexes // intern.go, permits.go

	resolver Resolver
}

// Options configure a Store.
type Options struct {
	// Resolver serves ResolveCandidates; nil makes it ErrUnsupported.
	Resolver Resolver
}

var (
	_ readmodel.Reader    = (*Store)(nil)
	_ readmodel.Writer    = (*Store)(nil)
	_ readmodel.Inspector = (*Store)(nil)
)

// New returns an empty Store.
func New(opts Options) *Store {
	return &Store{
		locations:  newTable[readmodel.Location](),
		permits:    newTable[*cpermit](),
		props:      newPropertyTable(),
		pi:         newPermitIndexes(),
		signals:    newSignalIndexes(),
		geoSignals: newTable[readmodel.GeoSignal](),
		leads:      newTable[readmodel.Lead](),
		catalog:    newTable[readmodel.CatalogEntry](),
		resolver:   opts.Resolver,
	}
}

// Apply implements readmodel.Writer. The batch is visible to readers as a
// whole once Apply returns; memory is the durability this backend has (see
// the indexer's rebuild-on-start for restarts).
func (s *Store) Apply(ctx context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	if err := ctx.Err(); err != nil {
		return readmodel.ApplyResult{}, err
	}
	var res readmodel.ApplyResult
	count := func(ok bool) {
		if ok {
			res.Applied++
		} else {
			res.Stale++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range b.Locations {
		l = l.Clone()
		_, _, ok := s.locations.put(l.GeoID, l.Version, l)
		if ok && s.resolver != nil {
			s.resolver.Upsert(l)
		}
		count(ok)
	}
	for _, p := range b.Permits {
		count(s.putPermit(p))
	}
	for _, p := range b.Properties {
		count(s.putProperty(p))
	}
	for _, g := range b.GeoSignals {
		count(s.putGeoSignal(g.Clone()))
	}
	for _, l := range b.Leads {
		count(s.putLead(l.Clone()))
	}
	for _, c := range b.Catalog {
		count(s.putCatalog(c.Clone()))
	}
	for _, d := range b.Deletes {
		ok, err := s.delete(d)
		if err != nil {
			return res, err
		}
		count(ok)
	}
	return res, nil
}

func (s *Store) delete(d readmodel.Delete) (bool, error) {
	switch d.Kind {
	case readmodel.KindLocation:
		_, _, ok := s.locations.del(d.ID, d.Version)
		if ok && s.resolver != nil {
			s.resolver.Delete(d.ID)
		}
		return ok, nil
	case readmodel.KindPermit:
		return s.delPermit(d.ID, d.Version), nil
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
func (s *Store) Location(ctx context.Context, geoID string) (readmodel.Location, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if ref, ok := propRefIfKey(geoID); ok {
		e := s.props.entry(ref, false)
		if e == nil || e.state != propLive {
			return readmodel.Location{}, readmodel.ErrNotFound
		}
		return s.propertyLocation(e, s.expandProperty(e)), nil
	}
	l, ok := s.locations.get(geoID)
	if !ok {
		return readmodel.Location{}, readmodel.ErrNotFound
	}
	l = l.Clone()
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
func (s *Store) ResolveCandidates(ctx context.Context, q readmodel.ResolveQuery) ([]readmodel.Candidate, error) {
	if s.resolver == nil && q.GeoType != readmodel.GeoProperty {
		return nil, readmodel.ErrUnsupported
	}
	if q.Limit < 1 || q.Limit > 20 {
		return nil, fmt.Errorf("%w: resolve limit %d", readmodel.ErrInvalidQuery, q.Limit)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
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

// Health implements readmodel.Reader.
func (s *Store) Health(ctx context.Context) (readmodel.Health, error) {
	counts, err := s.Counts(ctx)
	return readmodel.Health{Backend: "memory", Counts: counts}, err
}

// Counts implements readmodel.Inspector.
func (s *Store) Counts(ctx context.Context) (map[readmodel.Kind]int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return map[readmodel.Kind]int64{
		readmodel.KindLocation:  int64(s.locations.live),
		readmodel.KindPermit:    int64(s.permits.live),
		readmodel.KindProperty:  int64(s.props.live),
		readmodel.KindGeoSignal: int64(s.geoSignals.live),
		readmodel.KindLead:      int64(s.leads.live),
		readmodel.KindCatalog:   int64(s.catalog.live),
	}, nil
}

// Digest implements readmodel.Inspector (readmodel.Digest over every live
// document).
func (s *Store) Digest(ctx context.Context) (string, error) {
	var d readmodel.Digest
	add := func(k readmodel.Kind) func(string, int64) {
		return func(id string, v int64) { d.Add(k, id, v) }
	}
	s.mu.RLock()
	eachVersion(s.locations, add(readmodel.KindLocation))
	eachVersion(s.permits, add(readmodel.KindPermit))
	s.props.each(func(e *propEntry) { d.Add(readmodel.KindProperty, s.propString(e.ref), e.version) })
	eachVersion(s.geoSignals, add(readmodel.KindGeoSignal))
	eachVersion(s.leads, add(readmodel.KindLead))
	eachVersion(s.catalog, add(readmodel.KindCatalog))
	s.mu.RUnlock()
	return d.Sum(), nil
}

func eachVersion[T any](t *table[T], fn func(id string, v int64)) {
	t.each(func(id string, v int64, _ T) { fn(id, v) })
}
