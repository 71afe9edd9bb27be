// Package memory is the embedded read-model backend: every index lives in
// process, and reads never wait for writes.
//
// # Left-right
//
// A Store holds two complete copies of the read model (sides). Readers use
// the active side: a reader counts itself in on that side, checks the side
// is still active (else counts itself out and retries), reads, and counts
// itself out. No lock is taken on the read path. Writers take turns (one
// mutex among writers) on the standby side: wait until its last readers
// have left (reads are short), apply the batch the active side got last
// time and then the new batch, and make the standby side active. A reader
// therefore sees whole batches, never part of one, and is never held up by
// a batch being applied. Calls that arrive while another writes are
// applied together, the leads beside the rest (apply.go).
//
// The price: each batch is applied twice (twice the CPU on the write path)
// and both sides hold their own indexes (about twice the heap of a single
// copy; documents of a batch, cloned once when Apply is called, are shared
// by both sides, since neither changes a stored document in place; the
// compact permit and property forms, intern tables and indexes are per
// side). The bytes/permit metric of BenchmarkPermitsPageState measures
// it.
//
// Visibility: a batch is visible once Apply returns, except while an
// Export (a snapshot's) reads the active side: Apply then writes the
// standby side only and returns, and what it wrote becomes visible, all
// at once, when the export ends (export_hold.go). The bound is the
// export's time, seconds at a million permits; a replay defers
// visibility to its end the same way (replay.go).
//
// An Import (import.go) builds a whole state, a snapshot's, without
// Apply's turns: one side first, readable from Commit on, then the other
// in the background; the first write after Commit waits for the second
// side, as a write needs both.
//
// Nothing internal is handed out: every document returned is a copy.
package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// Resolver ranks locations for free text. Each side has its own, kept in
// step with that side's location table: Upsert and Delete are called by
// the side's writer while no reader uses the side, Search by readers.
type Resolver interface {
	Upsert(loc readmodel.Location)
	Delete(geoID string)
	Search(q readmodel.ResolveQuery) []readmodel.Candidate
}

// Params configure a Store.
type Params struct {
	// NewResolver makes a side's Resolver (it is called twice: one per
	// side); nil makes ResolveCandidates ErrUnsupported but for the
	// property scope.
	NewResolver func() Resolver
	// StatsCacheSize bounds the stats answers kept (statscache.go); 0
	// means 4096, negative turns the cache off.
	StatsCacheSize int
	// Background, when set, is called as work starts that runs beside
	// the readers, and the function it returns once that work has
	// ended: a second side's build in the background while readers read
	// the first (standby.go), ended once the side is in place or the
	// build abandoned; and each write step (apply.go), but not a
	// replay's, which nobody reads. Serve gives the runtime spare Ps
	// meanwhile (internal/spareprocs).
	Background func() (end func())
}

// Store is the memory backend. The zero value is not usable; call New.
type Store struct {
	sides   [2]*side
	active  atomic.Uint32 // index of the side readers use
	readers [2]readerCount

	wmu     sync.Mutex         // one writer at a time
	pending []*readmodel.Batch // applied to the active side, not yet to the standby one

	queue applyQueue // Apply calls waiting for the writer (apply.go)

	epoch uint64
	seq   atomic.Uint64

	stats *statsCache

	newResolver func() Resolver // Params.NewResolver, for the sides an Import builds
	background  func() func()   // Params.Background
	// journal, while an Import runs, keeps the batches Apply wrote
	// meanwhile, for Commit to apply to the new sides too (import.go).
	journal *[]*readmodel.Batch
	// standby, after an Import's Commit, is its second side being built
	// in the background: the standby slot is stale until settle puts it
	// there, so every write settles first (import.go).
	standby *standbyBuild
	// noBuild is set by StopBuilding: no second side is built in the
	// background from then on (standby.go).
	noBuild bool
	// replay, while a replay is open, keeps the batches written to the
	// standby side only, for EndReplay (replay.go); replaying mirrors
	// replay != nil for Apply, which reads it without wmu (lentBatch).
	replay    *replayState
	replaying atomic.Bool
	// smu is the signal writer while a replay is open (apply.go,
	// commitSignals): a batch of the signal families only is applied
	// under it alone, beside the steps under wmu; squeue holds the calls
	// waiting for it. sigOpen (under smu) is true from BeginReplay to
	// EndReplay, which take smu after wmu; sigBatches (under smu) counts
	// the batches it applied, for EndReplay.
	smu        sync.Mutex
	squeue     applyQueue
	sigOpen    bool
	sigBatches int
	// held keeps the batches written to the standby side only while
	// Exports read the active side (export_hold.go).
	held []*readmodel.Batch
	// seeks is the seek logs the active side recorded for the pending
	// batches, for the standby side's write of them; seekFree the logs
	// kept for the steps to come (permit_seeklog.go).
	seeks      batchSeeks
	seekFree   []*seekLogs
	seekPlaces int64 // the places read from the logs that held (tests)
}

