package kafka

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/permitd/permitd/indexer"
)

// A fetcher that starts inside a record batch (a committed offset or a
// restart's position after a batch's first records) gets the whole
// batch from the broker and hands over only the records from its
// position on.
func TestFetcherStartsInsideARecordBatch(t *testing.T) {
	var recs []Record
	for i := range 20 {
		recs = append(recs, Record{Topic: "t", Key: []byte("k"), Value: []byte(strconv.Itoa(i))})
	}
	c := consumerOver(t, recs) // one record batch
	p := &partition{topic: "t"}
	p.pos.Store(7)
	f := c.newFetcher(context.Background(), c.log, p)
	defer f.stop()
	var got []indexer.Message
	for {
		batch, at, ok := f.take(context.Background(), nil)
		require.True(t, ok)
		got = append(got, batch...)
		if at.next >= 20 {
			break
		}
	}
	require.Len(t, got, 13)
	for i, m := range got {
		require.EqualValues(t, 7+i, m.Offset)
		require.Equal(t, strconv.Itoa(7+i), string(m.Value))
	}
}

// consumerOver publishes recs to topic "t" (one partition) of a kfake
// cluster of its own and returns a consumer of it to build fetchers on;
// both end with the test.
func consumerOver(t *testing.T, recs []Record) *Consumer {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	pub, err := NewPublisher(cluster.ListenAddrs())
	require.NoError(t, err)
	require.NoError(t, pub.PublishRaw(context.Background(), recs...))
	require.NoError(t, pub.Close())
	c, err := New(Params{Brokers: cluster.ListenAddrs(), Topics: []string{"t"}, Handler: func(context.Context, []indexer.Message) error { return nil }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(c.transport.CloseIdleConnections)
	return c
}

// An answer that restarts the partition (deleted and created again),
// arriving while a batch is being filled, ends that batch before it
// (whose position is still the old partition's) and is a batch of its
// own, of no message, before the new partition's messages.
func TestTakeEndsABatchBeforeARestart(t *testing.T) {
	c, err := New(Params{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"t"}, Handler: func(context.Context, []indexer.Message) error { return nil },
		Logger: slog.New(slog.DiscardHandler), BatchSize: 10, BatchWait: time.Minute})
	require.NoError(t, err)
	msgs := func(from, to int64) []indexer.Message {
		var ms []indexer.Message
		for o := from; o < to; o++ {
			ms = append(ms, indexer.Message{Topic: "t", Offset: o})
		}
		return ms
	}
	f := &fetcher{c: c, out: make(chan fetchedAnswer, 3), done: make(chan struct{})}
	f.out <- fetchedAnswer{msgs: msgs(5, 7), mark: mark{hwm: 100, next: 7}}
	f.out <- fetchedAnswer{mark: mark{hwm: 3, next: 0, restart: true}}
	f.out <- fetchedAnswer{msgs: msgs(0, 3), mark: mark{hwm: 3, next: 3}}

	batch, at, ok := f.take(context.Background(), nil)
	require.True(t, ok)
	require.Equal(t, msgs(5, 7), batch)
	require.Equal(t, mark{hwm: 100, next: 7}, at)

	batch, at, ok = f.take(context.Background(), nil)
	require.True(t, ok)
	require.Empty(t, batch)
	require.Equal(t, mark{hwm: 3, next: 0, restart: true}, at)

	batch, at, ok = f.take(context.Background(), nil)
	require.True(t, ok)
	require.Equal(t, msgs(0, 3), batch)
	require.Equal(t, mark{hwm: 3, next: 3}, at)
}

// A watermark the poller listed before a partition restarted is the old
// partition's: it does not raise the new one's; one listed after does.
func TestListedWatermarkBeforeARestartIsIgnored(t *testing.T) {
	p := &partition{}
	p.raiseHWM(100)
	before := p.restarts.Load()
	p.restart(0, 3)
	p.raiseListedHWM(100, before)
	require.EqualValues(t, 3, p.hwm.Load())
	p.raiseListedHWM(5, p.restarts.Load())
	require.EqualValues(t, 5, p.hwm.Load())
}

// A fetch through kafka-go's Client (clientFetch: a leader without Fetch
// v11, old message formats) hands each record's key and value back to
// kafka-go once copied, so the 64 KiB pages kafka-go decodes a record
// batch into go back to its pool for the next fetch rather than being
// allocated anew: fetching the same 256 KiB of messages forty times
// allocates pages for a few fetches (a collection empties the pool),
// where without the release every fetch allocates at least its messages'
// bytes in new pages.
func TestFetchReleasesKafkaGoPages(t *testing.T) {
	if raceDetector {
		t.Skip(raceSkip)
	}
	const n, size = 256, 1 << 10
	var recs []Record
	for i := range n {
		recs = append(recs, Record{Topic: "t", Key: []byte(strconv.Itoa(i)), Value: make([]byte, size)})
	}
	c := consumerOver(t, recs)
	f := &fetcher{c: c, log: c.log, client: c.client(), topic: "t"}
	fetchAll := func() {
		f.pos = 0
		for f.pos < n {
			a, err := f.clientFetch(context.Background())
			require.NoError(t, err)
			require.NotEmpty(t, a.msgs)
		}
	}
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1 // every allocation, with its stack
	const newPage = "github.com/segmentio/kafka-go/protocol.newPage"
	before := allocatedIn(newPage)
	const rounds = 40
	for range rounds {
		fetchAll()
	}
	pages := allocatedIn(newPage) - before
	t.Logf("%d bytes of kafka-go pages allocated in %d fetches of %d bytes of messages", pages, rounds, n*size)
	require.Less(t, pages, int64(rounds*n*size/4))
}

// raceSkip is why the allocation tests do not run under -race: a
// sync.Pool drops a share of what it is given there, by design, and the
// detector's own bookkeeping allocates.
const raceSkip = "allocations are not the product's under -race"

// allocatedIn is what fn has allocated so far (fn the function that asked
// for the memory, inlined or not), by the memory profile
// (runtime.MemProfileRate 1 records every allocation).
func allocatedIn(fn string) int64 {
	runtime.GC() // the profile is as of the last collection that completed
	runtime.GC()
	recs := make([]runtime.MemProfileRecord, 4096)
	for {
		n, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, 2*n)
	}
	var total int64
	for _, r := range recs {
		frames := runtime.CallersFrames(r.Stack())
		for {
			fr, more := frames.Next()
			if !strings.HasPrefix(fr.Function, "runtime.") {
				if fr.Function == fn {
					total += r.AllocBytes
				}
				break
			}
			if !more {
				break
			}
		}
	}
	return total
}

