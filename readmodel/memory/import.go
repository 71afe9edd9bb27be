package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Import builds a Store's whole state from batches that are already one
// consistent state (a snapshot, Export's output), faster than Apply can:
// Apply clones each batch, waits for the standby side's readers and
// applies every batch to the two sides one after the other, inserting
// into each index item by item. An Import builds the new state's first
// side while the batches arrive, from the batches as they are (it takes
// them over), with the permit indexes bulk loaded: permits in index
// order (Export writes them so) append to their B-trees instead of being
// inserted, and the per-geo indexes derived from a geo's permits (filter
// postings and valuation order only for a geo of postingMin permits or
// more, as Apply keeps them; month stats) are built once at the end, one
// geo at a time (permit_bulk.go); any other order gives the same state,
// only slower.
//
// Commit makes that first side the Store's active side: readers see the
// old state until then and the whole new one after, never a part. The
// first side is lean (permit_bulk.go): built without the permit indexes
// that only speed reads up (per-geo postings, valuation orders and month
// stats, text and map cells; its leads' trees are left to their
// readers), which readers do without, so they have it sooner; settle
// completes it. The second side is built after it, in
// the background, from the same batches (so the two builds do not share
// the CPU before readers have the first); until it is in place (and the
// first completed) the Store's next write (Apply, or another Import's
// Commit) waits for it, since a write needs both sides. Settle waits for
// it too. A restart is thus ready to read after one lean side is built,
// and writes the moment both are whole; the Store holds the import's
// batches until the second side has taken them. An Import of lent
// batches (AddLent: a snapshot's load, which decodes the next batches
// into the arrays given back) holds none: its second side is built from
// SecondFrom's source (the file decoded again), else as a copy of the
// first.
//
// Batches written with Apply while an Import runs (serve's embedded feed
// runs beside the Kafka indexer that loads the snapshot), every batch of
// a group commit (apply.go), are kept and
// applied to both new sides too when it commits, so none is lost; the
// version rule makes their order against the imported documents
// irrelevant.
//
// Use: NewImport, Add every batch in order, then Commit (or Abort). One
// Import at a time.
type Import struct {
	s       *Store
	first   *side
	in      chan importBatch // to the first side's builder
	batches []importBatch    // every batch, for the second side
	wg      sync.WaitGroup
	err     error // a delete of an unknown kind (Add)
	dup     error // ErrDuplicateID: the builder's, read after it ended
	done    bool
	lent    bool                     // AddLent's: no batch kept (buildLent)
	again   SecondSource             // SecondFrom's
	journal []*readmodel.Batch       // Apply's batches meanwhile (Store.journal)
	sizes   map[readmodel.Kind]int64 // Reserve's, for the second side too
	// reserved is closed once Reserve's tables are made (nil: no
	// Reserve); the builder waits for it before the first batch.
	reserved chan struct{}
}

// importBatch is a batch an Import was given, with the shapes of its
// link lists when known (AddShaped), and, for a lent one (AddLent), what
// gives it back.
type importBatch struct {
	b      *readmodel.Batch
	shapes *readmodel.LinkShapes
	done   func()
	// unique: no permit id of b is in the side yet (a snapshot's batch,
	// AddLent: each id once), so the compactor stores each permit
	// without looking; the side's table is checked once at the end
	// (table.duplicated), and a duplicate fails the build.
	unique bool
}

// holdStandby, when a test sets it, runs before a second side is built
// in the background (HoldStandby; standby.go).
var holdStandby func()

// NewImport starts an Import into s.
func (s *Store) NewImport() *Import {
	s.EndReplay() // an Import's journal follows the readers' state (replay.go)
	im := &Import{s: s, first: s.bulkSide(), in: make(chan importBatch, 8)}
	s.wmu.Lock()
	s.release() // steps held for an Export (export_hold.go) become the readers' first
	s.journal = &im.journal
	s.wmu.Unlock()
	d := im.first
	d.lean = true   // readers have it sooner; settle completes it (permit_bulk.go)
	d.resolveLate() // built from the loaded locations at endBulk (resolver_late.go)
	im.wg.Go(func() {
		st := newImportStages(d)
		waited := false
		wait := func() { // Reserve's tables, which it set before the first Add or the end
			if !waited && im.reserved != nil {
				<-im.reserved
			}
			waited = true
		}
		unique := false
		for b := range im.in {
			wait()
			st.add(b)
			if b.done != nil {
				b.done() // the compactor has copied what the side keeps of it
			}
			unique = unique || b.unique
		}
		wait()
		st.close()
		d.endBulk()
		if unique && d.permits.duplicated() {
			im.dup = ErrDuplicateID
		}
	})
	return im
}