// readerCount counts the readers of one side, alone on its cache line.
type readerCount struct {
	n atomic.Int64
	_ [56]byte
}

var (
	_ readmodel.Reader    = (*Store)(nil)
	_ readmodel.Writer    = (*Store)(nil)
	_ readmodel.Inspector = (*Store)(nil)
	_ readmodel.Versioned = (*Store)(nil)
)

// New returns an empty Store.
func New(opts Params) *Store {
	s := &Store{epoch: rand.Uint64(), newResolver: opts.NewResolver, background: opts.Background}
	for i := range s.sides {
		var r Resolver
		if opts.NewResolver != nil {
			r = opts.NewResolver()
		}
		s.sides[i] = newSide(r)
	}
	size := opts.StatsCacheSize
	if size == 0 {
		size = 4096
	}
	if size > 0 {
		s.stats = newStatsCache(size)
	}
	return s
}

// ReadVersion implements readmodel.Versioned: seq counts the batches that
// changed state, and is bumped just after readers switch to the new state.
func (s *Store) ReadVersion() (epoch, seq uint64) { return s.epoch, s.seq.Load() }

// enter counts the caller in as a reader of the active side; leave(c)
// counts it out.
func (s *Store) enter() (*side, *readerCount) {
	for {
		i := s.active.Load()
		c := &s.readers[i]
		c.n.Add(1)
		if s.active.Load() == i {
			return s.sides[i], c
		}
		c.n.Add(-1) // a writer swapped meanwhile: it may be writing side i
	}
}

func leave(c *readerCount) { c.n.Add(-1) }

// read runs fn on the active side.
func read[T any](s *Store, fn func(*side) (T, error)) (T, error) {
	d, c := s.enter()
	defer leave(c)
	return fn(d)
}

// Apply implements readmodel.Writer. The batch is visible to readers as a
// whole once Apply returns, and not before, but while a snapshot is
// exported: then it is visible when the export ends (export_hold.go),
// with every batch Apply took meanwhile; memory is the durability this
// backend has (see the indexer's rebuild-on-start for restarts). Apply
// keeps nothing of b: the caller may reuse its slices. A delete of an
// unknown kind fails the batch before anything is applied.
func (s *Store) Apply(ctx context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	if err := ctx.Err(); err != nil {
		return readmodel.ApplyResult{}, err
	}
	for _, d := range b.Deletes {
		if !knownKind(d.Kind) {
			return readmodel.ApplyResult{}, fmt.Errorf("memory: delete of unknown kind %q", d.Kind)
		}
	}
	if s.replaying.Load() {
		return s.commit(lentBatch(&b), &b), nil // apply.go
	}
	return s.commit(cloneBatch(&b), nil), nil
}

