package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/internal/syncbuf"
)

// collected records what a Handler was given, per partition, with a copy
// of each message's bytes taken when it was handled.
type collected struct {
	mu      sync.Mutex
	msgs    map[int][]indexer.Message
	batches []int
}

func (c *collected) handler(_ context.Context, msgs []indexer.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.msgs == nil {
		c.msgs = map[int][]indexer.Message{}
	}
	c.batches = append(c.batches, len(msgs))
	for _, m := range msgs {
		// A message's key and value are slices of their own: an append to
		// one must not write into the bytes of the next.
		_ = append(m.Value, "overwritten?"...)
		_ = append(m.Key, "overwritten?"...)
		c.msgs[m.Partition] = append(c.msgs[m.Partition], indexer.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset,
			Key: bytes.Clone(m.Key), Value: bytes.Clone(m.Value)})
	}
	return nil
}

func (c *collected) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ms := range c.msgs {
		n += len(ms)
	}
	return n
}

// firstHeld is a Handler that holds its first batch until release is
// closed, then hands every batch to next.
type firstHeld struct {
	next           kafka.Handler
	once           sync.Once
	first, release chan struct{}
}

func holdFirst(next kafka.Handler) *firstHeld {
	return &firstHeld{next: next, first: make(chan struct{}), release: make(chan struct{})}
}

func (h *firstHeld) handle(ctx context.Context, msgs []indexer.Message) error {
	h.once.Do(func() {
		close(h.first)
		<-h.release
	})
	return h.next(ctx, msgs)
}

// wait returns once the first batch is held and the partition's fetcher
// has had time to fill what it holds ahead.
func (h *firstHeld) wait() {
	<-h.first
	time.Sleep(200 * time.Millisecond)
}

// The consumer fetches a partition's messages an answer at a time, copied
// into shared buffers: every message arrives once, in offset order, with
// its own bytes (an append to one does not reach the next), in batches of
// at most BatchSize; a message larger than MaxFetchBytes still comes (a
// broker answers with at least the first record batch), and so does a
// null key.
func TestFetchAnswersKeepEveryMessage(t *testing.T) {
	b := newBroker(t, 1)
	var recs []kafka.Record
	for i := range 300 {
		size := 50 + (i*997)%3000
		if i%50 == 7 {
			size = 20_000 // five times MaxFetchBytes
		}
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(v, strconv.Itoa(i)+":")
		key := []byte("k" + strconv.Itoa(i))
		if i%9 == 4 {
			key = nil
		}
		recs = append(recs, kafka.Record{Topic: locTopic, Key: key, Value: v})
	}
	b.publishRaw(recs...)

	var got collected
	p := fastParams(b, "", got.handler)
	p.Topics = []string{locTopic}
	p.MaxFetchBytes = 4096
	p.BatchSize = 7
	c := start(t, p)
	eventually(t, 20*time.Second, "caught up", c.CaughtUp)
	require.Equal(t, len(recs), got.count())

	msgs := got.msgs[0]
	for i, m := range msgs {
		require.EqualValues(t, i, m.Offset, "offset order, each once")
		require.Equal(t, recs[i].Value, m.Value, "message %d", i)
		if recs[i].Key == nil {
			require.Empty(t, m.Key, "message %d", i)
		} else {
			require.Equal(t, recs[i].Key, m.Key, "message %d", i)
		}
	}
	for _, n := range got.batches {
		require.LessOrEqual(t, n, 7)
	}
}