// An answer's slice of messages goes back to the fetching goroutine,
// emptied and cleared, once the loop has taken all its messages (not
// before), and the next answer's messages are appended to it.
func TestTakenAnswersSlicesAreUsedAgain(t *testing.T) {
	c, err := New(Params{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"t"}, Handler: func(context.Context, []indexer.Message) error { return nil },
		Logger: slog.New(slog.DiscardHandler), BatchSize: 4, BatchWait: time.Millisecond})
	require.NoError(t, err)
	f := &fetcher{c: c, out: make(chan fetchedAnswer, 1), free: make(chan []indexer.Message, 1), done: make(chan struct{})}
	msgs := make([]indexer.Message, 0, 8)
	for o := range int64(6) {
		msgs = append(msgs, indexer.Message{Topic: "t", Offset: o, Value: []byte("v")})
	}
	f.out <- fetchedAnswer{msgs: msgs, mark: mark{hwm: 100, next: 6}}

	batch, _, ok := f.take(context.Background(), nil)
	require.True(t, ok)
	require.Len(t, batch, 4)
	require.Empty(t, f.free, "two messages of the answer are still to be taken")

	batch, at, ok := f.take(context.Background(), batch[:0])
	require.True(t, ok)
	require.Len(t, batch, 2)
	require.EqualValues(t, 6, at.next)
	require.EqualValues(t, 5, batch[1].Offset)
	require.Len(t, f.free, 1)

	spare := f.spare(7)
	require.Empty(t, spare)
	require.Equal(t, 8, cap(spare))
	require.Same(t, &msgs[:1][0], &spare[:1][0], "the answer's own array")
	for _, m := range spare[:cap(spare)] {
		require.Zero(t, m, "a message left in the array would keep its answer's buffer")
	}
	require.Equal(t, 5, cap(f.spare(5)), "none left: a new slice")
	f.free <- spare
	require.Equal(t, 9, cap(f.spare(9)), "too small: a new slice")
}

