package kafka

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/bits"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/spareprocs"
)

// A partition is read by a fetcher of its own, not with a kafka-go
// Reader. A Reader hands its messages over one at a time through a
// channel, each key and value in an allocation of its own (about a
// kilobyte an event of the real mix, five allocations an event in all);
// a fetcher reads a whole fetch answer's record batches into one buffer
// shared by its messages and hands over the answer's messages at once
// (docs/kafka-history.md, "Fifty-fifth session"). It fetches over a
// connection of its own to the partition's leader and takes the answer
// apart in place (leader.go), with kafka-go's Client.Fetch as the way
// back for brokers and record batches that need it (clientFetch). And
// unlike a Reader, which skips transaction markers unseen, a fetcher
// moves the partition's position past them, so that a partition whose
// last record is a marker is caught up.
//
// answersAhead is how many fetched answers a partition keeps beyond the one
// being taken apart and the one being fetched: with MaxFetchBytes of 1 MiB,
// at most about 5 MiB of a partition's messages are held at a time. With
// one, a replay's first topic (the locations: three partitions, read
// before the others) was read slower than with the Reader, which streamed
// its answers: serve ready 0.2 s later on the base of 278k events, where
// three answers ahead make it as fast (docs/kafka-history.md, "Fifty-fifth
// session").
const answersAhead = 3

// kafkaRTT is the time a fetch's answer is given to arrive after the
// broker's wait (FetchWait) ends, on top of the client's timeout.
const kafkaRTT = time.Second

// fetcher reads one partition from pos on a goroutine of its own (run),
// copying each answer's messages into a buffer they share, and hands
// them to the consumer's loop in offset order (take). Failed fetches are
// logged and retried with backoff inside run; the loop sees only
// messages and positions.
type fetcher struct {
	c      *Consumer
	log    *slog.Logger
	client *kafkago.Client
	topic  string
	id     int
	pos    int64    // the next offset to fetch; run's alone
	recs   []record // an answer's records as clientFetch reads them; run's alone

	// leader is the connection to the partition's leader (fetchInPlace),
	// nil until dialled and after a failure; viaClient says the leader
	// does not take Fetch v11, so every fetch is clientFetch's. Run's
	// alone.
	leader    *leaderConn
	viaClient bool

	out    chan fetchedAnswer
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned

	// cur is what is left of the answer being taken, hwm the high
	// watermark it gave and next the position after it; restart is an
	// answer that restarts the partition, received while a batch was
	// being filled, for the next take. The loop's alone.
	cur       []indexer.Message
	hwm, next int64
	restart   *fetchedAnswer

	// held is the answer in hand's whole slice of messages. Once all are
	// taken it goes back to run through free, emptied, for a later
	// answer's messages: a replay's answers of a thousand messages each
	// then allocate no new slice.
	held []indexer.Message
	free chan []indexer.Message

	// heldBuf is the answer in hand's pooled buffer; freed, the pooled
	// buffers of the answers whose last messages the batch being taken
	// holds (move): free once that batch is done (takeFreed). The
	// taker's alone.
	heldBuf *[]byte
	freed   []*[]byte
}

// fetchedAnswer is a fetch answer's messages and where it leaves the
// partition: the high watermark it gave and the position after it, past
// its last message and any transaction markers after that (an answer of
// markers only has no message). An answer with restart set holds no
// message either: the partition was deleted and created again (its log
// now ends before the position), and is read again from next, its first
// offset, with hwm its new high watermark.
type fetchedAnswer struct {
	msgs []indexer.Message
	// buf is the pooled buffer the messages' bytes are in (answerBuf),
	// nil when they are in one of their own.
	buf *[]byte
	mark
}

// mark is where a partition stands after an answer or a batch
// (fetcher.take): the high watermark its fetch saw and the position
// after it. restart says the position went back (a recreated partition)
// with no message: the watermark then replaces the partition's, rather
// than raising it.
type mark struct {
	hwm, next int64
	restart   bool
}

