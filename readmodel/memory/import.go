package memory

import (
	"errors"
	"fmt"
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Import builds a Store's whole state from batches that are already one
// consistent state (a snapshot, Export's output), faster than Apply can:
// Apply clones each batch, waits for the standby side's readers and
// applies every batch to the two sides one after the other, inserting
// into each index item by item. An Import builds two new sides at once,
// one goroutine each, from the batches as they are (it takes them over),
// with the permit indexes bulk loaded: permits in index order (Export
// writes them so) append to their B-trees instead of being inserted, and
// the per-geo indexes derived from a geo's permits (filter postings,
// valuation order, month stats) are built once at the end, one geo at a
// time (permit_bulk.go); any other order gives the same state, only
// slower. Commit then makes
// the new sides the Store's, replacing what it held; readers see the old
// state until then and the whole new one after, never a part.
//
// Batches written with Apply while an Import runs (serve's embedded feed
// runs beside the Kafka indexer that loads the snapshot) are kept and
// applied to the new sides too when it commits, so none is lost; the
// version rule makes their order against the imported documents
// irrelevant.
//
// Use: NewImport, Add every batch in order, then Commit (or Abort). One
// Import at a time.
type Import struct {
	s       *Store
	sides   [2]*side
	in      [2]chan *readmodel.Batch
	wg      sync.WaitGroup
	err     error // a delete of an unknown kind (Add)
	done    bool
	journal []*readmodel.Batch // Apply's batches meanwhile (Store.journal)
}

// NewImport starts an Import into s.
func (s *Store) NewImport() *Import {
	im := &Import{s: s}
	s.wmu.Lock()
	s.journal = &im.journal
	s.wmu.Unlock()
	for i := range im.sides {
		var r Resolver
		if s.newResolver != nil {
			r = s.newResolver()
		}
		d := newSide(r)
		d.bulk, d.deferGeo = true, true
		im.sides[i] = d
		ch := make(chan *readmodel.Batch, 8)
		im.in[i] = ch
		im.wg.Go(func() {
			for b := range ch {
				d.apply(b)
			}
			d.buildGeoIndexes()
		})
	}
	return im
}

// Add hands b to both new sides; the Import owns b from now on (its
// documents are stored as they are: the caller must not change them).
// It fails, applying nothing of b, on a delete of an unknown kind.
func (im *Import) Add(b readmodel.Batch) error {
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
	own := &b
	for _, ch := range im.in {
		ch <- own // both sides read it, neither changes it
	}
	return nil
}

// Commit waits for both sides to be built, applies to them what Apply
// wrote meanwhile, and makes them the Store's state, as one new version
// for readers. After an Add failed it changes nothing and returns that
// error.
func (im *Import) Commit() error {
	im.finish()
	s := im.s
	s.wmu.Lock()
	defer s.wmu.Unlock()
	im.detach()
	if im.err != nil {
		return im.err
	}
	for _, d := range im.sides {
		d.bulk = false
		for _, b := range im.journal {
			d.apply(b)
		}
	}
	// The standby side has no reader once drained, and a reader only
	// takes a side it found active: replacing it, then making it active,
	// is what Apply does to a side's contents.
	j := 1 - s.active.Load()
	s.drain(j)
	gen := max(s.sides[0].locGen, s.sides[1].locGen) + 1
	for _, d := range im.sides {
		// The stats cache keys on locGen: the new state must not meet
		// answers computed on the old one.
		d.locGen += gen
	}
	s.sides[j] = im.sides[0]
	s.pending = nil
	s.active.Store(j)
	s.seq.Add(1)
	s.drain(1 - j)
	s.sides[1-j] = im.sides[1]
	return nil
}

// Abort stops the Import; the Store keeps what it held.
func (im *Import) Abort() {
	im.finish()
	im.s.wmu.Lock()
	im.detach()
	im.s.wmu.Unlock()
}

// finish ends the Add stream and waits for both sides.
func (im *Import) finish() {
	if im.done {
		return
	}
	im.done = true
	for _, ch := range im.in {
		close(ch)
	}
	im.wg.Wait()
}

// detach stops Apply journalling for im (under the Store's writer lock).
func (im *Import) detach() {
	if im.s.journal == &im.journal {
		im.s.journal = nil
	}
}
