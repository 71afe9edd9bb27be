package kafka_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/internal/syncbuf"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// Replay mode reads every partition of several topics from the earliest
// offset, reaches the exact expected state, reports caught-up with no
// lag, and keeps applying what is published afterwards. As serve wires
// it, the memory backend replays one side first and OnCaughtUp (called
// once, before CaughtUp reports true) makes that side readable.
func TestReplayReadsEveryPartition(t *testing.T) {
	b := newBroker(t, 4)
	envs := locations(t, "g", 300, 3)
	envs = append(envs,
		deleted(t, events.LocationDeleted, "g00007", 4),
		deleted(t, events.PermitDeleted, "seattle:1", 1), // a tombstone in another topic
	)
	b.publish(envs...)
	want := expected(t, envs...)

	store := memory.New(memory.Params{})
	reg := prometheus.NewRegistry()
	ix := newIndexer(t, store, nil)
	p := parserParams(b, "", ix)
	p.Metrics = indexer.NewMetrics(reg)
	require.True(t, store.BeginReplay())
	var calls, replayed, backlogs atomic.Int64
	p.OnCaughtUp = func() {
		calls.Add(1)
		replayed.Store(int64(store.EndReplay()))
	}
	// As serve wires it: the replay's side sized before any message.
	var backlog map[string]int64
	var handledBefore int64
	p.Backlog = func(m map[string]int64) {
		backlogs.Add(1)
		backlog, handledBefore = m, ix.Progress().Applied+ix.Progress().Stale
		require.True(t, store.ReserveReplay(indexer.BacklogKinds(m)))
	}
	c := start(t, p)

	eventually(t, 20*time.Second, "caught up", c.CaughtUp)
	require.EqualValues(t, 1, calls.Load())
	require.EqualValues(t, 1, backlogs.Load(), "the backlog is told once")
	require.Zero(t, handledBefore, "before any message is handled")
	wantBacklog := map[string]int64{}
	for _, e := range envs {
		topic, err := events.TopicFor(e.Type)
		require.NoError(t, err)
		wantBacklog[topic]++
	}
	require.Equal(t, wantBacklog, backlog)
	require.Positive(t, replayed.Load(), "batches written one side first")
	require.Equal(t, want, stateOf(t, store))
	require.Zero(t, c.Lag())
	parts := c.Partitions()
	require.Len(t, parts, 4+3, "every partition of both topics")
	for _, ps := range parts {
		require.Equal(t, ps.HighWatermark, ps.Position, "%s/%d", ps.Topic, ps.Partition)
		require.Zero(t, value(t, p.Metrics.Lag.WithLabelValues(ps.Topic, itoa(ps.Partition))))
	}
	require.Equal(t, int64(len(envs)), ix.Progress().Applied+ix.Progress().Stale)

	// Live: new events after catching up are applied too.
	more := []events.Envelope{location(t, "live1", 1), location(t, "g00001", 9)}
	b.publish(more...)
	want = expected(t, append(envs, more...)...)
	eventually(t, 10*time.Second, "live events applied", func() bool { return stateOf(t, store).equal(want) })
}

// Duplicates, versions delivered oldest-last and an upsert older than a
// delete all end at the newest version.
func TestDuplicatesAndReorderedVersionsEndAtNewest(t *testing.T) {
	b := newBroker(t, 2)
	envs := []events.Envelope{
		location(t, "a", 3), location(t, "a", 1), location(t, "a", 3), location(t, "a", 2),
		location(t, "b", 1), location(t, "b", 1), location(t, "b", 2),
		deleted(t, events.LocationDeleted, "c", 5), location(t, "c", 4), location(t, "c", 2),
		location(t, "d", 1), deleted(t, events.LocationDeleted, "d", 2), location(t, "d", 3),
	}
	b.publish(envs...)
	store := memory.New(memory.Params{})
	ix := newIndexer(t, store, nil)
	c := start(t, parserParams(b, "", ix))
	eventually(t, 20*time.Second, "caught up", c.CaughtUp)

	ctx := context.Background()
	for id, v := range map[string]int64{"a": 3, "b": 2, "d": 3} {
		l, err := store.Location(ctx, readmodel.ParseGeoRef(id))
		require.NoError(t, err, id)
		require.Equal(t, v, l.Version, id)
	}
	_, err := store.Location(ctx, readmodel.ParseGeoRef("c"))
	require.ErrorIs(t, err, readmodel.ErrNotFound, "a delete wins over older upserts delivered after it")
	require.Equal(t, expected(t, envs...), stateOf(t, store))
}

func itoa(i int) string { return strconv.Itoa(i) }