// Reserve sizes the new sides' tables for counts documents and
// tombstones of each kind (a snapshot's, snapshot.LoadSized), so that
// they do not grow (rehash) as the batches come: with the collector off
// for a load, every table a growth leaves behind is fresh memory too. The
// counts are a hint (a wrong one costs memory or growth, never a wrong
// state). Only before the first Add, and once: otherwise it does
// nothing. The tables are made in the background (at 1M permits a sixth
// of a second the decoding of the first batches can use), and the
// builder waits for them before the first batch.
func (im *Import) Reserve(counts map[readmodel.Kind]int64) {
	if im.done || len(im.batches) > 0 || im.lent || im.reserved != nil {
		return
	}
	im.sizes = counts
	im.reserved = make(chan struct{})
	d := im.first // the builder touches it after the first Add only
	go func() {
		defer close(im.reserved)
		d.reserve(counts)
	}()
}

// reserve sizes an empty side's tables for counts documents of each
// kind (Import.Reserve).
func (d *side) reserve(counts map[readmodel.Kind]int64) {
	size := func(k readmodel.Kind) int { return int(min(counts[k], 1<<30)) }
	if len(d.locations.rows) == 0 {
		d.locations.rows = make(map[string]*row[*readmodel.Location], size(readmodel.KindLocation))
	}
	if len(d.permits.rows) == 0 {
		d.permits.rows = make(map[string]*row[*cpermit], size(readmodel.KindPermit))
	}
	if len(d.pf.text.numbers) == 0 {
		// Nearly one permit number per permit: grown from empty, the
		// map's rehashes were about 3% of a snapshot load's CPU.
		d.pf.text.numbers = make(map[string]slotKeys, size(readmodel.KindPermit))
	}
	if len(d.props.m) == 0 {
		// An entry per property document at least (a permit's property
		// without a document of its own adds one).
		d.props.m = make(map[propRef]*propEntry, size(readmodel.KindProperty))
	}
	if len(d.props.byStreetCity) == 0 {
		// Nearly one street and city per property (165,508 for 169,193
		// properties at 300,000 generated permits).
		d.props.byStreetCity = make(map[uint64]*propEntry, size(readmodel.KindProperty))
	}
	if len(d.geoSignals.rows) == 0 {
		d.geoSignals.rows = make(map[string]*row[readmodel.GeoSignal], size(readmodel.KindGeoSignal))
	}
	if len(d.leads.rows) == 0 {
		d.leads.rows = make(map[string]*row[*leadRec], size(readmodel.KindLead))
	}
	if len(d.catalog.rows) == 0 {
		d.catalog.rows = make(map[string]*row[readmodel.CatalogEntry], size(readmodel.KindCatalog))
	}
	// The resolver's index too (resolve.Index.Reserve). A late one
	// (resolver_late.go) has no Reserve: it is made to size for the
	// locations it is built from.
	if rr, ok := d.resolver.(interface{ Reserve(n int) }); ok {
		rr.Reserve(size(readmodel.KindLocation))
	}
}

// bulkSide is a new, empty side for an Import.
func (s *Store) bulkSide() *side {
	var r Resolver
	if s.newResolver != nil {
		r = s.newResolver()
	}
	d := newSide(r)
	d.bulk = true
	d.deferIndexes()
	return d
}

// deferIndexes starts, on a new side nobody reads while it is written
// (an Import's, a replay's), the deferral of its per-geo permit indexes
// (permit_bulk.go) and of its leads' trees (lead_bulk.go).
func (d *side) deferIndexes() {
	d.deferGeoIndexes()
	d.signals.leads.deferLeadTrees()
}

// buildDeferred ends both deferrals: the side indexes as Apply does from
// now on. The lead keys are left to their readers (lead_bulk.go).
func (d *side) buildDeferred() {
	d.buildGeoIndexes()
	d.signals.leads.readersBuild()
}

// endBulk ends the bulk load of a side: the deferred indexes are built
// and writes index as usual from now on.
func (d *side) endBulk() {
	d.startResolver() // a late one's build, in the background (resolver_late.go)
	d.buildDeferred()
	d.bulk = false
	d.pi.links.byShape = nil // the Import's shapes (AddShaped)
}

// ErrDuplicateID is Commit's error when an Import of lent batches
// (AddLent, a snapshot's: each document id once) was given a permit id
// twice: the new state is not the one its documents describe, and the
// Store keeps what it held.
var ErrDuplicateID = errors.New("memory: an import of unique documents was given a permit id twice")