// kgoClient is a franz-go client of b, for what kafka-go cannot ask a
// broker: transactions and record deletion.
func kgoClient(t *testing.T, b *broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addrs...)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// A transactional producer's commit markers are control batches, which
// hold no message: the fetcher reads past them (rather than fetching the
// marker again and again), the partition's position moves past them (so
// a partition that ends with one is caught up, with no lag), and
// messages after them still arrive.
func TestFetchReadsPastTransactionMarkers(t *testing.T) {
	b := newBroker(t, 1)
	tx := kgoClient(t, b, kgo.TransactionalID("permitd-test"), kgo.DefaultProduceTopic(locTopic))
	ctx := context.Background()
	produceTx := func(from, to int) {
		require.NoError(t, tx.BeginTransaction())
		for i := from; i < to; i++ {
			tx.Produce(ctx, &kgo.Record{Key: []byte("k"), Value: []byte(strconv.Itoa(i))}, nil)
		}
		require.NoError(t, tx.Flush(ctx))
		require.NoError(t, tx.EndTransaction(ctx, kgo.TryCommit))
	}
	produceTx(0, 5)

	var got collected
	p := fastParams(b, "", got.handler)
	p.Topics = []string{locTopic}
	p.LagInterval = 20 * time.Millisecond // the watermarks polled: the lag counts a marker at once
	var fetches atomic.Int64
	b.cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		fetches.Add(1)
		return nil, nil, false
	})
	c := start(t, p)
	eventually(t, 10*time.Second, "the first transaction", func() bool { return got.count() == 5 })
	// Past the marker, the partition's fetches wait on the broker
	// (FetchWait, 100ms): a few in 300ms, not one after another.
	time.Sleep(50 * time.Millisecond)
	before := fetches.Load()
	time.Sleep(300 * time.Millisecond)
	require.Less(t, fetches.Load()-before, int64(10), "fetches in 300ms with nothing new")
	// The position is past the marker: the partition is caught up (its
	// high watermark counts the marker), with no lag.
	eventually(t, 5*time.Second, "caught up past the marker", c.CaughtUp)
	require.Zero(t, c.Lag())
	// A transaction read before it commits (read uncommitted): its
	// marker comes alone, in an answer of no message, and still moves
	// the position.
	require.NoError(t, tx.BeginTransaction())
	for i := 5; i < 8; i++ {
		tx.Produce(ctx, &kgo.Record{Key: []byte("k"), Value: []byte(strconv.Itoa(i))}, nil)
	}
	require.NoError(t, tx.Flush(ctx))
	eventually(t, 10*time.Second, "the second transaction", func() bool { return got.count() == 8 })
	require.NoError(t, tx.EndTransaction(ctx, kgo.TryCommit))
	for i, m := range got.msgs[0] {
		require.Equal(t, strconv.Itoa(i), string(m.Value))
	}
	time.Sleep(100 * time.Millisecond)
	eventually(t, 5*time.Second, "no lag past the second marker", func() bool { return c.Lag() == 0 })
}

// Messages deleted before they were read (retention, or a deletion of
// records) are skipped with an error logged, and reading goes on from
// the partition's new first offset; what was fetched before still
// arrives.
func TestFetchSkipsDeletedMessages(t *testing.T) {
	b := newBroker(t, 1)
	for i := range 20 { // a record batch each: an answer each (MaxFetchBytes 1)
		b.publishRaw(kafka.Record{Topic: locTopic, Key: []byte("k"), Value: []byte(strconv.Itoa(i))})
	}

	// The first batch is held until records before 15 are deleted, while
	// the partition's fetcher runs ahead only a few answers.
	var got collected
	h := holdFirst(got.handler)
	p := fastParams(b, "", h.handle)
	p.Topics = []string{locTopic}
	p.MaxFetchBytes, p.BatchSize = 1, 1
	var logs syncbuf.Buffer
	p.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	c := start(t, p)
	h.wait()

	req := kmsg.NewPtrDeleteRecordsRequest()
	topic := kmsg.NewDeleteRecordsRequestTopic()
	topic.Topic = locTopic
	part := kmsg.NewDeleteRecordsRequestTopicPartition()
	part.Partition, part.Offset = 0, 15
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	res, err := req.RequestWith(context.Background(), kgoClient(t, b))
	require.NoError(t, err)
	require.Zero(t, res.Topics[0].Partitions[0].ErrorCode)
	close(h.release)

	eventually(t, 10*time.Second, "caught up", c.CaughtUp)
	msgs := got.msgs[0]
	k := 0
	for k < len(msgs) && msgs[k].Offset == int64(k) {
		k++
	}
	require.Less(t, k, 15, "the fetcher held fewer than 15 ahead")
	require.Len(t, msgs, k+5, "what was fetched before, then 15 to 19")
	for i, m := range msgs[k:] {
		require.EqualValues(t, 15+i, m.Offset)
		require.Equal(t, strconv.Itoa(15+i), string(m.Value))
	}
	require.Contains(t, logs.String(), "messages deleted before they were read")
	require.Contains(t, logs.String(), "skipped="+strconv.Itoa(15-k))
}

// A fetch that fails (here the broker drops the connection instead of
// answering, three times) is logged, counted as a retry and fetched
// again after a backoff, from the same offset: every message still
// arrives once, in order. The three failures are logged as a run: the
// first at Warn, the same error again at Debug, and the success after
// them at Info with their count.
func TestFetchRetriesAFailedFetch(t *testing.T) {
	b := newBroker(t, 1)
	var recs []kafka.Record
	for i := range 50 {
		recs = append(recs, kafka.Record{Topic: locTopic, Key: []byte("k"), Value: []byte(strconv.Itoa(i))})
	}
	b.publishRaw(recs...)
	var failed atomic.Int64
	b.cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		if failed.Load() >= 3 {
			return nil, nil, false
		}
		failed.Add(1)
		return nil, errors.New("injected: no answer"), true
	})

	var got collected
	p := fastParams(b, "", got.handler)
	p.Topics = []string{locTopic}
	reg := prometheus.NewRegistry()
	p.Metrics = indexer.NewMetrics(reg)
	var logs syncbuf.Buffer
	p.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := start(t, p)
	eventually(t, 10*time.Second, "caught up", c.CaughtUp)
	require.EqualValues(t, 3, failed.Load())
	require.Len(t, got.msgs[0], len(recs))
	for i, m := range got.msgs[0] {
		require.EqualValues(t, i, m.Offset)
		require.Equal(t, strconv.Itoa(i), string(m.Value))
	}
	require.GreaterOrEqual(t, value(t, p.Metrics.Retries), 3.0)
	out := logs.String()
	require.Equal(t, 3, strings.Count(out, "fetch failed; retrying"), out)
	require.Equal(t, 1, strings.Count(out, `level=WARN msg="fetch failed; retrying"`), out)
	require.Equal(t, 2, strings.Count(out, `level=DEBUG msg="fetch failed; retrying"`), out)
	require.Equal(t, 1, strings.Count(out, `level=INFO msg="fetching again"`), out)
	require.Contains(t, out, "failures=3 failing_for=")
}

