package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Export scans (readmodel.PermitScanner). OpenPermitScan gathers, in one
// read of the active side, the permits the query pages (the search's own
// candidates, permitHits: same filters, geometry, order and checks), at
// most max of them, and leaves the side; Next then expands them a page at
// a time without entering a side again. So a scan reads one version (the
// one readers saw when it opened) however slowly its client reads, and a
// writer waits for it at most once, for the gathering (the writer that
// next wants that side drains its readers), never for the stream.
//
// What a scan keeps after it has left the side, and why writers cannot
// change it:
//   - each hit's *cpermit: immutable once stored (a new version is a new
//     cpermit; putPermit sets fields only before it indexes one);
//   - the side's symbol strings and link sets, as slice headers: both
//     only ever grow (symbols are never freed, a link set never changes),
//     so the prefix the scan saw is never written again;
//   - each hit's description and permit number, as strings: texts are
//     reference counted and a freed handle is reused, so a handle read
//     later could name another permit's text.
//
// The cost is the gathering (the side is held for it: about the time of
// walking that many permits of the index) and 32 bytes a gathered permit
// until the scan ends.

var _ readmodel.PermitScanner = (*Store)(nil)

// OpenPermitScan implements readmodel.PermitScanner: it gathers the scan
// (above). An unknown geography or a query search refuses is answered by
// the first Next.
func (s *Store) OpenPermitScan(ctx context.Context, q readmodel.PermitQuery, max int) (readmodel.PermitScan, error) {
	if q.Limit < 1 || q.Limit > 100 {
		return nil, fmt.Errorf("%w: permit limit %d", readmodel.ErrInvalidQuery, q.Limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if max <= 0 {
		max = math.MaxInt
	}
	sc := &permitScan{q: q}
	_, _ = read(s, func(d *side) (struct{}, error) { sc.gather(ctx, d, max); return struct{}{}, nil })
	return sc, nil
}

type permitScan struct {
	mu   sync.Mutex
	q    readmodel.PermitQuery
	err  error // the gathering's, answered by the first Next
	done bool

	geo   uint32
	hits  []geoHit // not yet handed out
	descs []string // descs[i]: the description of hits[i]
	nums  map[*cpermit]string

	// view expands hits: the side's symbols and link sets as gathered,
	// and texts holding the page's descriptions and numbers.
	view *side
}

var errScanEnded = errors.New("memory: permit scan already ended")

// gather runs in one read of side d.
func (p *permitScan) gather(ctx context.Context, d *side, max int) {
	p.hits, p.geo, p.err = d.permitHits(ctx, &p.q, max)
	if p.err != nil {
		return
	}
	p.descs = make([]string, len(p.hits))
	for i := range p.hits {
		c := p.hits[i].c
		p.descs[i] = d.pi.texts.str(c.desc)
		if c.number != 0 {
			if p.nums == nil {
				p.nums = map[*cpermit]string{}
			}
			p.nums[c] = d.pi.texts.str(c.number)
		}
	}
	p.view = &side{pi: permitIndexes{
		syms:  &symbols{strs: d.pi.syms.strs},
		links: &linkSets{sets: d.pi.links.sets},
		texts: &texts{strs: make([]string, 1+2*min(p.q.Limit, len(p.hits)))},
	}}
}

// Next implements readmodel.PermitScan.
func (p *permitScan) Next(ctx context.Context) (readmodel.PermitPage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return readmodel.PermitPage{}, errScanEnded
	}
	if err := ctx.Err(); err != nil {
		return readmodel.PermitPage{}, err
	}
	if p.err != nil {
		p.release()
		return readmodel.PermitPage{}, p.err
	}
	n := min(len(p.hits), p.q.Limit)
	out := readmodel.PermitPage{Permits: make([]readmodel.PermitHit, 0, n)}
	ts := p.view.pi.texts.strs
	for i := range n {
		h := &p.hits[i]
		c := *h.c // the page's text handles: 2i+1 and 2i+2
		if c.desc != 0 {
			c.desc = uint32(2*i + 1)
			ts[c.desc] = p.descs[i]
		}
		if c.number != 0 {
			c.number = uint32(2*i + 2)
			ts[c.number] = p.nums[h.c]
		}
		out.Permits = append(out.Permits, p.view.permitHit(&p.q, p.geo, h, &c))
	}
	clear(ts)
	if n < len(p.hits) {
		out.Next = permitKeyOf(&p.q, &p.hits[n-1])
		p.hits, p.descs = p.hits[n:], p.descs[n:]
	} else {
		p.release()
	}
	return out, nil
}

// Close implements readmodel.PermitScan.
func (p *permitScan) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release()
	return nil
}

// release ends the scan and lets go of what it held.
func (p *permitScan) release() {
	p.done = true
	p.hits, p.descs, p.nums, p.view = nil, nil, nil, nil
}