// newFetcher starts reading p from its position until ctx ends or stop.
func (c *Consumer) newFetcher(ctx context.Context, log *slog.Logger, p *partition) *fetcher {
	ctx, cancel := context.WithCancel(ctx)
	f := &fetcher{c: c, log: log, client: c.fetchClient(), topic: p.topic, id: p.id, pos: p.pos.Load(),
		out: make(chan fetchedAnswer, answersAhead), free: make(chan []indexer.Message, answersAhead+2),
		cancel: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f
}

// fetchClient is a fetcher's kafka-go client. The fetch's own wait
// (FetchWait) bounds how long a broker keeps an answer; the client's
// timeout, also a fetch in place's, is for a broker that does not answer.
func (c *Consumer) fetchClient() *kafkago.Client {
	cl := c.client()
	cl.Timeout += c.p.FetchWait + kafkaRTT
	return cl
}

// stop ends the fetching goroutine and waits for it.
func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// run fetches until ctx ends. An answer goes to the loop when it holds
// a message or moves the position (markers only); what an answer held
// before a record failed to decode goes too, before the retry. Failed
// fetches are logged as a run (failureLog): the first at Warn, the same
// error again at Debug, the first success after them at Info.
func (f *fetcher) run(ctx context.Context) {
	defer close(f.done)
	defer func() {
		if f.leader != nil {
			f.leader.close()
		}
	}()
	delay := f.c.p.BackoffMin
	sent := f.pos
	var failures failureLog
	for ctx.Err() == nil {
		a, err := f.fetch(ctx)
		if len(a.msgs) > 0 || a.next > sent || a.restart {
			select {
			case f.out <- a:
				sent = a.next
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures.failed(f.log, "fetch failed; retrying", err, "offset", f.pos, "backoff", delay)
			f.c.retried()
			if !sleep(ctx, delay) {
				return
			}
			delay = f.c.backoff(delay)
			continue
		}
		failures.succeeded(f.log, "fetching again", "offset", f.pos)
		delay = f.c.p.BackoffMin
	}
}

// fetch asks for the partition's messages from pos and hands over those
// at or after pos (an answer may begin with earlier ones of a record
// batch) in one buffer they share, advancing pos: in place
// (fetchInPlace), else through kafka-go's Client (clientFetch) when the
// leader does not take Fetch v11 or the answer begins with a record
// batch of an old message format. Messages read before a record fails to
// decode are kept; the error then says to fetch again from after them.
func (f *fetcher) fetch(ctx context.Context) (fetchedAnswer, error) {
	if !f.viaClient {
		a, err := f.fetchInPlace(ctx)
		switch {
		case errors.Is(err, errNoFetchV11):
			f.log.Info("the partition's leader does not take Fetch v11; fetching through kafka-go's client")
			f.viaClient = true
		case errors.Is(err, errOldFormat) && len(a.msgs) == 0:
		case errors.Is(err, errOldFormat):
			return a, nil // the old batches next time, through the client
		default:
			return a, err
		}
	}
	return f.clientFetch(ctx)
}

// clientFetch is fetch through kafka-go's Client.Fetch: it copies the
// messages at or after pos into one buffer the answer's messages share.
func (f *fetcher) clientFetch(ctx context.Context) (fetchedAnswer, error) {
	res, err := f.client.Fetch(ctx, &kafkago.FetchRequest{
		Topic: f.topic, Partition: f.id, Offset: f.pos,
		MinBytes: 1, MaxBytes: int64(f.c.p.MaxFetchBytes), MaxWait: f.c.p.FetchWait,
	})
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		a := fetchedAnswer{mark: mark{next: f.pos}}
		if errors.Is(err, kafkago.OffsetOutOfRange) {
			a, err = f.outOfRange(ctx, err)
		}
		return a, err
	}
	// Taking the answer apart is CPU work: a turn while the Ps are raised
	// (live writes; internal/spareprocs), as the parse and the decode.
	defer spareprocs.Hold()()
	// First the records and the size of their keys and values, then one
	// buffer of that size for their copies: the buffers an answer was
	// copied into before, from 4 KiB doubling up to 256 KiB, left about
	// half of the last unused (docs/kafka-history.md, "Fifty-seventh session").
	recs, size, err := f.records(res.Records)
	defer func() {
		clear(recs) // no reference to kafka-go's pages is kept
		f.recs = recs[:0]
	}()
	a := fetchedAnswer{mark: mark{hwm: res.HighWatermark}}
	if len(recs) > 0 {
		a.msgs = f.spare(len(recs))
	}
	var buf []byte
	buf, a.buf = f.c.answerBuf(size)
	for i, r := range recs {
		var key, value []byte
		var rerr error
		buf, key, rerr = appendBytes(buf, r.key)
		if rerr == nil {
			buf, value, rerr = appendBytes(buf, r.value)
		}
		if rerr != nil {
			for _, r := range recs[i:] {
				r.release()
			}
			a.next = f.pos
			return a, rerr
		}
		r.release()
		a.msgs = append(a.msgs, indexer.Message{Topic: f.topic, Partition: f.id, Offset: r.offset, Key: key, Value: value})
		f.pos = r.offset + 1
	}
	if err != nil {
		a.next = f.pos
		return a, err
	}
	f.skipControl(res.Records)
	a.next = f.pos
	return a, nil
}

// pooledAnswerMin is the smallest answer (its keys and values) copied
// into a pooled buffer (answerBuf), and the smallest such buffer.
const pooledAnswerMin = 64 << 10

// answerClass is the pool of buffers of pooledAnswerMin<<class bytes that
// holds n bytes (n >= 1): the smallest power of two times pooledAnswerMin
// at or over n.
func answerClass(n int) int {
	return bits.Len(uint((n - 1) / pooledAnswerMin))
}

// answerBuf is an empty buffer for an answer's size bytes of keys and
// values: one from the consumer's pools when size is between
// pooledAnswerMin and MaxFetchBytes (p non-nil: the buffer to give back
// once the last batch holding its messages is done, releaseAnswers),
// else one of its own. A pooled buffer is of the smallest power of two
// times pooledAnswerMin that holds the answer (answerClass), so that a
// live partition's answers of a few hundred KiB do not each hold a
// buffer of MaxFetchBytes.
//
// A replay's answers are each about MaxFetchBytes, and a buffer of its
// own each was a new page per 4 KiB while a replay runs without a
// collection: about 330 MB in the real mix's replay, a third of the
// garbage of a round and of its first round's page faults. From the
// pools, the buffers of the batches done are used again; those in hand
// (fetched ahead, answersAhead) are not (docs/kafka-history.md, "Sixty-fifth
// session").
func (c *Consumer) answerBuf(size int) (buf []byte, p *[]byte) {
	if size < pooledAnswerMin || size > c.p.MaxFetchBytes {
		return make([]byte, 0, size), nil
	}
	class := answerClass(size)
	if p, ok := c.answers[class].Get().(*[]byte); ok {
		c.answersReused.Add(1)
		return (*p)[:0], p
	}
	p = new([]byte)
	*p = make([]byte, 0, pooledAnswerMin<<class)
	return *p, p
}

// releaseAnswers gives bufs back to the pool: every batch that holds a
// message in them is done (handled, committed and cleared).
func (c *Consumer) releaseAnswers(bufs []*[]byte) {
	for _, p := range bufs {
		if scribbleReleased.Load() {
			b := (*p)[:cap(*p)]
			for i := range b {
				b[i] = '#'
			}
		}
		c.answers[answerClass(cap(*p))].Put(p)
	}
}

// scribbleReleased, set by tests, has releaseAnswers overwrite each
// buffer it gives back, so that a message still in use when its buffer
// was given back shows. Atomic: a test's consumer may still be stopping
// when the test turns it off.
var scribbleReleased atomic.Bool

// takeFreed returns the pooled buffers the last take finished (freed),
// for the caller to give back once that batch is done.
func (f *fetcher) takeFreed() []*[]byte {
	d := f.freed
	f.freed = nil
	return d
}

// spare is an emptied slice of messages back from the loop with room for
// n, or a new one.
func (f *fetcher) spare(n int) []indexer.Message {
	select {
	case m := <-f.free:
		if cap(m) >= n {
			return m
		}
	default:
	}
	return make([]indexer.Message, 0, n)
}

// record is a record of a fetch answer at or after the fetcher's
// position, its key and value still in kafka-go's pages.
type record struct {
	offset     int64
	key, value protocol.Bytes
}

// records reads an answer's records at or after pos into the fetcher's
// reused slice (those before pos are released at once), with the bytes
// their keys and values take. A record that fails to decode ends the
// records, with its error.
func (f *fetcher) records(rr kafkago.RecordReader) ([]record, int, error) {
	recs, size := f.recs[:0], 0
	for {
		rec, err := rr.ReadRecord()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return recs, size, err
		}
		r := record{offset: rec.Offset, key: rec.Key, value: rec.Value}
		if r.offset < f.pos {
			r.release()
			continue
		}
		recs = append(recs, r)
		size += bytesLen(r.key) + bytesLen(r.value)
	}
}

