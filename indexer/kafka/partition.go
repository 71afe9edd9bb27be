package kafka

import (
	"context"
	"log/slog"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/permitd/permitd/indexer"
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
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:        c.p.Brokers,
		Dialer:         c.dialer,
		Topic:          p.topic,
		Partition:      p.id,
		MinBytes:       1,
		MaxBytes:       c.p.MaxFetchBytes,
		MaxWait:        readerWait(c.p.FetchWait),
		QueueCapacity:  c.p.BatchSize,
		ReadBackoffMin: c.p.BackoffMin,
		ReadBackoffMax: c.p.BackoffMax,
		ErrorLogger:    kafkaLogger(log, slog.LevelWarn), // kafka-go retries these itself; lag shows the effect
	})
	defer func() {
		if err := r.Close(); err != nil {
			log.Warn("closing partition reader", "err", err)
		}
	}()
	// SetOffset only fails on a reader that is already in use, which this
	// one is not; retried all the same rather than letting the partition
	// stop for good.
	for delay := c.p.BackoffMin; ; delay = c.backoff(delay) {
		err := r.SetOffset(p.pos.Load())
		if err == nil {
			break
		}
		log.Error("set offset failed; retrying", "offset", p.pos.Load(), "err", err, "backoff", delay)
		c.retried()
		if !sleep(fetch, delay) {
			return
		}
	}
	log.Debug("partition reader started", "offset", p.pos.Load(), "start_high_watermark", p.startHWM)

	take := c.fetchNext(fetch, r)
	if c.p.Parser != nil {
		ahead := c.fetchAhead(fetch, r)
		defer ahead.stop()
		take = ahead.next
	}
	delay := c.p.BackoffMin
	for {
		batch, parsed, hwm, err := take()
		if len(batch) == 0 {
			if fetch.Err() != nil {
				return
			}
			log.Warn("fetch failed; retrying", "err", err, "backoff", delay)
			c.retried()
			if !sleep(fetch, delay) {
				return
			}
			delay = c.backoff(delay)
			continue
		}
		delay = c.p.BackoffMin
		// The watermark the fetch saw counts now, before this batch waits
		// for the First topics or is retried; meanwhile pollWatermarks
		// keeps raising it.
		p.raiseHWM(hwm)
		c.setLag(p)
		if !first && !c.waitFirst(fetch) {
			return
		}
		if !c.handle(fetch, drain, log, batch, parsed) {
			return
		}
		next := batch[len(batch)-1].Offset + 1
		if !c.commit(fetch, drain, log, commit, next) {
			return
		}
		// The batch is done with: its messages' bytes go to the collector
		// now, not when the next batch overwrites them. A quiet partition
		// kept its last batch (up to BatchSize messages) for good: about
		// 64 MB over the 46 default partitions after a replay of the real
		// mix, and during the replay a batch per partition that waited.
		clear(batch)
		p.pos.Store(next)
		p.raiseHWM(max(hwm, next))
		c.batches.Add(1)
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
// and its error when it fetched nothing.
type fetched struct {
	batch  []indexer.Message
	parsed *indexer.Parsed
	hwm    int64
	err    error
}

// fetchNext returns what takes a partition's next batch: fetchBatch into
// one buffer, reused batch after batch.
func (c *Consumer) fetchNext(fetch context.Context, r *kafkago.Reader) func() ([]indexer.Message, *indexer.Parsed, int64, error) {
	batch := make([]indexer.Message, 0, c.p.BatchSize)
	return func() ([]indexer.Message, *indexer.Parsed, int64, error) {
		var hwm int64
		var err error
		batch, hwm, err = c.fetchBatch(fetch, r, batch[:0])
		return batch, nil, hwm, err
	}
}

// ahead fetches and parses a partition's next batch (Params.Parser) on a
// goroutine of its own while the consumer's loop handles the last one.
// next hands out a batch and, unless it is empty (a failed fetch, which
// the loop retries after its backoff), asks for the one after it at
// once, into the other of two buffers: the loop is done with a batch
// (handled, committed, cleared) before it calls next again, so the
// buffer it held is free then. So at most one batch is fetched ahead,
// and a failed fetch is fetched again only when the loop asks, after the
// same backoff as without a Parser.
type ahead struct {
	req     chan []indexer.Message // a free buffer: fetch the next batch into it
	out     chan fetched
	done    chan struct{} // closed when the goroutine has returned
	cancel  context.CancelFunc
	bufs    [2][]indexer.Message
	turn    int  // the buffer of the next fetch
	pending bool // a fetch was asked for and not taken yet
}

// fetchAhead starts a partition's fetching goroutine; stop ends it.
func (c *Consumer) fetchAhead(fetch context.Context, r *kafkago.Reader) *ahead {
	ctx, cancel := context.WithCancel(fetch)
	a := &ahead{req: make(chan []indexer.Message), out: make(chan fetched), done: make(chan struct{}), cancel: cancel}
	for i := range a.bufs {
		a.bufs[i] = make([]indexer.Message, 0, c.p.BatchSize)
	}
	go func() {
		defer close(a.done)
		for {
			var buf []indexer.Message
			select {
			case buf = <-a.req:
			case <-ctx.Done():
				return
			}
			batch, hwm, err := c.fetchBatch(ctx, r, buf[:0])
			f := fetched{batch: batch, hwm: hwm, err: err}
			if len(batch) > 0 {
				f.parsed = c.p.Parser.Parse(batch)
			}
			select {
			case a.out <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	return a
}

// next returns the partition's next batch (as fetchBatch does), parsed.
func (a *ahead) next() ([]indexer.Message, *indexer.Parsed, int64, error) {
	if !a.pending && !a.ask() {
		return nil, nil, 0, context.Canceled
	}
	var f fetched
	select {
	case f = <-a.out:
	case <-a.done:
		return nil, nil, 0, context.Canceled
	}
	a.pending = false
	a.bufs[a.turn] = f.batch[:0]
	if len(f.batch) > 0 {
		a.turn ^= 1
		a.ask()
	}
	return f.batch, f.parsed, f.hwm, f.err
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

// stop ends the goroutine and waits for it: the reader is closed after.
func (a *ahead) stop() {
	a.cancel()
	<-a.done
}

// fetchBatch blocks for the first message, then takes what arrives within
// BatchWait, up to BatchSize. A batch that reaches the partition's high
// watermark goes at once: nothing more is there to wait for, and waiting
// would only delay the newest messages (and catching up). It returns the
// messages fetched so far even when fetch ends, so the caller can finish
// them.
func (c *Consumer) fetchBatch(fetch context.Context, r *kafkago.Reader, batch []indexer.Message) ([]indexer.Message, int64, error) {
	m, err := r.FetchMessage(fetch)
	if err != nil {
		return batch, 0, err
	}
	batch = append(batch, message(m))
	hwm := m.HighWaterMark
	if len(batch) >= c.p.BatchSize || atHighWatermark(m) {
		return batch, hwm, nil
	}
	wait, cancel := context.WithTimeout(fetch, c.p.BatchWait)
	defer cancel()
	for len(batch) < c.p.BatchSize {
		m, err := r.FetchMessage(wait)
		if err != nil {
			break // the wait ended (or the reader failed: the next fetch will say)
		}
		batch = append(batch, message(m))
		hwm = m.HighWaterMark
		if atHighWatermark(m) {
			break
		}
	}
	return batch, hwm, nil
}

func message(m kafkago.Message) indexer.Message {
	return indexer.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
}

// handle runs the Handler until it succeeds. Retries back off; once fetch
// has ended a failing batch is abandoned (false), left uncommitted for the
// next owner or the next start, rather than retried through the drain
// period.
func (c *Consumer) handle(fetch, drain context.Context, log *slog.Logger, batch []indexer.Message, parsed *indexer.Parsed) bool {
	delay := c.p.BackoffMin
	for {
		var err error
		if parsed != nil {
			err = c.p.Parser.HandleParsed(drain, batch, parsed)
		} else {
			err = c.p.Handler(drain, batch)
		}
		if err == nil {
			return true
		}
		if fetch.Err() == nil {
			c.retried()
			log.Warn("batch failed; retrying", "first_offset", batch[0].Offset, "messages", len(batch), "err", err, "backoff", delay)
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
	for attempt := 1; ; attempt++ {
		err := commit(next)
		if err == nil {
			c.commits.Add(1)
			return true
		}
		if drain.Err() != nil || (fetch.Err() != nil && attempt >= 3) {
			log.Warn("offset not committed; the next owner reads the batch again", "offset", next, "err", err)
			return false
		}
		c.retried()
		log.Warn("commit failed; retrying", "offset", next, "err", err, "backoff", delay)
		if !sleep(drain, delay) {
			log.Warn("offset not committed; the next owner reads the batch again", "offset", next, "err", err)
			return false
		}
		delay = c.backoff(delay)
	}
}

// atHighWatermark reports whether m is the newest message its fetch saw
// (a zero high watermark says nothing).
func atHighWatermark(m kafkago.Message) bool {
	return m.HighWaterMark > 0 && m.Offset+1 >= m.HighWaterMark
}

// kafkaRTT is what kafka-go keeps of a fetch's read deadline for the
// response (its defaultRTT): from a deadline of at least that, it asks
// the broker to wait the deadline less kafkaRTT; from a shorter one, a
// quarter of it less.
const kafkaRTT = time.Second

// readerWait is the reader's MaxWait for a broker long-poll of wait: the
// broker still answers an idle fetch after wait, and the reader waits a
// second longer for the answer. MaxWait itself (the default 500ms) left
// 125ms for the answer to arrive: a broker or a process busy for longer
// (a replay on two cores, 46 readers' first fetches of up to 16 MiB at
// once) tripped the deadline, and kafka-go logged an i/o timeout and
// dialled again (37 to 59 warnings per replay at 1M permits).
func readerWait(wait time.Duration) time.Duration { return wait + kafkaRTT }
