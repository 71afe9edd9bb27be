// Package indexer projects events into the read model:
//
//	source -> decode -> project (pure) -> sink (readmodel.Writer) -> commit
//
// Sources (Kafka consumer groups, the embedded bundled-data feed) hand the
// Indexer batches of raw messages with HandleBatch and commit their
// positions only after it returns nil, which happens once the batch is
// durable in the read model. Messages that can never be projected go to the
// dead-letter sink with the reason; transient write failures retry with
// backoff that honours cancellation. Nothing is logged and skipped.
package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/params"
	"github.com/permitd/permitd/readmodel"
)

// Message is one raw event with its source position.
type Message struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
}

// DeadLetterFunc stores a message that can never be projected, with the
// reason. It returns nil once the dead letter is durable; an error makes
// HandleBatch fail (and the source retry) rather than lose the message.
type DeadLetterFunc func(ctx context.Context, m Message, reason error) error

// Params configure an Indexer.
type Params struct {
	Writer readmodel.Writer
	// Lookup is read only for a location the indexer's own table (see
	// locations.go) does not hold, once per geography: with a durable
	// backend shared by a consumer group, the members owning the location
	// partitions project them. Optional.
	Lookup     Lookup
	DeadLetter DeadLetterFunc // required
	Logger     *slog.Logger
	// MaxMessageBytes rejects larger messages to the dead-letter sink; 0
	// means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Backoff bounds the write retries: first delay, doubled up to Max.
	BackoffMin, BackoffMax time.Duration
	Metrics                *Metrics // optional
	// MaxUnlinkedBytes bounds the messages of documents written without
	// a location they name that the indexer keeps for a re-link (relink.go);
	// 0 means 64 MiB.
	MaxUnlinkedBytes int64
	// UnlinkedPageSize is the page of RecoverUnlinked's listing of
	// waiting documents (relink_recover.go); 0 means 1000.
	UnlinkedPageSize int
}

// DefaultMaxMessageBytes is Params.MaxMessageBytes' default, 1 MiB: the
// largest message projected (serve's --kafka-max-message-bytes, Check).
const DefaultMaxMessageBytes = 1 << 20

// Indexer applies message batches to the read model.
type Indexer struct {
	p Params

	batches    atomic.Int64
	applied    atomic.Int64
	stale      atomic.Int64
	deadLetter atomic.Int64
	retries    atomic.Int64
	relinked   atomic.Int64
	awaited    atomic.Int64
	lastApply  atomic.Int64 // unix nanos

	preloadedUnlinked atomic.Int64 // unlinked documents of a loaded snapshot (Preload)

	// batches' documents are reused: Writer.Apply keeps none of a
	// batch's slices, so once it returns the slices go back here for the
	// next batch instead of to the garbage collector.
	pool sync.Pool // *readmodel.Batch

	loc            *locations
	parking, final *resolver // the table's Lookup, parking misses or not
	// lister is the Writer when it keeps what unlinked documents wait
	// for with them (readmodel.UnlinkedLister; relink_recover.go); nil
	// otherwise.
	lister readmodel.UnlinkedLister

	// await is the source's AwaitLocations (SetLocationSource); nil:
	// once settled, a miss is final at once.
	await func(ctx context.Context) error
}

// missMode says what decode does when a location is not in the table.
type missMode int

const (
	// missFinal links what is known without it (the fallback Lookup,
	// then the projection's own fallback, such as a permit's state).
	missFinal missMode = iota
	// missPark parks the message while the table is not settled; once
	// settled, as missFinal.
	missPark
	// missAwait parks the message while the table is not settled; once
	// settled and with a location source set, reports errLate: the batch
	// waits for the source (see SetLocationSource) and projects it again.
	missAwait
)

// errLate is decode's answer for a message whose location is not in the
// settled table while the location source may still bring it.
var errLate = errors.New("indexer: location not in the table yet")