// release hands a record's key and value back to kafka-go once read
// (protocol.Bytes is a reference to the pages its record batch was
// decoded into, counted). kafka-go puts a page whose references are all
// released back in its pool for the next batch; a page still referenced is
// left to the collector, and every batch then decodes into 64 KiB pages
// allocated anew: in the mix's replay about as many bytes as the messages
// themselves, a sixth of what the ingest allocated (docs/kafka-history.md,
// "Fifty-seventh session").
func (r record) release() {
	for _, b := range [2]protocol.Bytes{r.key, r.value} {
		if b != nil {
			b.Close()
		}
	}
}

// bytesLen is the length of a record's key or value (0 when null).
func bytesLen(b protocol.Bytes) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// appendBytes reads b (nil: a null key or value, kept nil) onto buf, which
// has room for it, and returns it as a slice of its own (capacity its
// length, so an append to one never writes into the next).
func appendBytes(buf []byte, b protocol.Bytes) ([]byte, []byte, error) {
	if b == nil {
		return buf, nil, nil
	}
	n, at := b.Len(), len(buf)
	buf = buf[:at+n]
	if _, err := io.ReadFull(b, buf[at:]); err != nil {
		return buf[:at], nil, err
	}
	return buf, buf[at : at+n : at+n], nil
}

