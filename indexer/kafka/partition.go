package kafka

import (
	"context"
	"log/slog"
	"slices"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/spareprocs"
)

// commitFunc records that every offset below next is durable. Replay mode
// commits nothing.
type commitFunc func(next int64) error

// consume reads one partition from p.pos until fetch ends: fetch a batch,
// hand it to the Handler (retrying with backoff until it succeeds), commit,
// repeat. A batch is committed only after the Handler returned nil for it.
// When fetch ends the batch in hand is finished and committed under drain;
// a batch whose Handler still fails then is left uncommitted for the next
// owner (or the next start) to read again.
func (c *Consumer) consume(fetch, drain context.Context, p *partition, commit commitFunc) {
	log := c.log.With("topic", p.topic, "partition", p.id)
	// Replay mode starts a dependent topic's reader only once the First
	// topics have caught up (waitFirst): its messages could not be
	// handled before, and fetching them meanwhile took the broker's time
	// from the locations (kfake serves every request in turn, and a
	// broker's fetch quota counts what a client fetches), besides a
	// fetch's worth of memory per partition. In group mode a batch waits
	// at the gate below instead.
	first := slices.Contains(c.p.First, p.topic)
	if !first && c.p.Group == "" && !c.waitFirst(fetch) {
		return
	}
	f := c.newFetcher(fetch, log, p)
	defer f.stop()
	log.Debug("partition fetcher started", "offset", p.pos.Load(), "start_high_watermark", p.startHWM.Load())

	take := c.fetchNext(fetch, f)
	if c.p.Parser != nil {
		ahead := c.fetchAhead(fetch, f)
		defer ahead.stop()
		take = ahead.next
	}
	for {
		got, ok := take()
		if !ok {
			return // fetch ended
		}
		if got.restart {
			// The partition was deleted and created again: it is read
			// from its first offset, and its watermarks are the new
			// partition's (a replay waits for its end now).
			log.Warn("partition restarted", "offset", got.next, "high_watermark", got.hwm)
			p.restart(got.next, got.hwm)
		}
		// The watermark the fetch saw counts now, before this batch waits
		// for the First topics or is retried; meanwhile pollWatermarks
		// keeps raising it.
		p.raiseHWM(got.hwm)
		c.setLag(p)
		if len(got.batch) > 0 {
			if !first && !c.waitFirst(fetch) {
				return
			}
			if !c.handle(fetch, drain, log, got.batch, got.parsed) {
				return
			}
		}
		// got.next is past the batch and any transaction markers after
		// it (a batch of no message: markers only), so that a partition
		// that ends with a marker is caught up.
		if !c.commit(fetch, drain, log, commit, got.next) {
			return
		}
		// The batch is done with: its messages' bytes go to the collector
		// now, not when the next batch overwrites them. A quiet partition
		// kept its last batch (up to BatchSize messages) for good: about
		// 64 MB over the 46 default partitions after a replay of the real
		// mix, and during the replay a batch per partition that waited.
		clear(got.batch)
		c.releaseAnswers(got.bufs) // no message of theirs is in use now
		p.pos.Store(got.next)
		p.raiseHWM(max(got.hwm, got.next))
		if len(got.batch) > 0 {
			c.batches.Add(1)
		}
		c.setLag(p)
		if first && c.p.Group == "" && !c.settled.Load() && c.firstCaughtUp() && !c.settle(fetch) {
			return
		}
		c.checkCaughtUp()
		if fetch.Err() != nil {
			return
		}
	}
}

// fetched is a batch as the consumer's loop takes it: the messages, their
// events parsed ahead (with a Parser), the high watermark the fetch saw,
// and the partition's position after the batch (fetcher.take).
type fetched struct {
	batch  []indexer.Message
	parsed *indexer.Parsed
	// bufs are the pooled answer buffers free once the batch is done
	// (fetcher.takeFreed).
	bufs []*[]byte
	mark
}

// fetchNext returns what takes a partition's next batch: fetcher.take into
// one buffer, reused batch after batch; false once fetch has ended.
func (c *Consumer) fetchNext(fetch context.Context, f *fetcher) func() (fetched, bool) {
	batch := make([]indexer.Message, 0, c.p.BatchSize)
	return func() (fetched, bool) {
		var got fetched
		var ok bool
		batch, got.mark, ok = f.take(fetch, batch[:0])
		got.batch, got.bufs = batch, f.takeFreed()
		return got, ok
	}
}

// ahead takes and parses a partition's next batch (Params.Parser) on a
// goroutine of its own while the consumer's loop handles the last one.
// next hands out a batch and asks for the one after it at once, into the
// other of two buffers (the messages and their parsed events): the loop
// is done with a batch (handled, committed, cleared) before it calls
// next again, so the buffers it held are free then. So at most one batch
// is taken ahead.
type ahead struct {
	req     chan aheadBufs // free buffers: take and parse the next batch into them
	out     chan fetched
	done    chan struct{} // closed when the goroutine has returned
	cancel  context.CancelFunc
	bufs    [2]aheadBufs
	turn    int  // the buffers of the next batch
	pending bool // a batch was asked for and not taken yet
}

