package kafka

import (
	"context"
	"log/slog"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/permitd/permitd/indexer"
)

// A fetcher that starts inside a record batch (a committed offset or a
// restart's position after a batch's first records) gets the whole
// batch from the broker and hands over only the records from its
// position on.
func TestFetcherStartsInsideARecordBatch(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer cluster.Close()
	pub, err := NewPublisher(cluster.ListenAddrs())
	require.NoError(t, err)
	var recs []Record
	for i := range 20 {
		recs = append(recs, Record{Topic: "t", Key: []byte("k"), Value: []byte(strconv.Itoa(i))})
	}
	require.NoError(t, pub.PublishRaw(context.Background(), recs...)) // one record batch
	require.NoError(t, pub.Close())

	c, err := New(Params{Brokers: cluster.ListenAddrs(), Topics: []string{"t"}, Handler: func(context.Context, []indexer.Message) error { return nil }, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer c.transport.CloseIdleConnections()
	p := &partition{topic: "t"}
	p.pos.Store(7)
	f := c.newFetcher(context.Background(), c.log, p)
	defer f.stop()
	var got []indexer.Message
	for {
		batch, _, next, ok := f.take(context.Background(), nil)
		require.True(t, ok)
		got = append(got, batch...)
		if next >= 20 {
			break
		}
	}
	require.Len(t, got, 13)
	for i, m := range got {
		require.EqualValues(t, 7+i, m.Offset)
		require.Equal(t, strconv.Itoa(7+i), string(m.Value))
	}
}
