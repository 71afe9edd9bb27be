package kafka

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/permitd/permitd/indexer"
)

// A fetch in place reads the answer's record batches into one pooled
// buffer and its messages' keys and values are slices of it, in offset
// order; once the batches holding them are done the buffer is handed out
// again for the next answer.
func TestFetchInPlaceReadsAnAnswerIntoItsBuffer(t *testing.T) {
	const n = 256
	var recs []Record
	for i := range n {
		r := Record{Topic: "t", Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i) + "-" + string(make([]byte, 900)))}
		if i%50 == 7 {
			r.Key = nil // a null key stays nil
		}
		recs = append(recs, r)
	}
	c := consumerOver(t, recs)
	f := inPlaceFetcher(c, "t", 0)
	defer func() { f.leader.close() }()
	a, err := f.fetch(t.Context())
	require.NoError(t, err)
	require.NotNil(t, f.leader, "fetched in place")
	require.Len(t, a.msgs, n, "one answer")
	require.NotNil(t, a.buf, "a pooled buffer")
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(*a.buf)))
	hi := lo + uintptr(cap(*a.buf))
	var last uintptr
	for i, m := range a.msgs {
		require.EqualValues(t, i, m.Offset)
		require.Equal(t, recs[i].Key, m.Key)
		require.Equal(t, recs[i].Value, m.Value)
		require.Equal(t, len(m.Value), cap(m.Value), "an append to a value never writes into the next")
		at := uintptr(unsafe.Pointer(unsafe.SliceData(m.Value)))
		require.True(t, at >= lo && at+uintptr(len(m.Value)) <= hi, "message %d is in the answer's buffer", i)
		require.Greater(t, at, last)
		last = at
	}
	require.EqualValues(t, n, a.next)
	if raceDetector {
		return // its pools drop some of what they are given
	}
	// One P: a pooled buffer is handed out again on the P it was given
	// back on.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c.releaseAnswers([]*[]byte{a.buf})
	f.pos = 0
	again, err := f.fetch(t.Context())
	require.NoError(t, err)
	require.Same(t, a.buf, again.buf, "the buffer given back")
}

// inPlaceFetcher is a fetcher of topic's partition id on c, not running:
// its test calls fetch.
func inPlaceFetcher(c *Consumer, topic string, id int) *fetcher {
	return &fetcher{c: c, log: c.log, client: c.fetchClient(), topic: topic, id: id, free: make(chan []indexer.Message, 1)}
}

// Record batches compressed by any of the codecs a publisher offers are
// taken apart in place.
func TestFetchInPlaceReadsCompressedBatches(t *testing.T) {
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
			require.NoError(t, err)
			t.Cleanup(cluster.Close)
			pub, err := NewPublisherWith(PublisherParams{Brokers: cluster.ListenAddrs(), Compression: codec, BatchSize: 40})
			require.NoError(t, err)
			var recs []Record
			for i := range 100 {
				recs = append(recs, Record{Topic: "t", Key: []byte("k"), Value: []byte("compressed value " + strconv.Itoa(i))})
			}
			require.NoError(t, pub.PublishRaw(t.Context(), recs...))
			require.NoError(t, pub.Close())
			c, err := New(Params{Brokers: cluster.ListenAddrs(), Topics: []string{"t"}, Handler: func(context.Context, []indexer.Message) error { return nil }, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			t.Cleanup(c.transport.CloseIdleConnections)
			f := inPlaceFetcher(c, "t", 0)
			f.pos = 5 // inside the first batch
			var got []indexer.Message
			for f.pos < 100 {
				a, err := f.fetch(t.Context())
				require.NoError(t, err)
				got = append(got, a.msgs...)
			}
			f.leader.close()
			require.Len(t, got, 95)
			for i, m := range got {
				require.EqualValues(t, 5+i, m.Offset)
				require.Equal(t, "compressed value "+strconv.Itoa(5+i), string(m.Value))
			}
		})
	}
}