// aheadBufs are a batch's buffers: its messages and their parsed events
// (nil until the first batch parsed into them).
type aheadBufs struct {
	batch  []indexer.Message
	parsed *indexer.Parsed
}

// fetchAhead starts a partition's parsing goroutine; stop ends it.
func (c *Consumer) fetchAhead(fetch context.Context, f *fetcher) *ahead {
	ctx, cancel := context.WithCancel(fetch)
	a := &ahead{req: make(chan aheadBufs), out: make(chan fetched), done: make(chan struct{}), cancel: cancel}
	for i := range a.bufs {
		a.bufs[i].batch = make([]indexer.Message, 0, c.p.BatchSize)
	}
	go func() {
		defer close(a.done)
		for {
			var buf aheadBufs
			select {
			case buf = <-a.req:
			case <-ctx.Done():
				return
			}
			var got fetched
			var ok bool
			got.batch, got.mark, ok = f.take(ctx, buf.batch[:0])
			if !ok {
				return
			}
			got.bufs = f.takeFreed()
			if len(got.batch) > 0 {
				release := spareprocs.Hold() // a CPU turn while the Ps are raised (live writes)
				got.parsed = c.p.Parser.ParseInto(buf.parsed, got.batch)
				release()
			}
			select {
			case a.out <- got:
			case <-ctx.Done():
				return
			}
		}
	}()
	return a
}

// next returns the partition's next batch (as fetcher.take does),
// parsed; false once the goroutine has returned.
func (a *ahead) next() (fetched, bool) {
	if !a.pending && !a.ask() {
		return fetched{}, false
	}
	var got fetched
	select {
	case got = <-a.out:
	case <-a.done:
		return fetched{}, false
	}
	a.pending = false
	a.bufs[a.turn].batch = got.batch[:0]
	if got.parsed != nil {
		a.bufs[a.turn].parsed = got.parsed
	}
	a.turn ^= 1
	a.ask()
	return got, true
}

// ask hands the goroutine the free buffer for the next fetch; false once
// the goroutine has returned.
func (a *ahead) ask() bool {
	select {
	case a.req <- a.bufs[a.turn]:
		a.pending = true
		return true
	case <-a.done:
		return false
	}
}

// stop ends the goroutine and waits for it: the fetcher is stopped after.
func (a *ahead) stop() {
	a.cancel()
	<-a.done
}

// handle runs the Handler until it succeeds. Retries back off; once fetch
// has ended a failing batch is abandoned (false), left uncommitted for the
// next owner or the next start, rather than retried through the drain
// period.
func (c *Consumer) handle(fetch, drain context.Context, log *slog.Logger, batch []indexer.Message, parsed *indexer.Parsed) bool {
	delay := c.p.BackoffMin
	var failures failureLog
	for {
		var err error
		if parsed != nil {
			err = c.p.Parser.HandleParsed(drain, batch, parsed)
		} else {
			err = c.p.Handler(drain, batch)
		}
		if err == nil {
			failures.succeeded(log, "batch applied after retries", "first_offset", batch[0].Offset, "messages", len(batch))
			return true
		}
		if fetch.Err() == nil {
			c.retried()
			failures.failed(log, "batch failed; retrying", err, "first_offset", batch[0].Offset, "messages", len(batch), "backoff", delay)
			if sleep(fetch, delay) {
				delay = c.backoff(delay)
				continue
			}
		}
		log.Warn("batch not applied before stopping; left uncommitted", "first_offset", batch[0].Offset, "messages", len(batch), "err", err)
		return false
	}
}

// commit records next as durable, retrying with backoff. While fetching
// it retries until it succeeds; once fetch ended (shutdown or a
// rebalance) it makes at most three attempts within drain, and otherwise
// leaves the batch for the next owner to read again, which the per-entity
// versions make harmless.
func (c *Consumer) commit(fetch, drain context.Context, log *slog.Logger, commit commitFunc, next int64) bool {
	if commit == nil {
		return true
	}
	delay := c.p.BackoffMin
	var failures failureLog
	for attempt := 1; ; attempt++ {
		err := commit(next)
		if err == nil {
			c.commits.Add(1)
			failures.succeeded(log, "offset committed after retries", "offset", next)
			return true
		}
		if drain.Err() != nil || (fetch.Err() != nil && attempt >= 3) {
			log.Warn("offset not committed; the next owner reads the batch again", "offset", next, "err", err)
			return false
		}
		c.retried()
		failures.failed(log, "commit failed; retrying", err, "offset", next, "backoff", delay)
		if !sleep(drain, delay) {
			log.Warn("offset not committed; the next owner reads the batch again", "offset", next, "err", err)
			return false
		}
		delay = c.backoff(delay)
	}
}