// A partition deleted and created again while the consumer reads it
// starts over at offset 0, below the consumer's position: the fetcher
// reads it from its first offset again, and the partition's position
// and high watermark follow it down, so the lag shows the new
// partition's messages not yet read (none, once read), not the old
// partition's end less the new position.
func TestFetchReadsARecreatedPartition(t *testing.T) {
	b := newBroker(t, 1)
	for i := range 20 {
		b.publishRaw(kafka.Record{Topic: locTopic, Key: []byte("k"), Value: []byte("old" + strconv.Itoa(i))})
	}
	var got collected
	p := fastParams(b, "", got.handler)
	p.Topics = []string{locTopic}
	p.LagInterval = 20 * time.Millisecond
	var logs syncbuf.Buffer
	p.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	c := start(t, p)
	eventually(t, 10*time.Second, "the old partition read", func() bool { return got.count() == 20 && c.CaughtUp() })

	recreate(t, b, locTopic)
	for i := range 5 {
		b.publishRaw(kafka.Record{Topic: locTopic, Key: []byte("k"), Value: []byte("new" + strconv.Itoa(i))})
	}

	eventually(t, 10*time.Second, "the new partition read", func() bool { return got.count() == 25 })
	for i, m := range got.msgs[0][20:] {
		require.EqualValues(t, i, m.Offset)
		require.Equal(t, "new"+strconv.Itoa(i), string(m.Value))
	}
	eventually(t, 5*time.Second, "no lag once the new partition is read", func() bool { return c.Lag() == 0 })
	require.Contains(t, logs.String(), "offset past the high watermark")
}

// recreate deletes topic and creates it again with one partition
// (recreateWith: n).
func recreate(t *testing.T, b *broker, topic string) { recreateWith(t, b, topic, 1) }

func recreateWith(t *testing.T, b *broker, topic string, n int32) {
	t.Helper()
	cl := kgoClient(t, b)
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(topic)
	del.Topics, del.TopicNames = append(del.Topics, dt), []string{topic}
	dres, err := del.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.Zero(t, dres.Topics[0].ErrorCode)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, n, 1
	create.Topics = append(create.Topics, ct)
	cres, err := create.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.Zero(t, cres.Topics[0].ErrorCode)
}

// A replay whose partition is deleted and created again before it caught
// up waits for the new partition's end, not the old one's, which it
// would never reach: it catches up once the new partition is read.
func TestFetchReplayCatchesUpWithARecreatedPartition(t *testing.T) {
	b := newBroker(t, 1)
	for i := range 20 { // a record batch each: an answer each (MaxFetchBytes 1)
		b.publishRaw(kafka.Record{Topic: locTopic, Key: []byte("k"), Value: []byte("old" + strconv.Itoa(i))})
	}
	var got collected
	h := holdFirst(got.handler)
	p := fastParams(b, "", h.handle)
	p.Topics = []string{locTopic}
	p.MaxFetchBytes, p.BatchSize = 1, 1
	p.LagInterval = 20 * time.Millisecond
	c := start(t, p)
	h.wait()
	recreate(t, b, locTopic)
	for i := range 2 {
		b.publishRaw(kafka.Record{Topic: locTopic, Key: []byte("k"), Value: []byte("new" + strconv.Itoa(i))})
	}
	close(h.release)

	eventually(t, 10*time.Second, "caught up", c.CaughtUp)
	msgs := got.msgs[0]
	require.GreaterOrEqual(t, len(msgs), 3)
	k := len(msgs) - 2
	require.Less(t, k, 20, "the fetcher held fewer than 20 ahead")
	for i, m := range msgs[:k] {
		require.EqualValues(t, i, m.Offset)
		require.Equal(t, "old"+strconv.Itoa(i), string(m.Value))
	}
	for i, m := range msgs[k:] {
		require.EqualValues(t, i, m.Offset)
		require.Equal(t, "new"+strconv.Itoa(i), string(m.Value))
	}
	eventually(t, 5*time.Second, "no lag", func() bool { return c.Lag() == 0 })
}