// SetLocationSource gives the indexer its source's wait for locations:
// await returns once every location published before the call has been
// handled (in this indexer's table, or durable in the read model for a
// location another member of a consumer group handles), or returns the
// context's error. Once settled, a batch with a message whose location
// is not in the table calls await once and projects that message again;
// only a location still unknown then is missing for good (see
// locations.go). Without it a miss after settling is final at once,
// which is right for a source that settles only when it has no more
// locations (the embedded feed). Call it before the first batch.
// kafka.(*Consumer).AwaitLocations is such a wait.
func (ix *Indexer) SetLocationSource(await func(ctx context.Context) error) { ix.await = await }

// New returns an Indexer.
func New(p Params) (*Indexer, error) {
	if p.Writer == nil || p.DeadLetter == nil {
		return nil, errors.New("indexer: Writer and DeadLetter are required")
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	params.Default(&p.MaxMessageBytes, DefaultMaxMessageBytes)
	params.Default(&p.BackoffMin, 50*time.Millisecond)
	params.Default(&p.BackoffMax, 5*time.Second)
	params.Default(&p.MaxUnlinkedBytes, defaultMaxUnlinkedBytes)
	loc := newLocations(p.MaxUnlinkedBytes)
	lister, _ := p.Writer.(readmodel.UnlinkedLister)
	return &Indexer{p: p, loc: loc, lister: lister,
		parking: &resolver{t: loc, fallback: p.Lookup, park: true},
		final:   &resolver{t: loc, fallback: p.Lookup},
	}, nil
}

// Progress is the indexer's running count, for readiness and metrics.
type Progress struct {
	Batches     int64
	Applied     int64
	Stale       int64
	DeadLetters int64
	Retries     int64
	Parked      int64     // messages waiting for a location now (see Settle)
	Relinked    int64     // messages projected after waiting for a location
	Awaited     int64     // messages projected again after waiting for the location source (SetLocationSource)
	LastApply   time.Time // zero before the first batch

	// Unlinked: documents written without a location they name, remembered
	// for a re-link when it arrives (relink.go); UnlinkedDropped: such
	// documents not remembered because of Params.MaxUnlinkedBytes.
	Unlinked, UnlinkedDropped int64
}

// Progress returns the counts so far.
func (ix *Indexer) Progress() Progress {
	p := Progress{
		Batches:     ix.batches.Load(),
		Applied:     ix.applied.Load(),
		Stale:       ix.stale.Load(),
		DeadLetters: ix.deadLetter.Load(),
		Retries:     ix.retries.Load(),
		Parked:      int64(ix.loc.parkedCount()),
		Relinked:    ix.relinked.Load(),
		Awaited:     ix.awaited.Load(),
	}
	n, dropped := ix.loc.unlinkedLen()
	p.Unlinked, p.UnlinkedDropped = int64(n), dropped
	if n := ix.lastApply.Load(); n != 0 {
		p.LastApply = time.Unix(0, n)
	}
	return p
}

// HandleBatch decodes, validates and projects every message, sends the
// poison ones to the dead-letter sink and writes the rest to the read model
// as one batch. It returns nil only when every message is either durable in
// the read model or durable in the dead-letter sink; the caller may then
// commit the messages' positions. On error nothing may be committed, and
// handing the same messages again is safe (projection is idempotent).
func (ix *Indexer) HandleBatch(ctx context.Context, msgs []Message) error {
	return ix.HandleParsed(ctx, msgs, nil)
}

// Parsed holds a batch's events decoded ahead of its HandleParsed
// (Parse), one per message.
type Parsed struct {
	evs []events.Parsed
	// keyed[i] is true when message i's key was found equal to its
	// event's entity_id as it was parsed, while both were in the cache:
	// compared in HandleParsed, a batch after, they were read from memory
	// again (2.2% of the real mix's replay, docs/kafka-history.md, "Sixtieth
	// session").
	keyed []bool
}

// at is message i's parsed event, nil for none, and whether its key
// matched its entity_id when parsed.
func (p *Parsed) at(i int) (*events.Parsed, bool) {
	if p == nil || i >= len(p.evs) {
		return nil, false
	}
	return &p.evs[i], p.keyed[i]
}

// Parse decodes the events of msgs ahead of their HandleParsed: the
// Kafka consumer parses a partition's next batch while its last one is
// written, so that the JSON is off the path from one write of a
// partition to its next (docs/kafka-history.md, "Forty-sixth session"). Only the
// parse moves: the projection, which reads the location table and parks
// and unparks messages, stays in HandleParsed, in the partition's
// order. A message over MaxMessageBytes is not parsed (HandleParsed
// refuses it).
func (ix *Indexer) Parse(msgs []Message) *Parsed { return ix.ParseInto(nil, msgs) }

// ParseInto is Parse into p's slice of events when it has room (p nil: a
// new one), so that a caller parsing batch after batch reuses two, as
// the Kafka consumer's partitions do (in the real mix's replay about 80
// bytes an event fewer: docs/kafka-history.md, "Fifty-seventh session"). p's
// events from an earlier batch are overwritten, used or not:
// HandleParsed must be done with p.
func (ix *Indexer) ParseInto(p *Parsed, msgs []Message) *Parsed {
	if p == nil || cap(p.evs) < len(msgs) {
		p = &Parsed{evs: make([]events.Parsed, len(msgs)), keyed: make([]bool, len(msgs))}
	}
	p.evs, p.keyed = p.evs[:len(msgs)], p.keyed[:len(msgs)]
	for i, m := range msgs {
		p.evs[i], p.keyed[i] = events.Parsed{}, false
		if len(m.Value) > ix.p.MaxMessageBytes {
			continue
		}
		p.evs[i] = events.Parse(m.Value)
		if id, ok := p.evs[i].EntityID(); ok {
			p.keyed[i] = len(m.Key) == 0 || string(m.Key) == id
		}
	}
	return p
}

// HandleParsed is HandleBatch for msgs parsed ahead by Parse (p nil:
// none). Each parsed event is used once: a retry of the batch (after an
// error) decodes its messages again.
func (ix *Indexer) HandleParsed(ctx context.Context, msgs []Message, p *Parsed) error {
	start := time.Now()
	errs, parts := ix.decodeAll(ctx, msgs, p)
	// The whole batch is built in parts[0], so release clears and pools
	// every document written into its slices.
	batch := &parts[0]
	defer ix.release(batch)
	ix.merge(parts)
	if err := ix.awaitLate(ctx, msgs, errs, batch); err != nil {
		return err
	}
	if err := ix.deadLetters(ctx, msgs, errs); err != nil {
		return err
	}
	// The batch's locations go into the table first; the messages that
	// waited for them are projected now, into the same write.
	relinked := ix.loc.apply(batch.Locations, batch.Deletes)
	rmsgs, rerrs, err := ix.project(ctx, relinked, batch, missPark)
	if err != nil {
		return err
	}
	if len(rmsgs) > 0 {
		msgs = append(slices.Clip(msgs), rmsgs...)
		errs = append(slices.Clip(errs), rerrs...)
	}
	if err := ix.write(ctx, *batch, msgs, errs); err != nil {
		return err
	}
	ix.loc.done(relinked)
	ix.relinked.Add(int64(len(relinked)))
	ix.batches.Add(1)
	ix.lastApply.Store(time.Now().UnixNano())
	ix.p.Metrics.batchDone(time.Since(start))
	return nil
}

// awaitLate handles the messages decode answered errLate for: it waits
// once for the location source, then projects them again into b, with
// what is known by then (errs[i] becomes that projection's error). A
// batch of the locations topic never has any (a location needs no
// lookup), so the wait never waits on its own partition.
func (ix *Indexer) awaitLate(ctx context.Context, msgs []Message, errs []error, b *readmodel.Batch) error {
	waited := false
	for i, err := range errs {
		if err != errLate {
			continue
		}
		if !waited {
			if err := ix.await(ctx); err != nil {
				return fmt.Errorf("indexer: wait for the location source: %w", err)
			}
			waited = true
		}
		errs[i] = ix.decode(ctx, msgs[i], b, missFinal)
		ix.awaited.Add(1)
	}
	return nil
}

// project projects parked messages into b (mode: whether they may park
// again, on another geography) and dead-letters the invalid ones.
func (ix *Indexer) project(ctx context.Context, ps []parked, b *readmodel.Batch, mode missMode) ([]Message, []error, error) {
	if len(ps) == 0 {
		return nil, nil, nil
	}
	msgs := make([]Message, len(ps))
	errs := make([]error, len(ps))
	for i, p := range ps {
		msgs[i] = p.msg
		errs[i] = ix.decode(ctx, p.msg, b, mode)
	}
	return msgs, errs, ix.deadLetters(ctx, msgs, errs)
}

// write applies a non-empty batch and counts the result. msgs and errs
// are the messages the batch was projected from (errs[i] non-nil: already
// dead-lettered); a document the read model refuses for good sends its
// message to the dead-letter sink, and the rest of the batch stands.
func (ix *Indexer) write(ctx context.Context, batch readmodel.Batch, msgs []Message, errs []error) error {
	if batch.Len() == 0 {
		return nil
	}
	res, err := ix.apply(ctx, batch)
	var refused *readmodel.ItemErrors
	if errors.As(err, &refused) {
		err = ix.deadLetterRefused(ctx, msgs, errs, refused)
	}
	if err != nil {
		return err
	}
	ix.applied.Add(int64(res.Applied))
	ix.stale.Add(int64(res.Stale))
	ix.p.Metrics.applied(res)
	return nil
}

// Settle tells the indexer that its source has delivered every location
// that existed when it started (see locations.go): the messages still
// waiting for a location are projected with what is known without it
// and written, and from now on no message waits. It returns nil once
// they are durable (or dead-lettered); on error they stay parked and
// Settle may be called again. Settling twice is harmless.
func (ix *Indexer) Settle(ctx context.Context) error {
	ps := ix.loc.settle()
	if err := ix.writeFinal(ctx, ps); err != nil {
		return err
	}
	ix.loc.done(ps)
	if len(ps) > 0 {
		ix.p.Logger.Info("locations settled; messages that waited for an unknown location are written without it", "messages", len(ps))
	}
	return nil
}

// Preload records the locations and location deletes of b in the
// indexer's location table without writing anything: b is already in the
// read model (a snapshot being loaded), and what is projected next links
// to its locations.
func (ix *Indexer) Preload(b readmodel.Batch) {
	ix.loc.apply(b.Locations, b.Deletes)
	ix.preloadedUnlinked.Add(countUnlinked(&b)) // relink_save.go
}

// Settled reports whether Settle was called.
func (ix *Indexer) Settled() bool { return ix.loc.isSettled() }

// ReserveLocations sizes the location table for backlog more
// geographies (a replay's location messages, BacklogKinds' count of
// readmodel.KindLocation), up to maxReservedLocations, so that a replay
// does not grow it as it fills: each growth hashed every key written so
// far again, about 1 to 2% of the real mix's replay (docs/kafka-history.md,
// "Sixtieth session"). A backlog above the bound leaves the rest to grow as before.
func (ix *Indexer) ReserveLocations(backlog int64) { ix.loc.reserve(backlog) }

// apply writes the batch, retrying transient failures with exponential
// backoff until ctx ends. A *readmodel.ItemErrors is returned at once: the
// batch is applied but for documents no retry can store.
func (ix *Indexer) apply(ctx context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	delay := ix.p.BackoffMin
	for {
		res, err := ix.p.Writer.Apply(ctx, b)
		var refused *readmodel.ItemErrors
		if err == nil || errors.As(err, &refused) {
			return res, err
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("indexer: apply: %w", ctx.Err())
		}
		ix.retries.Add(1)
		ix.p.Metrics.retry()
		ix.p.Logger.Warn("read model write failed; retrying", "err", err, "backoff", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, fmt.Errorf("indexer: apply: %w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(delay*2, ix.p.BackoffMax)
	}
}
