package readmodel

import (
	"context"
	"errors"
)

// PermitScanner is implemented by backends that stream every permit of a
// query from one consistent view (OpenSearch: a point in time). The API's
// export uses it when the backend has it, and otherwise pages
// SearchPermits with the cursor key (PagedPermitScan).
type PermitScanner interface {
	// OpenPermitScan starts a scan of the permits SearchPermits would page
	// for q (q.After: resume after that key; q.Limit: the page size).
	// maxRows bounds what the caller will read (0 or less: no bound): the
	// scan may end after maxRows permits (a caller that must know whether
	// more follow asks for one more), and a backend that gathers the scan
	// up front (memory) gathers no more. It holds backend resources until
	// Close.
	OpenPermitScan(ctx context.Context, q PermitQuery, maxRows int) (PermitScan, error)
}

// PermitScan is one scan. Next returns the following page (Next nil on
// the last page; calling Next after it is an error); each call is bounded
// by its own ctx, so a caller can give every page a deadline. The first
// Next answers ErrNotFound for an unknown q.Geo. Close releases the scan
// (idempotent, safe after an error or a cancelled ctx; it does not use a
// cancelled context, and returns once the backend has been told).
type PermitScan interface {
	Next(ctx context.Context) (PermitPage, error)
	Close() error
}

// PagedPermitScan scans r by paging SearchPermits with the cursor key:
// no snapshot (a permit written between pages shows as a cursor walk
// would see it), nothing held between pages.
func PagedPermitScan(r Reader, q PermitQuery) PermitScan { return &pagedScan{r: r, q: q} }

type pagedScan struct {
	r    Reader
	q    PermitQuery
	done bool
}

func (p *pagedScan) Next(ctx context.Context) (PermitPage, error) {
	if p.done {
		return PermitPage{}, errScanDone
	}
	page, err := p.r.SearchPermits(ctx, p.q)
	if err != nil {
		return PermitPage{}, err
	}
	p.q.After, p.done = page.Next, page.Next == nil
	return page, nil
}

func (p *pagedScan) Close() error { p.done = true; return nil }

// errScanDone: Next after the last page or after Close.
var errScanDone = errors.New("readmodel: permit scan already ended")