// skipControl moves pos past the control batches (transaction markers)
// of an answer, which hold no messages: a partition that ends with one
// would otherwise be fetched from before it again and again.
func (f *fetcher) skipControl(rr kafkago.RecordReader) {
	stream, ok := rr.(*protocol.RecordStream)
	if !ok {
		return
	}
	for _, r := range stream.Records {
		cb, ok := r.(*protocol.ControlBatch)
		if !ok {
			continue
		}
		for {
			cr, err := cb.ReadControlRecord()
			if err != nil {
				break
			}
			if cr.Offset >= f.pos {
				f.pos = cr.Offset + 1
			}
		}
	}
}

// outOfRange answers a fetch the broker refused as out of range: the
// partition's log no longer starts at or before pos (retention deleted
// messages not yet read: they are lost to this read model, so it is
// logged as an error) or ends before it (the partition was deleted and
// created again: it is read again from its first offset, as
// newPartitions does at start, and the answer restarts the partition's
// position and watermark). err is returned for the retry when the
// offsets cannot be listed.
func (f *fetcher) outOfRange(ctx context.Context, err error) (fetchedAnswer, error) {
	offs, lerr := f.c.offsets(ctx, []topicPartition{{f.topic, f.id}})
	if lerr != nil {
		return fetchedAnswer{mark: mark{next: f.pos}}, errors.Join(err, lerr)
	}
	o := offs[topicPartition{f.topic, f.id}]
	switch {
	case f.pos < o[0]:
		f.log.Error("messages deleted before they were read; skipping them", "offset", f.pos, "first_offset", o[0], "skipped", o[0]-f.pos)
		f.pos = o[0]
		return fetchedAnswer{mark: mark{next: f.pos}}, nil
	case f.pos > o[1]:
		f.log.Warn("offset past the high watermark; reading the partition from its first offset", "offset", f.pos, "high_watermark", o[1])
		f.pos = o[0]
		return fetchedAnswer{mark: mark{hwm: o[1], next: f.pos, restart: true}}, nil
	}
	return fetchedAnswer{mark: mark{next: f.pos}}, err // in range now: fetch again
}

