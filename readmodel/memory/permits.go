package memory

import (
	"context"

	"github.com/permitd/permitd/readmodel"
)

// putPermit stores a permit (write lock held); true when it took.
func (s *Store) putPermit(p readmodel.Permit) bool {
	_, _, ok := s.permits.put(p.PermitID, p.Version, p)
	return ok
}

func (s *Store) delPermit(id string, version int64) bool {
	_, _, ok := s.permits.del(id, version)
	return ok
}

// putProperty stores a property (write lock held); true when it took.
func (s *Store) putProperty(p readmodel.Property) bool {
	_, _, ok := s.properties.put(p.PropertyID, p.Version, p)
	return ok
}

func (s *Store) delProperty(id string, version int64) bool {
	_, _, ok := s.properties.del(id, version)
	return ok
}

// SearchPermits implements readmodel.Reader.
func (s *Store) SearchPermits(ctx context.Context, q readmodel.PermitQuery) (readmodel.PermitPage, error) {
	return readmodel.PermitPage{}, readmodel.ErrUnsupported
}

// SearchProperties implements readmodel.Reader.
func (s *Store) SearchProperties(ctx context.Context, q readmodel.PropertyQuery) ([]readmodel.PropertyMatch, error) {
	return nil, readmodel.ErrUnsupported
}

// PropertyPermits implements readmodel.Reader.
func (s *Store) PropertyPermits(ctx context.Context, q readmodel.PropertyPermitsQuery) (readmodel.PropertyPermitPage, error) {
	return readmodel.PropertyPermitPage{}, readmodel.ErrUnsupported
}