// Add hands b to the new sides; the Import owns b from now on (its
// documents are stored as they are: the caller must not change them).
// It fails, applying nothing of b, on a delete of an unknown kind.
func (im *Import) Add(b readmodel.Batch) error {
	return im.AddShaped(b, nil)
}

// AddShaped is Add with the shapes of b's link lists
// (readmodel.LinkShapes, snapshot.LoadShaped): each side converts the
// links of one shape once and finds the same link set for every other
// document of that shape whose property links are all to its own
// property (any other document's links are converted as Add's are). The
// shapes are the Import's from now on; nil is Add.
func (im *Import) AddShaped(b readmodel.Batch, shapes *readmodel.LinkShapes) error {
	if err := im.check(&b); err != nil {
		return err
	}
	if im.lent {
		return errors.New("memory: an import of lent batches takes every batch lent (AddLent)")
	}
	own := importBatch{b: &b, shapes: shapes}
	im.batches = append(im.batches, own) // both sides read it, neither changes it
	im.in <- own
	return nil
}

// LentApply is what hands an Import's second side its batches again
// (SecondFrom): snapshot.LentApply.
type LentApply = func(b readmodel.Batch, shapes *readmodel.LinkShapes, done func()) error

// SecondSource hands an Import's second side the batches of its first
// once more, lent too: a *snapshot.Again.
type SecondSource interface {
	// Run hands apply every batch again; an error means the batches
	// were not all given (nor all as the first time).
	Run(apply LentApply) error
	// Close releases the source when Run is not called (or after it).
	Close() error
}

// SecondFrom gives an Import of lent batches (AddLent) the source of its
// second side, built from it in the background after Commit. Without
// one, or when Run fails (the file changed since the load), the second
// side is a copy of the first. The Import closes src once done with it,
// or at once when it will not use it (Abort, a failed Commit, a second
// side not built: StopBuilding).
func (im *Import) SecondFrom(src SecondSource) { im.again = src }

// closeSource closes SecondFrom's source, if any.
func (im *Import) closeSource() {
	if im.again != nil {
		im.again.Close()
		im.again = nil
	}
}

// check refuses a batch after Commit or Abort, and one with a delete of
// an unknown kind (recorded for Commit too).
func (im *Import) check(b *readmodel.Batch) error {
	if im.done {
		return errors.New("memory: import already committed or aborted")
	}
	for _, d := range b.Deletes {
		if !knownKind(d.Kind) {
			err := fmt.Errorf("memory: delete of unknown kind %q", d.Kind)
			im.err = errors.Join(im.err, err)
			return err
		}
	}
	return nil
}

// AddLent is AddShaped for a batch whose permits and properties arrays
// and their geo link arrays are only lent (snapshot.LoadLent): the first
// side copies what it keeps of them (compactPermit, compactProperty: the
// strings apart, which never change) and then calls done, after which
// the caller may write into those arrays again; the rest of b is the
// Import's, as with Add. Since the batch is not kept, the second side is
// built from SecondFrom's source, else as a copy of the first
// (buildLent). An Import takes every batch lent, or none. Lent batches
// are a snapshot's, which holds each document once: a permit id given
// twice over them fails Commit (ErrDuplicateID).
func (im *Import) AddLent(b readmodel.Batch, shapes *readmodel.LinkShapes, done func()) error {
	if err := im.check(&b); err != nil {
		return err
	}
	if len(im.batches) > 0 {
		return errors.New("memory: an import of batches kept (Add) takes no lent one")
	}
	im.lent = true
	im.in <- importBatch{b: &b, shapes: shapes, done: done, unique: true}
	return nil
}

// Apply makes an Import a readmodel.Writer: it Adds a copy of b (the
// caller keeps b, as Apply's contract says), so an indexer can project a
// log into a new state built in bulk (the ingest benchmark fills its
// large store so). Its result counts every document and delete as
// applied: an Import counts nothing until Commit (readmodel.Health then
// counts what it holds).
func (im *Import) Apply(ctx context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	if err := ctx.Err(); err != nil {
		return readmodel.ApplyResult{}, err
	}
	if err := im.Add(*cloneBatch(&b)); err != nil {
		return readmodel.ApplyResult{}, err
	}
	return readmodel.ApplyResult{Applied: b.Len()}, nil
}

var _ readmodel.Writer = (*Import)(nil)