// take appends the partition's next messages to batch, blocking for the
// first: the rest of the answer in hand, then what arrives within
// BatchWait, up to BatchSize. A batch that reaches the high watermark the
// fetch saw goes at once. It returns the high watermark and the
// position after the batch: past the answer's transaction markers too
// when the batch took the answer's last message (a batch of no message
// when an answer held markers only). An answer that restarts the
// partition ends the batch before it and is a batch of its own, of no
// message. Once ctx ends it returns the messages taken so far, so the
// caller can finish them; false with none.
func (f *fetcher) take(ctx context.Context, batch []indexer.Message) ([]indexer.Message, mark, bool) {
	if len(f.cur) == 0 {
		a, ok := f.receive(ctx, nil)
		if !ok {
			return batch, mark{}, false
		}
		f.hold(a)
		if len(f.cur) == 0 {
			return batch, a.mark, true // markers only, or a restart
		}
	}
	batch, full := f.move(batch)
	if !full {
		wait := time.NewTimer(f.c.p.BatchWait)
		defer wait.Stop()
		for !full {
			a, ok := f.receive(ctx, wait.C)
			if !ok {
				break
			}
			if a.restart {
				f.restart = &a // the next take's
				break
			}
			f.hold(a)
			if len(f.cur) == 0 {
				break // markers only: the batch ends past them
			}
			batch, full = f.move(batch)
		}
	}
	next := batch[len(batch)-1].Offset + 1
	if len(f.cur) == 0 {
		next = f.next
	}
	return batch, mark{hwm: f.hwm, next: next}, true
}

// receive waits for the next answer (a restart held back by the last
// take first); false when ctx ended, the fetcher stopped or wait fired
// first.
func (f *fetcher) receive(ctx context.Context, wait <-chan time.Time) (fetchedAnswer, bool) {
	if a := f.restart; a != nil {
		f.restart = nil
		return *a, true
	}
	select {
	case a := <-f.out:
		return a, true
	case <-wait:
	case <-ctx.Done():
	case <-f.done:
	}
	return fetchedAnswer{}, false
}

// hold makes a the answer in hand.
func (f *fetcher) hold(a fetchedAnswer) {
	f.cur, f.hwm, f.next = a.msgs, a.hwm, a.next
	f.held = a.msgs
	f.heldBuf = a.buf
}

// move appends what batch has room for of the answer in hand; full when
// the batch has no more room or reached the high watermark.
func (f *fetcher) move(batch []indexer.Message) ([]indexer.Message, bool) {
	n := min(len(f.cur), f.c.p.BatchSize-len(batch))
	batch = append(batch, f.cur[:n]...)
	clear(f.cur[:n]) // the answer's buffer goes with the last batch that holds it
	f.cur = f.cur[n:]
	if len(f.cur) == 0 && cap(f.held) > 0 {
		select {
		case f.free <- f.held[:0]:
		default:
		}
		f.held = nil
	}
	if len(f.cur) == 0 && f.heldBuf != nil {
		f.freed = append(f.freed, f.heldBuf) // with this batch, the answer's last
		f.heldBuf = nil
	}
	last := batch[len(batch)-1]
	return batch, len(batch) >= f.c.p.BatchSize || (f.hwm > 0 && last.Offset+1 >= f.hwm)
}
