package memory

import (
	"context"

	"github.com/permitd/permitd/readmodel"
)

// putGeoSignal stores a geo signal row (write lock held); true when it took.
func (s *Store) putGeoSignal(g readmodel.GeoSignal) bool {
	_, _, ok := s.geoSignals.put(g.ID(), g.Version, g)
	return ok
}

func (s *Store) delGeoSignal(id string, version int64) bool {
	_, _, ok := s.geoSignals.del(id, version)
	return ok
}

// putLead stores a lead (write lock held); true when it took.
func (s *Store) putLead(l readmodel.Lead) bool {
	_, _, ok := s.leads.put(l.LeadID, l.Version, l)
	return ok
}

func (s *Store) delLead(id string, version int64) bool {
	_, _, ok := s.leads.del(id, version)
	return ok
}

// putCatalog stores a catalog entry (write lock held); true when it took.
func (s *Store) putCatalog(c readmodel.CatalogEntry) bool {
	_, _, ok := s.catalog.put(c.ID(), c.Version, c)
	return ok
}

func (s *Store) delCatalog(id string, version int64) bool {
	_, _, ok := s.catalog.del(id, version)
	return ok
}

// GeoSignalsForLocation implements readmodel.Reader.
func (s *Store) GeoSignalsForLocation(ctx context.Context, geoID string, keys []string) ([]readmodel.GeoSignal, error) {
	return nil, readmodel.ErrUnsupported
}

// SearchGeoSignals implements readmodel.Reader.
func (s *Store) SearchGeoSignals(ctx context.Context, q readmodel.GeoSignalQuery) (readmodel.GeoSignalPage, error) {
	return readmodel.GeoSignalPage{}, readmodel.ErrUnsupported
}

// Catalog implements readmodel.Reader.
func (s *Store) Catalog(ctx context.Context, q readmodel.CatalogQuery) ([]readmodel.CatalogEntry, error) {
	return nil, readmodel.ErrUnsupported
}

// PermitLeads implements readmodel.Reader.
func (s *Store) PermitLeads(ctx context.Context, q readmodel.LeadQuery) (readmodel.LeadPage, error) {
	return readmodel.LeadPage{}, readmodel.ErrUnsupported
}

// PermitStats implements readmodel.Reader.
func (s *Store) PermitStats(ctx context.Context, q readmodel.StatsQuery) (readmodel.PermitStats, error) {
	return readmodel.PermitStats{}, readmodel.ErrUnsupported
}
