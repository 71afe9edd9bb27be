package api

import (
	"context"

	"github.com/permitd/permitd/readmodel"
)

// openPermitScan is the export's scan of q: the backend's own when it
// has one (readmodel.PermitScanner: one snapshot, released by Close),
// else pages of SearchPermits through the cursor key. maxRows is the
// most the export reads (its row cap plus one, to see that more follow).
func (s *server) openPermitScan(ctx context.Context, q readmodel.PermitQuery, maxRows int) (readmodel.PermitScan, error) {
	if ps, ok := s.Reader.(readmodel.PermitScanner); ok {
		return ps.OpenPermitScan(ctx, q, maxRows)
	}
	return readmodel.PagedPermitScan(s.Reader, q), nil
}
