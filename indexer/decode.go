// Decoding a batch of messages: fanned out over workers from parallelMin, merged in place, with pooled batch slices.

package indexer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/spareprocs"
	"github.com/permitd/permitd/readmodel"
)

// merge appends parts[1:] in order to parts[0] (which decodeAll sized
// for the whole batch), in place: parts[0] is then the batch, and the
// other parts' slices go back to the pool (release). Before, each batch
// decoded on two workers left its second part's slices (about half of
// the batch's documents) as garbage: in the real mix's replay about 55
// MB a round, new pages while a replay runs without a collection
// (docs/kafka-history.md, "Sixty-fifth session").
func (ix *Indexer) merge(parts []readmodel.Batch) {
	for i := range parts[1:] {
		parts[0].Append(parts[1+i])
		ix.release(&parts[1+i])
	}
}

// release clears b's documents (dropping their references) and pools its
// slices for the next batch.
func (ix *Indexer) release(b *readmodel.Batch) {
	r := &readmodel.Batch{
		Locations:  emptied(b.Locations),
		Permits:    emptied(b.Permits),
		Properties: emptied(b.Properties),
		GeoSignals: emptied(b.GeoSignals),
		Leads:      emptied(b.Leads),
		Catalog:    emptied(b.Catalog),
		Deletes:    emptied(b.Deletes),
		Awaiting:   emptied(b.Awaiting),
	}
	ix.pool.Put(r)
}

func emptied[T any](s []T) []T {
	clear(s)
	return s[:0]
}

// reserve makes room for n more documents in each non-empty slice of b.
func reserve(b *readmodel.Batch, n int) {
	b.Locations = growNonEmpty(b.Locations, n)
	b.Permits = growNonEmpty(b.Permits, n)
	b.Properties = growNonEmpty(b.Properties, n)
	b.GeoSignals = growNonEmpty(b.GeoSignals, n)
	b.Leads = growNonEmpty(b.Leads, n)
	b.Catalog = growNonEmpty(b.Catalog, n)
	b.Deletes = growNonEmpty(b.Deletes, n)
}

func growNonEmpty[T any](s []T, n int) []T {
	if len(s) == 0 || cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, n)
}

// parallelMin is the batch size from which decoding fans out.
const parallelMin = 64

// decodeAll decodes and projects every message: errs[i] is message i's
// error, and parts, in order, hold the documents of the others (in
// message order within each kind). Decoding is the indexer's main cost
// (strict JSON), and messages are independent until the write, so large
// batches are split into contiguous chunks across GOMAXPROCS workers
// (as GOMAXPROCS was before any spare Ps were given: spareprocs.Workers),
// each projecting into its own part.
// Messages parsed ahead (p, see Parse) use their parsed events.
func (ix *Indexer) decodeAll(ctx context.Context, msgs []Message, p *Parsed) (errs []error, parts []readmodel.Batch) {
	errs = make([]error, len(msgs))
	workers := max(1, min(spareprocs.Workers(), len(msgs)/parallelMin))
	chunk := (len(msgs) + workers - 1) / workers
	parts = make([]readmodel.Batch, workers)
	for k := range parts { // every part's slices from the pool (release)
		if b, ok := ix.pool.Get().(*readmodel.Batch); ok {
			parts[k] = *b
		}
	}
	run := func(k, lo, hi int) {
		// A CPU turn while the Ps are raised (live writes): with every
		// partition's batch decoded at once the workers took the Ps
		// requests would have run on. Nothing below waits for a holder.
		defer spareprocs.Hold()()
		room := hi - lo
		if k == 0 {
			room = len(msgs) // merge appends the other parts to part 0
		}
		for i := lo; i < hi; i++ {
			ev, keyed := p.at(i)
			errs[i] = ix.decodeParsed(ctx, msgs[i], ev, keyed, &parts[k], missAwait)
			if room > 0 && parts[k].Len() > 0 {
				// A batch is one partition of one topic, and a topic holds
				// one entity family: the first document's kind is the kind
				// of (nearly) all of them, so its slice is sized once.
				reserve(&parts[k], room-(i-lo))
				room = 0
			}
		}
	}
	if workers == 1 {
		run(0, 0, len(msgs))
		return errs, parts
	}
	var wg sync.WaitGroup
	for k := range workers {
		lo, hi := min(k*chunk, len(msgs)), min((k+1)*chunk, len(msgs))
		wg.Go(func() { run(k, lo, hi) })
	}
	wg.Wait()
	return errs, parts
}

// decode projects one message, appending its documents to b, or parks
// it (appending nothing) until a location it needs is known, or returns
// errLate (missAwait, see awaitLate), a permanent error (wrapping
// events.ErrInvalid) or a transient one (anything else) and appends
// nothing. mode says what a miss does.
func (ix *Indexer) decode(ctx context.Context, m Message, b *readmodel.Batch, mode missMode) error {
	return ix.decodeParsed(ctx, m, nil, false, b, mode)
}

// decodeParsed is decode with m's event parsed ahead (p, used once; nil
// or used: m is decoded here); keyed says m's key was found equal to p's
// entity_id then (ParseInto), so it is not compared again.
func (ix *Indexer) decodeParsed(ctx context.Context, m Message, p *events.Parsed, keyed bool, b *readmodel.Batch, mode missMode) error {
	if len(m.Value) > ix.p.MaxMessageBytes {
		return fmt.Errorf("%w: message of %d bytes exceeds the limit of %d", events.ErrInvalid, len(m.Value), ix.p.MaxMessageBytes)
	}
	// The envelope is lent for the call: the documents copy what they keep.
	project := func(env events.Envelope) error {
		if !keyed && len(m.Key) > 0 && string(m.Key) != env.EntityID {
			return fmt.Errorf("%w: message key %q differs from entity_id %q", events.ErrInvalid, m.Key, env.EntityID)
		}
		if env.Type.IsDelete() && env.Type != events.LocationDeleted {
			ix.loc.unpark(entityKey(env), env.EntityVersion)
		}
		if mode == missFinal {
			return ix.projectFinal(ctx, env, m, b)
		}
		err := projectInto(ctx, env, ix.parking, b)
		if err == nil {
			return ix.noteLinks(ctx, env, m, b) // linked: forgets older versions (relink.go)
		}
		var miss *errMissing
		if !errors.As(err, &miss) {
			return err
		}
		if ix.loc.park(entityKey(env), env.EntityVersion, miss.geoID, m) {
			return nil
		}
		// Settled, or the location arrived meanwhile.
		if _, known := ix.loc.get(miss.geoID); !known && mode == missAwait && ix.await != nil {
			return errLate
		}
		return ix.projectFinal(ctx, env, m, b)
	}
	if p != nil {
		if used, err := p.Use(project); used {
			return err
		}
	}
	keyed = false // decoded again here: compared again
	return events.WithEvent(m.Value, project)
}

// entityKey names an entity across families for parking.
func entityKey(env events.Envelope) string { return env.Type.Family() + "\x00" + env.EntityID }