// When the partition's leader moves to another broker, the old one
// refuses the fetch; the fetcher looks the leader up again and reads the
// rest from the new one.
func TestFetchInPlaceFollowsAMovedLeader(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	publish := func(from, to int) {
		pub, err := NewPublisher(cluster.ListenAddrs())
		require.NoError(t, err)
		var recs []Record
		for i := from; i < to; i++ {
			recs = append(recs, Record{Topic: "t", Value: []byte(strconv.Itoa(i))})
		}
		require.NoError(t, pub.PublishRaw(t.Context(), recs...))
		require.NoError(t, pub.Close())
	}
	publish(0, 10)
	c, err := New(Params{Brokers: cluster.ListenAddrs(), Topics: []string{"t"}, Handler: func(context.Context, []indexer.Message) error { return nil }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(c.transport.CloseIdleConnections)
	f := inPlaceFetcher(c, "t", 0)
	var got []indexer.Message
	a, err := f.fetch(t.Context())
	require.NoError(t, err)
	got = append(got, a.msgs...)
	first := f.leader
	require.NotNil(t, first)

	old := cluster.LeaderFor("t", 0)
	require.NoError(t, cluster.MoveTopicPartition("t", 0, (old+1)%3))
	publish(10, 20)
	failed := 0
	deadline := time.Now().Add(10 * time.Second)
	for f.pos < 20 && time.Now().Before(deadline) {
		a, err := f.fetch(t.Context())
		if err != nil {
			failed++
			continue
		}
		got = append(got, a.msgs...)
	}
	require.Positive(t, failed, "the old leader refused a fetch")
	require.NotSame(t, first, f.leader, "a new connection")
	f.leader.close()
	require.Len(t, got, 20)
	for i, m := range got {
		require.Equal(t, strconv.Itoa(i), string(m.Value))
	}
}

// testBatch is a record batch (v2) of vals from offset base, with
// attributes attrs, as a broker sends it.
func testBatch(base int64, attrs uint16, vals ...string) []byte {
	var recs []byte
	for i, v := range vals {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestamp delta
		r = binary.AppendVarint(r, int64(i)) // offset delta
		r = binary.AppendVarint(r, -1)       // a null key
		r = binary.AppendVarint(r, int64(len(v)))
		r = append(r, v...)
		r = binary.AppendVarint(r, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(base))
	b = binary.BigEndian.AppendUint32(b, 0) // length, below
	b = binary.BigEndian.AppendUint32(b, 0) // leader epoch
	b = append(b, 2)                        // magic
	b = binary.BigEndian.AppendUint32(b, 0) // checksum, below
	b = binary.BigEndian.AppendUint16(b, attrs)
	b = binary.BigEndian.AppendUint32(b, uint32(max(0, len(vals)-1)))
	b = append(b, make([]byte, 8+8+8+2+4)...) // timestamps, producer, sequence
	b = binary.BigEndian.AppendUint32(b, uint32(len(vals)))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// An answer's record batches are taken apart from the fetcher's position:
// a batch cut short by the fetch's size is left for the next fetch, a
// control batch moves the position past it, and a batch that does not
// check out (checksum, an old format, a record that runs past its batch)
// ends the answer with an error after the messages before it.
func TestRecordBatchesTakenApart(t *testing.T) {
	take := func(pos int64, rb []byte) ([]string, int64, error) {
		f := &fetcher{c: &Consumer{}, topic: "t", pos: pos, free: make(chan []indexer.Message, 1)}
		var a fetchedAnswer
		err := f.messages(&a, rb)
		var vals []string
		for _, m := range a.msgs {
			vals = append(vals, strconv.FormatInt(m.Offset, 10)+":"+string(m.Value))
		}
		return vals, f.pos, err
	}
	one, two := testBatch(0, 0, "a", "b", "c"), testBatch(3, 0, "d", "e")
	marker := testBatch(5, 0x20, "")
	three := testBatch(6, 0, "f")
	all := append(append(append(append([]byte(nil), one...), two...), marker...), three...)

	vals, pos, err := take(1, all)
	require.NoError(t, err)
	require.Equal(t, []string{"1:b", "2:c", "3:d", "4:e", "6:f"}, vals)
	require.EqualValues(t, 7, pos)

	vals, pos, err = take(0, all[:len(one)+len(two)+10])
	require.NoError(t, err)
	require.Len(t, vals, 5)
	require.EqualValues(t, 5, pos, "the batch cut short is fetched again")

	vals, pos, err = take(0, all[:len(one)+len(two)+len(marker)])
	require.NoError(t, err)
	require.Len(t, vals, 5)
	require.EqualValues(t, 6, pos, "past the marker")

	bad := append([]byte(nil), all...)
	bad[len(one)+len(two)-1] ^= 1 // the last byte of the second batch
	vals, pos, err = take(0, bad)
	require.ErrorContains(t, err, "checksum")
	require.Equal(t, []string{"0:a", "1:b", "2:c"}, vals)
	require.EqualValues(t, 3, pos)

	old := append(append([]byte(nil), one...), two...)
	old[len(one)+16] = 1
	vals, _, err = take(0, old)
	require.ErrorIs(t, err, errOldFormat)
	require.Len(t, vals, 3)
	// A message of the old formats smaller than a batch's head.
	tiny := binary.BigEndian.AppendUint64(nil, 3)
	tiny = binary.BigEndian.AppendUint32(tiny, 20)
	tiny = append(append(tiny, 0, 0, 0, 0, 1), make([]byte, 15)...)
	vals, _, err = take(0, append(append([]byte(nil), one...), tiny...))
	require.ErrorIs(t, err, errOldFormat)
	require.Len(t, vals, 3)

	// A batch whose length leaves no room for its magic byte.
	empty := binary.BigEndian.AppendUint64(nil, 0)
	empty = binary.BigEndian.AppendUint32(empty, 0)
	_, _, err = take(0, append(empty, one...))
	require.ErrorContains(t, err, "a record batch of 12 bytes")

	// A record whose value runs past its batch (checksum made good).
	short := testBatch(0, 0, "abc")
	short[len(short)-5] = binary.AppendVarint(nil, 40)[0] // the value's length
	binary.BigEndian.PutUint32(short[17:], crc32.Checksum(short[21:], castagnoli))
	vals, pos, err = take(0, short)
	require.ErrorIs(t, err, errBadRecord)
	require.Empty(t, vals)
	require.Zero(t, pos)
}

// Whatever bytes an answer's records are, taking them apart ends in
// messages and maybe an error, never a panic, and never a message before
// the position or out of order.
func FuzzRecordBatches(f *testing.F) {
	f.Add(append(testBatch(0, 0, "a", "bb"), testBatch(2, 0x20, "")...), int64(0))
	f.Add(testBatch(7, 0, "x", "y", "z"), int64(8))
	f.Fuzz(func(t *testing.T, rb []byte, pos int64) {
		fe := &fetcher{c: &Consumer{}, topic: "t", pos: pos, free: make(chan []indexer.Message, 1)}
		var a fetchedAnswer
		_ = fe.messages(&a, rb)
		at := pos
		for _, m := range a.msgs {
			require.GreaterOrEqual(t, m.Offset, at)
			at = m.Offset + 1
		}
		require.GreaterOrEqual(t, fe.pos, at)
	})
}
