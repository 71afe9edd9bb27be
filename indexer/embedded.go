package indexer

import (
	"context"
	"sync/atomic"

	"github.com/permitd/permitd/events"
)

// Feed is the embedded source: it hands the indexer the raw events a
// producer yields in process (the bundled data), in batches, through the
// same decode and projection path as Kafka. It reports caught-up once the
// producer is exhausted and every batch is applied.
type Feed struct {
	ix        *Indexer
	batchSize int
	caughtUp  atomic.Bool
	pending   atomic.Int64
}

// NewFeed returns a Feed applying batches of batchSize messages.
func NewFeed(ix *Indexer, batchSize int) *Feed {
	if batchSize <= 0 {
		batchSize = 2048
	}
	return &Feed{ix: ix, batchSize: batchSize}
}

// Emit hands one raw event (topic, key, value) to the feed.
type Emit = func(topic string, key, value []byte) error

// Envelopes returns what hands envelopes to emit as raw events: each on
// its family's topic, keyed by its entity id, as JSON, as a publisher to
// Kafka writes them (the bundled data, and the tests and benchmarks that
// feed generated events).
func Envelopes(emit Emit) func(events.Envelope) error {
	return func(env events.Envelope) error {
		topic, err := events.TopicFor(env.Type)
		if err != nil {
			return err
		}
		raw, err := env.AppendJSON(nil)
		if err != nil {
			return err
		}
		return emit(topic, []byte(env.EntityID), raw)
	}
}

// Producer yields raw events; it stops early when emit returns an error.
type Producer func(ctx context.Context, emit Emit) error

// Run feeds every producer's events to the indexer in order and returns
// when all are applied (or on the first error).
func (f *Feed) Run(ctx context.Context, producers ...Producer) error {
	var batch []Message
	var offset int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := f.ix.HandleBatch(ctx, batch); err != nil {
			return err
		}
		f.pending.Add(-int64(len(batch)))
		batch = batch[:0]
		return nil
	}
	for _, p := range producers {
		err := p(ctx, func(topic string, key, value []byte) error {
			batch = append(batch, Message{Topic: topic, Offset: offset, Key: key, Value: value})
			offset++
			f.pending.Add(1)
			if len(batch) >= f.batchSize {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
		// A producer's events are applied before the next producer starts
		// (the gazetteer's locations before the permits that link to them,
		// so nothing needs to wait for a location).
		if err := flush(); err != nil {
			return err
		}
	}
	// Every location is in: what still waits for one waits in vain.
	if err := f.ix.Settle(ctx); err != nil {
		return err
	}
	f.caughtUp.Store(true)
	return nil
}

// CaughtUp reports whether every produced event is applied.
func (f *Feed) CaughtUp() bool { return f.caughtUp.Load() }

// Lag is the number of produced events not yet applied.
func (f *Feed) Lag() int64 { return f.pending.Load() }