// Commit waits for the first side to be built, applies to it what Apply
// wrote meanwhile, and makes it the Store's state, as one new version for
// readers; the second side follows in the background (see Import). After
// an Add failed it changes nothing and returns that error.
func (im *Import) Commit() error {
	im.finish()
	s := im.s
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.settle() // an earlier Import's second side
	im.detach()
	if err := errors.Join(im.err, im.dup); err != nil {
		im.closeSource()
		return err
	}
	a := im.first
	for _, b := range im.journal {
		a.apply(b)
	}
	// The standby side has no reader once drained, and a reader only
	// takes a side it found active: replacing it, then making it active,
	// is what Apply does to a side's contents.
	j := 1 - s.active.Load()
	s.drain(j)
	// The stats cache keys on locGen: the new state must not meet
	// answers computed on the old one.
	gen := max(s.sides[0].locGen, s.sides[1].locGen) + 1
	a.locGen += gen
	s.sides[j] = a
	s.pending = nil
	s.active.Store(j)
	s.seq.Add(1)
	// The side j left is stale now: no write may use it before settle
	// has put the second side in its place.
	st := s.newStandby(im.journal, gen)
	if im.lent {
		if st.abandoned {
			im.closeSource()
		} else {
			go im.buildLent(st, a)
		}
		return nil
	}
	batches := im.batches
	im.batches = nil
	if st.abandoned { // StopBuilding: the next write builds it (standby.go)
		return nil
	}
	sizes := im.sizes
	go func() {
		st.begin(a)
		if sizes != nil {
			st.side.reserve(sizes) // here: its allocations took a sixth of a second of Commit at 1M permits
		}
		stages := newImportStages(st.side)
		for i, b := range batches {
			if st.quit.Load() {
				break
			}
			stages.add(b)
			batches[i] = importBatch{} // the Store lets go of what both sides have taken
		}
		stages.close()
		ok := !st.quit.Load()
		if ok {
			st.side.endBulk()
			st.side.signals.leads.buildLike(a.signals.leads) // the keys a's readers read, and the large ones (lead_bulk.go)
		}
		st.finish(s, ok)
	}()
	return nil
}

// Abort stops the Import; the Store keeps what it held.
func (im *Import) Abort() {
	im.finish()
	im.batches = nil
	im.closeSource()
	im.s.wmu.Lock()
	im.detach()
	im.s.wmu.Unlock()
}

// finish ends the Add stream and waits for the first side.
func (im *Import) finish() {
	if im.done {
		return
	}
	im.done = true
	close(im.in)
	im.wg.Wait()
}

// detach stops Apply journalling for im (under the Store's writer lock).
func (im *Import) detach() {
	if im.s.journal == &im.journal {
		im.s.journal = nil
	}
}

// Settle returns once both sides hold the Store's state: at once but
// after an Import, whose second side is built after Commit (import.go).
// Writes wait for that by themselves; tests and benchmarks call Settle to
// measure or check it.
func (s *Store) Settle() {
	s.wmu.Lock()
	s.settle()
	s.wmu.Unlock()
}

// buildLent builds the second side of an Import of lent batches (its
// goroutine): from SecondFrom's source, as the first side was built,
// then the journal (settle applies it); else, or when the source fails,
// as a copy of a (the first side, active and read by readers only: no
// write changes it before settle has this build in place), which holds
// the journal already and whose counters it copies.
func (im *Import) buildLent(st *standbyBuild, a *side) {
	st.begin(a)
	if im.sizes != nil {
		st.side.reserve(im.sizes)
	}
	if im.again != nil {
		stages := newImportStages(st.side)
		err := im.again.Run(func(b readmodel.Batch, shapes *readmodel.LinkShapes, done func()) error {
			if st.quit.Load() {
				return errQuit
			}
			stages.add(importBatch{b: &b, shapes: shapes, unique: true})
			done()
			return nil
		})
		stages.close()
		if err == nil && st.side.permits.duplicated() { // as the first side's (Commit refused that)
			err = ErrDuplicateID
		}
		im.closeSource()
		switch {
		case st.quit.Load():
			st.finish(im.s, false)
			return
		case err == nil:
			st.side.endBulk()
			st.side.signals.leads.buildLike(a.signals.leads) // the keys a's readers read, and the large ones (lead_bulk.go)
			st.finish(im.s, true)
			return
		}
		// The source failed part way: start again from a copy.
		st.side = im.s.bulkSide()
		st.side.quit = &st.quit
		if im.sizes != nil {
			st.side.reserve(im.sizes)
		}
	}
	st.journal, st.locGen = nil, 0
	st.finish(im.s, a.copySide(st.side, &st.quit) != nil)
}