// lentBatch is a copy of b (as cloneBatch) but for its permits and
// properties, which it shares with b: a batch written while a replay is
// open (replay.go). A side keeps a permit and a property in compact form
// only (compactPermit, compactProperty: values, interned link lists and
// the documents' strings, which no caller changes), so their copies were
// read once and dropped: in the real mix's replay about 110 MB a round
// of garbage, new pages while a replay runs without a collection
// (docs/kafka-history.md, "Sixty-fifth session"). Every other kind is kept as
// stored (a location by pointer, shared by both sides) and is copied.
// Should the replay end before the batch's step (commit), the step
// copies the whole batch from b, which Apply's caller still holds.
func lentBatch(b *readmodel.Batch) *readmodel.Batch {
	rest := *b // every other field as cloneBatch copies it, one added later too
	rest.Permits, rest.Properties = nil, nil
	out := cloneBatch(&rest)
	out.Permits, out.Properties = b.Permits, b.Properties
	return out
}

// drain waits until side i has no reader. Readers that arrive now see the
// other side active and do not stay.
func (s *Store) drain(i uint32) {
	for spins := 0; s.readers[i].n.Load() != 0; spins++ {
		if spins < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

func knownKind(k readmodel.Kind) bool {
	switch k {
	case readmodel.KindLocation, readmodel.KindPermit, readmodel.KindProperty,
		readmodel.KindGeoSignal, readmodel.KindLead, readmodel.KindCatalog:
		return true
	}
	return false
}

// cloneBatch deep-copies b, so the Store owns every document it shares
// between its sides. The permits' and properties' links and numbers, and
// the locations' lists, are copied into one allocation per kind of field
// for the whole batch (batchArena, clones.go) instead of one per field
// and document.
func cloneBatch(b *readmodel.Batch) *readmodel.Batch {
	out := &readmodel.Batch{
		Locations:  make([]readmodel.Location, len(b.Locations)),
		Permits:    make([]readmodel.Permit, len(b.Permits)),
		Properties: make([]readmodel.Property, len(b.Properties)),
		GeoSignals: make([]readmodel.GeoSignal, len(b.GeoSignals)),
		Leads:      make([]readmodel.Lead, len(b.Leads)),
		Catalog:    make([]readmodel.CatalogEntry, len(b.Catalog)),
		Deletes:    append([]readmodel.Delete(nil), b.Deletes...),
	}
	a := newBatchArena(b)
	for i, l := range b.Locations {
		out.Locations[i] = a.location(l)
	}
	for i, p := range b.Permits {
		out.Permits[i] = a.permit(p)
	}
	for i, p := range b.Properties {
		out.Properties[i] = a.property(p)
	}
	for i, g := range b.GeoSignals {
		out.GeoSignals[i] = g.Clone()
	}
	for i, l := range b.Leads {
		out.Leads[i] = a.lead(l)
	}
	for i, c := range b.Catalog {
		out.Catalog[i] = c.Clone()
	}
	return out
}

// Location implements readmodel.Reader (store_side.go).
func (s *Store) Location(ctx context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	return read(s, func(d *side) (readmodel.Location, error) { return d.Location(ctx, geo) })
}

// ResolveCandidates implements readmodel.Reader (store_side.go).
func (s *Store) ResolveCandidates(ctx context.Context, q readmodel.ResolveQuery) ([]readmodel.Candidate, error) {
	return read(s, func(d *side) ([]readmodel.Candidate, error) { return d.ResolveCandidates(ctx, q) })
}

// SearchPermits implements readmodel.Reader (permits.go).
func (s *Store) SearchPermits(ctx context.Context, q readmodel.PermitQuery) (readmodel.PermitPage, error) {
	return read(s, func(d *side) (readmodel.PermitPage, error) { return d.SearchPermits(ctx, q) })
}

// SearchProperties implements readmodel.Reader (properties.go).
func (s *Store) SearchProperties(ctx context.Context, q readmodel.PropertyQuery) ([]readmodel.PropertyMatch, error) {
	return read(s, func(d *side) ([]readmodel.PropertyMatch, error) { return d.SearchProperties(ctx, q) })
}

// GeoSignalsForLocation implements readmodel.Reader (signals.go).
func (s *Store) GeoSignalsForLocation(ctx context.Context, geo readmodel.GeoRef, keys []string) (readmodel.LocationSignals, error) {
	return read(s, func(d *side) (readmodel.LocationSignals, error) { return d.GeoSignalsForLocation(ctx, geo, keys) })
}

// SearchGeoSignals implements readmodel.Reader (signals.go).
func (s *Store) SearchGeoSignals(ctx context.Context, q readmodel.GeoSignalQuery) (readmodel.GeoSignalPage, error) {
	return read(s, func(d *side) (readmodel.GeoSignalPage, error) { return d.SearchGeoSignals(ctx, q) })
}

// Catalog implements readmodel.Reader (signals.go).
func (s *Store) Catalog(ctx context.Context, q readmodel.CatalogQuery) ([]readmodel.CatalogEntry, error) {
	return read(s, func(d *side) ([]readmodel.CatalogEntry, error) { return d.Catalog(ctx, q) })
}

// PermitLeads implements readmodel.Reader (signals.go).
func (s *Store) PermitLeads(ctx context.Context, q readmodel.LeadQuery) (readmodel.LeadPage, error) {
	return read(s, func(d *side) (readmodel.LeadPage, error) { return d.PermitLeads(ctx, q) })
}

// PermitStats implements readmodel.Reader (signals.go, lead_stats.go). A
// repeated query is answered from the stats cache until a write touches
// its anchor's leads or any location (statscache.go).
func (s *Store) PermitStats(ctx context.Context, q readmodel.StatsQuery) (readmodel.PermitStats, error) {
	return read(s, func(d *side) (readmodel.PermitStats, error) {
		if s.stats == nil {
			return d.PermitStats(ctx, q)
		}
		key := d.statsKey(q)
		if st, ok := s.stats.get(key); ok {
			return st, nil
		}
		st, err := d.PermitStats(ctx, q)
		if err == nil {
			s.stats.put(key, st)
		}
		return st, err
	})
}

// Health implements readmodel.Reader: the active side's live counts.
func (s *Store) Health(ctx context.Context) (readmodel.Health, error) {
	return read(s, func(d *side) (readmodel.Health, error) {
		return readmodel.Health{Backend: "memory", Counts: d.liveCounts()}, nil
	})
}

// liveCounts is the side's number of live documents of each kind.
func (d *side) liveCounts() map[readmodel.Kind]int64 {
	return map[readmodel.Kind]int64{
		readmodel.KindLocation:  int64(d.locations.live),
		readmodel.KindPermit:    int64(d.permits.live),
		readmodel.KindProperty:  int64(d.props.live),
		readmodel.KindGeoSignal: int64(d.geoSignals.live),
		readmodel.KindLead:      int64(d.leads.live),
		readmodel.KindCatalog:   int64(d.catalog.live),
	}
}

// Counts is Health's Counts, a shorthand for tests and tools that hold a
// *Store.
func (s *Store) Counts(ctx context.Context) (map[readmodel.Kind]int64, error) {
	h, err := s.Health(ctx)
	return h.Counts, err
}

// Digest implements readmodel.Inspector (readmodel.Digest over every live
// document of the active side).
func (s *Store) Digest(ctx context.Context) (string, error) {
	return read(s, func(d *side) (string, error) {
		var dg readmodel.Digest
		add := func(k readmodel.Kind) func(string, int64) {
			return func(id string, v int64) { dg.Add(k, id, v) }
		}
		eachVersion(d.locations.table, add(readmodel.KindLocation))
		eachVersion(d.permits, add(readmodel.KindPermit))
		d.props.each(func(e *propEntry) { dg.Add(readmodel.KindProperty, d.propString(e.ref), e.version) })
		eachVersion(d.geoSignals, add(readmodel.KindGeoSignal))
		eachVersion(d.leads, add(readmodel.KindLead))
		eachVersion(d.catalog, add(readmodel.KindCatalog))
		return dg.Sum(), nil
	})
}

func eachVersion[T any](t *table[T], fn func(id string, v int64)) {
	t.each(func(id string, v int64, _ T) { fn(id, v) })
}
