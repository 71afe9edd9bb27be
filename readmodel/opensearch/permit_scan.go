package opensearch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// Export scans (readmodel.PermitScanner): a point in time on the permits
// read alias and search_after pages in SearchPermits' order, whose sort
// ends in doc_id (a unique keyword with doc values), so the scan sees one
// snapshot and neither repeats nor skips a permit. Each page's search
// extends the point in time by pitKeepAlive (2 minutes): the engine frees
// it that long after the last page if Close never comes. Close deletes
// it, with its own bounded context, whatever happened to the caller's
// (an error, a client that went away). A point in time that expired
// between pages (a client reading slower than one page per keep-alive) is
// reopened and the scan goes on after the last key it returned: the rest
// of the export then reads the newer snapshot.

var _ readmodel.PermitScanner = (*Store)(nil)

// closePITTimeout bounds Close's delete of the point in time.
const closePITTimeout = 10 * time.Second

// OpenPermitScan implements readmodel.PermitScanner: it opens the point
// in time; the first Next checks the geography. Pages are read one at a
// time, so max needs no use here.
func (s *Store) OpenPermitScan(ctx context.Context, q readmodel.PermitQuery, _ int) (readmodel.PermitScan, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	pit, err := s.openPITErr(ctx, readmodel.KindPermit)
	if err != nil {
		return nil, err
	}
	return &permitScan{s: s, q: q, field: permitField(q.Geo), pit: pit, base: context.WithoutCancel(ctx)}, nil
}

// openPITErr opens a point in time on kind k's read alias.
func (s *Store) openPITErr(ctx context.Context, k readmodel.Kind) (string, error) {
	var out struct {
		PitID string `json:"pit_id"`
	}
	if err := s.do(ctx, http.MethodPost, "/"+s.read(k)+"/_search/point_in_time?keep_alive="+pitKeepAlive, nil, "", &out); err != nil {
		return "", fmt.Errorf("opensearch: opening a point in time on %s: %w", s.read(k), err)
	}
	if out.PitID == "" {
		return "", fmt.Errorf("%w: opening a point in time on %s: no pit_id in the answer", readmodel.ErrUnavailable, s.read(k))
	}
	return out.PitID, nil
}

type permitScan struct {
	s     *Store
	q     readmodel.PermitQuery
	field string
	base  context.Context // the opener's values, never cancelled: Close's parent

	mu      sync.Mutex
	pit     string // "" once closed
	started bool
	done    bool
}

var errScanEnded = errors.New("opensearch: permit scan already ended")

// scanPageBody is a scan page: SearchPermits' body on the point in time.
func scanPageBody(field string, q *readmodel.PermitQuery, pit string) obj {
	return withPIT(permitSearchBody(field, q), pit)
}

// Next implements readmodel.PermitScan.
func (p *permitScan) Next(ctx context.Context) (readmodel.PermitPage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.pit == "" {
		return readmodel.PermitPage{}, errScanEnded
	}
	var r *searchResult
	var err error
	for attempt := 0; ; attempt++ {
		body := scanPageBody(p.field, &p.q, p.pit)
		if !p.started && !p.q.Geo.IsZero() {
			var rs []*searchResult
			rs, err = p.s.msearch(ctx, p.s.exists(p.q.Geo), msearchReq{index: "", body: body})
			if err == nil && !found(rs[0]) {
				return readmodel.PermitPage{}, readmodel.ErrNotFound
			}
			if err == nil {
				r = rs[1]
			}
		} else {
			r, err = p.s.searchPath(ctx, "/_search", body)
		}
		if err == nil || attempt > 0 || !isExpired(err) && !msearchExpired(err) {
			break
		}
		// The point in time expired: a fresh one, from the same key.
		pit, oerr := p.s.openPITErr(ctx, readmodel.KindPermit)
		if oerr != nil {
			return readmodel.PermitPage{}, oerr
		}
		p.s.closePIT(context.WithoutCancel(ctx), p.pit)
		p.pit = pit
	}
	if err != nil {
		return readmodel.PermitPage{}, err
	}
	p.started = true
	if r.PitID != "" {
		p.pit = r.PitID
	}
	docs, err := decodeHits[permitDoc](r)
	if err != nil {
		return readmodel.PermitPage{}, err
	}
	page := permitPage(&p.q, p.field, docs)
	p.q.After, p.done = page.Next, page.Next == nil
	return page, nil
}

// msearchExpired: an _msearch item that failed because its point in time
// is gone (msearch reports item errors as plain errors with the status).
func msearchExpired(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return false
	}
	return err != nil && strings.Contains(err.Error(), "search_context_missing_exception")
}

// Close implements readmodel.PermitScan: it deletes the point in time.
func (p *permitScan) Close() error {
	p.mu.Lock()
	pit := p.pit
	p.pit, p.done = "", true
	p.mu.Unlock()
	if pit == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(p.base, closePITTimeout)
	defer cancel()
	return p.s.deletePIT(ctx, pit)
}