// value reads a counter's or gauge's current value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	require.NoError(t, m.Write(&d))
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// A handler that fails transiently is retried with backoff until it
// succeeds; nothing is skipped or dead-lettered. With a Parser, the batch
// fails after its parsed events were used (failingParser), and the retry
// decodes them again.
func TestTransientFailuresAreRetried(t *testing.T) {
	for _, parsed := range []bool{false, true} {
		t.Run(map[bool]string{false: "handler", true: "parsed ahead"}[parsed], func(t *testing.T) {
			b := newBroker(t, 3)
			envs := locations(t, "t", 50, 2)
			b.publish(envs...)
			store := memory.New(memory.Params{})
			dlq := &recordingDLQ{}
			ix := newIndexer(t, store, dlq.store)
			var failures atomic.Int64
			var p kafka.Params
			if parsed {
				p = fastParams(b, "", nil)
				p.Parser = failingParser{Indexer: ix, spent: newIndexer(t, memory.New(memory.Params{}), dlq.store), fails: 5, failures: &failures}
			} else {
				p = fastParams(b, "", func(ctx context.Context, msgs []indexer.Message) error {
					if failures.Add(1) <= 5 {
						return errInjected
					}
					return ix.HandleBatch(ctx, msgs)
				})
			}
			p.Metrics = indexer.NewMetrics(prometheus.NewRegistry())
			var logs syncbuf.Buffer
			p.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c := start(t, p)
			eventually(t, 20*time.Second, "caught up", c.CaughtUp)
			require.Equal(t, expected(t, envs...), stateOf(t, store))
			require.GreaterOrEqual(t, value(t, p.Metrics.Retries), 5.0)
			require.Empty(t, dlq.msgs)
			// A partition's failures of one batch are logged as a run: the
			// first at warn, the same error again at debug, the success
			// after them at info.
			out := logs.String()
			warn := strings.Count(out, `level=WARN msg="batch failed; retrying"`)
			debug := strings.Count(out, `level=DEBUG msg="batch failed; retrying"`)
			require.Equal(t, 5, warn+debug, out)
			require.GreaterOrEqual(t, debug, 2, out)
			require.Equal(t, warn, strings.Count(out, `level=INFO msg="batch applied after retries"`), out)
		})
	}
}

// failingParser fails its first fails batches after their parsed
// events were used, by another indexer (spent, which writes elsewhere),
// so that a retry meets events its first attempt used up; then it
// handles as its own indexer.
type failingParser struct {
	*indexer.Indexer
	spent    *indexer.Indexer
	fails    int64
	failures *atomic.Int64
}

func (f failingParser) HandleParsed(ctx context.Context, msgs []indexer.Message, p *indexer.Parsed) error {
	if f.failures.Add(1) <= f.fails {
		if err := f.spent.HandleParsed(ctx, msgs, p); err != nil {
			return err
		}
		return errInjected
	}
	return f.Indexer.HandleParsed(ctx, msgs, p)
}

// TestLagCountsAStuckBatch: while the handler keeps failing, readiness
// and the lag gauge count the messages waiting, and the consumer is not
// caught up until they are applied.
func TestLagCountsAStuckBatch(t *testing.T) {
	b := newBroker(t, 1)
	envs := locations(t, "s", 20, 1)
	b.publish(envs...)
	var healthy atomic.Bool
	store := memory.New(memory.Params{})
	ix := newIndexer(t, store, nil)
	p := fastParams(b, "", func(ctx context.Context, msgs []indexer.Message) error {
		if !healthy.Load() {
			return errInjected
		}
		return ix.HandleBatch(ctx, msgs)
	})
	p.Metrics = indexer.NewMetrics(prometheus.NewRegistry())
	c := start(t, p)
	eventually(t, 10*time.Second, "lag counts the stuck messages", func() bool { return c.Lag() == int64(len(envs)) })
	require.Equal(t, float64(len(envs)), value(t, p.Metrics.Lag.WithLabelValues(locTopic, "0")))
	require.False(t, c.CaughtUp())
	healthy.Store(true)
	eventually(t, 10*time.Second, "caught up", c.CaughtUp)
	require.Zero(t, c.Lag())
}

// TestBatchSizesAreBounded: a consumer reserves three batches per
// partition from its start and kafka-go's writer room for a whole batch,
// so a batch size past MaxBatchSize is refused, not taken to the memory's
// end.
func TestBatchSizesAreBounded(t *testing.T) {
	handler := func(context.Context, []indexer.Message) error { return nil }
	_, err := kafka.New(kafka.Params{Brokers: []string{"127.0.0.1:9"}, Handler: handler, BatchSize: kafka.MaxBatchSize + 1})
	require.EqualError(t, err, "kafka: BatchSize 100001 is over 100000")
	c, err := kafka.New(kafka.Params{Brokers: []string{"127.0.0.1:9"}, Handler: handler, BatchSize: kafka.MaxBatchSize})
	require.NoError(t, err)
	require.NotNil(t, c)

	_, err = kafka.NewPublisherWith(kafka.PublisherParams{Brokers: []string{"127.0.0.1:9"}, BatchSize: kafka.MaxBatchSize + 1})
	require.EqualError(t, err, "kafka: publisher: BatchSize 100001 is over 100000")
	_, err = kafka.NewPublisherWith(kafka.PublisherParams{Brokers: []string{"127.0.0.1:9"}, BatchBytes: kafka.MaxBatchBytes + 1})
	require.EqualError(t, err, "kafka: publisher: BatchBytes 2147483648 is over 2147483647")
	p, err := kafka.NewPublisherWith(kafka.PublisherParams{Brokers: []string{"127.0.0.1:9"}, BatchSize: kafka.MaxBatchSize, BatchBytes: kafka.MaxBatchBytes})
	require.NoError(t, err)
	require.NoError(t, p.Close())
}

// TestReplayTellsWhenNoTopicExists: a replay started before any of its
// topics exists does not settle until one does (it reads the locations
// first; serve is not ready meanwhile), and says so once at info, where
// it used to be silent (a debug line per topic and watch): serve looked
// hung.
func TestReplayTellsWhenNoTopicExists(t *testing.T) {
	b := newBroker(t, 1)
	var logs syncbuf.Buffer
	p := fastParams(b, "", func(context.Context, []indexer.Message) error { return nil })
	p.Topics = []string{"permitd.catalog.v1"} // not seeded
	p.PartitionWatchInterval = 50 * time.Millisecond
	p.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	start(t, p)
	const line = "none of the topics exists yet"
	eventually(t, 5*time.Second, "the line", func() bool { return strings.Contains(logs.String(), line) })
	time.Sleep(10 * p.PartitionWatchInterval)
	require.Equal(t, 1, strings.Count(logs.String(), line), logs.String())
}