// Through kafka-go's Client (clientFetch), an answer's messages are
// copied into one buffer of their size: each message's key and value
// follow the last message's value, and the fetch allocates no more than
// the messages' bytes and their slice (the buffers that doubled from
// 4 KiB allocated about twice that for 256 KiB).
func TestFetchCopiesAnAnswerIntoOneBuffer(t *testing.T) {
	if raceDetector {
		t.Skip(raceSkip)
	}
	const n = 256
	var recs []Record
	payload := 0
	for i := range n {
		r := Record{Topic: "t", Key: []byte(strconv.Itoa(i)), Value: make([]byte, 900+i)}
		if i%50 == 7 {
			r.Key = nil // a null key: no bytes, nil
		}
		payload += len(r.Key) + len(r.Value)
		recs = append(recs, r)
	}
	c := consumerOver(t, recs)
	f := &fetcher{c: c, log: c.log, client: c.client(), topic: "t"}
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	const fetch = "github.com/permitd/permitd/indexer/kafka.(*fetcher).clientFetch"
	before := allocatedIn(fetch)
	a, err := f.clientFetch(context.Background())
	require.NoError(t, err)
	allocated := allocatedIn(fetch) - before
	require.Len(t, a.msgs, n, "one answer")
	var next uintptr
	for i, m := range a.msgs {
		require.EqualValues(t, i, m.Offset)
		require.Equal(t, recs[i].Key, m.Key)
		require.Len(t, m.Value, 900+i)
		for _, b := range [][]byte{m.Key, m.Value} {
			if len(b) == 0 {
				continue
			}
			at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			if next != 0 {
				require.Equal(t, next, at, "message %d follows the one before in the buffer", i)
			}
			next = at + uintptr(len(b))
		}
	}
	t.Logf("%d bytes allocated in fetch for %d bytes of messages", allocated, payload)
	// A large allocation is rounded up to 8 KiB pages; the slice of
	// messages is allocated once, for all.
	require.LessOrEqual(t, allocated, int64(payload)+8<<10+n*int64(unsafe.Sizeof(indexer.Message{})))
}

// An answer goes into the smallest pooled buffer that holds it, a power
// of two times pooledAnswerMin up to MaxFetchBytes, and one of its own
// outside that range; a buffer given back is handed out again for an
// answer of its class.
func TestAnswerBufferClasses(t *testing.T) {
	c := &Consumer{p: Params{MaxFetchBytes: 1 << 20}, answers: make([]sync.Pool, answerClass(1<<20)+1)}
	require.Len(t, c.answers, 5) // 64, 128, 256, 512 KiB and 1 MiB
	for _, tc := range []struct {
		size, cap int
		pooled    bool
	}{
		{pooledAnswerMin - 1, pooledAnswerMin - 1, false},
		{pooledAnswerMin, pooledAnswerMin, true},
		{pooledAnswerMin + 1, 2 * pooledAnswerMin, true},
		{300 << 10, 512 << 10, true},
		{1 << 20, 1 << 20, true},
		{1<<20 + 1, 1<<20 + 1, false},
	} {
		buf, p := c.answerBuf(tc.size)
		require.Zero(t, len(buf))
		require.Equal(t, tc.cap, cap(buf), "size %d", tc.size)
		require.Equal(t, tc.pooled, p != nil, "size %d", tc.size)
	}
	if raceDetector {
		return // its pools drop some of what they are given
	}
	_, p := c.answerBuf(300 << 10)
	c.releaseAnswers([]*[]byte{p})
	_, again := c.answerBuf(257 << 10)
	require.Same(t, p, again, "the 512 KiB buffer given back")
}
