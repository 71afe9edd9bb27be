package memory

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Export scans (readmodel.PermitScanner). OpenPermitScan gathers, in one
// read of the active side, the permits the query pages (the search's own
// candidates, permitHits: same filters, geometry, order and checks), at
// most maxRows of them, and leaves the side; Next then expands them a page at
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
//   - the texts (descriptions, permit numbers) of the hits, copied: texts
//     are reference counted and a freed handle is reused, so a handle
//     read later could name another permit's text. A scan of many permits
//     copies the side's whole text table (one sequential copy, 16 bytes a
//     text), a smaller one each hit's texts (a random read each).
//
// The cost is the gathering (the side is held for it: about the time of
// walking that many permits of the index) and, until the scan ends, 16
// bytes a gathered permit plus its texts (16 bytes a hit, or a text).

var _ readmodel.PermitScanner = (*Store)(nil)

// OpenPermitScan implements readmodel.PermitScanner: it gathers the scan
// (above). An unknown geography or a query search refuses is answered by
// the first Next.
func (s *Store) OpenPermitScan(ctx context.Context, q readmodel.PermitQuery, maxRows int) (readmodel.PermitScan, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if maxRows <= 0 {
		maxRows = math.MaxInt
	}
	sc := &permitScan{q: q}
	_, _ = read(s, func(d *side) (struct{}, error) { sc.gather(ctx, d, maxRows); return struct{}{}, nil })
	return sc, nil
}

type permitScan struct {
	mu   sync.Mutex
	q    readmodel.PermitQuery
	err  error // the gathering's, answered by the first Next
	done bool

	geo  uint32
	hits []geoHit // not yet handed out
	// The texts of the hits: the side's whole table, copied (whole), or
	// each hit's description (descs[i]: hits[i]'s) and permit number.
	whole bool
	descs []string
	nums  map[*cpermit]string

	// view expands hits: the side's symbols and link sets as gathered,
	// and texts (the copied table, or the page's descriptions and
	// numbers).
	view *side
}

var errScanEnded = errors.New("memory: permit scan already ended")

// gather runs in one read of side d.
func (p *permitScan) gather(ctx context.Context, d *side, maxRows int) {
	p.hits, p.geo, p.err = d.permitHits(ctx, &p.q, maxRows)
	if p.err != nil {
		return
	}
	ts := d.pi.texts.strs
	p.view = &side{pi: permitIndexes{
		syms:  &symbols{strs: d.pi.syms.strs},
		links: &linkSets{sets: d.pi.links.sets},
	}}
	if len(p.hits)*wholeTexts >= len(ts) {
		// One sequential copy costs less than a random read per hit.
		p.whole = true
		p.view.pi.texts = &texts{strs: slices.Clone(ts)}
		return
	}
	p.descs = make([]string, len(p.hits))
	for i := range p.hits {
		c := p.hits[i].c
		p.descs[i] = ts[c.desc]
		if c.number != 0 {
			if p.nums == nil {
				p.nums = map[*cpermit]string{}
			}
			p.nums[c] = ts[c.number]
		}
	}
	p.view.pi.texts = &texts{strs: make([]string, 1+2*min(p.q.Limit, len(p.hits)))}
}

// wholeTexts: a scan of at least 1/wholeTexts as many permits as the side
// has texts copies the whole text table rather than each hit's texts
// (BenchmarkPermitScanOpenState measures both; a variable for it).
var wholeTexts = 8

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
		if p.whole {
			out.Permits = append(out.Permits, p.view.permitHit(&p.q, p.geo, h, h.c))
			continue
		}
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
	if !p.whole {
		clear(ts)
	}
	if n < len(p.hits) {
		out.Next = permitKeyOf(&p.q, &p.hits[n-1])
		p.hits = p.hits[n:]
		if !p.whole {
			p.descs = p.descs[n:]
		}
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
