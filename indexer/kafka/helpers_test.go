package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

func TestMain(m *testing.M) {
	if os.Getenv(brokerProcessEnv) == "1" { // brokerprocess_test.go
		os.Exit(serveBrokerProcess())
	}
	goleak.VerifyTestMain(m)
}

var (
	locTopic    = events.Topics()[0] // permitd.locations.v1
	permitTopic = events.Topics()[1] // permitd.permits.v1
)

// testLogger is quiet unless PERMITD_TEST_LOG is set. It counts the
// fetches kafka-go gave up on (fetchTimeouts).
func testLogger() *slog.Logger {
	if os.Getenv("PERMITD_TEST_LOG") != "" {
		return slog.New(timeoutCounter{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})})
	}
	return slog.New(timeoutCounter{slog.DiscardHandler})
}

// fetchTimeouts counts kafka-go's warnings of a fetch whose answer did
// not come by its deadline ("i/o timeout"): kafka-go then dials again
// and fetches the same offset anew, so the broker builds that answer
// again. The benchmarks report them per round (roundCost).
var fetchTimeouts atomic.Int64

// timeoutCounter is a slog.Handler that counts fetchTimeouts and passes
// every record on to h.
type timeoutCounter struct{ h slog.Handler }

func (t timeoutCounter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || t.h.Enabled(ctx, l)
}

func (t timeoutCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && strings.Contains(r.Message, "i/o timeout") {
		fetchTimeouts.Add(1)
	}
	if !t.h.Enabled(ctx, r.Level) {
		return nil
	}
	return t.h.Handle(ctx, r)
}

func (t timeoutCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return timeoutCounter{t.h.WithAttrs(as)}
}

func (t timeoutCounter) WithGroup(name string) slog.Handler {
	return timeoutCounter{t.h.WithGroup(name)}
}

// broker is an in-process Kafka (kfake) with the permitd topics.
type broker struct {
	t       testing.TB
	addrs   []string
	cluster *kfake.Cluster
}

func newBroker(t testing.TB, locPartitions int) *broker {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(int32(locPartitions), locTopic),
		kfake.SeedTopics(3, permitTopic),
		kfake.SeedTopics(1, events.DeadLetterTopic),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
	)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &broker{t: t, addrs: c.ListenAddrs(), cluster: c}
}

func (b *broker) publish(envs ...events.Envelope) {
	b.t.Helper()
	p, err := kafka.NewPublisher(b.addrs)
	require.NoError(b.t, err)
	defer p.Close()
	require.NoError(b.t, p.Publish(context.Background(), envs...))
}

func (b *broker) publishRaw(recs ...kafka.Record) {
	b.t.Helper()
	p, err := kafka.NewPublisher(b.addrs)
	require.NoError(b.t, err)
	defer p.Close()
	require.NoError(b.t, p.PublishRaw(context.Background(), recs...))
}

// highWatermarks lists every partition's end offset of topic.
func (b *broker) highWatermarks(topic string) map[int]int64 {
	b.t.Helper()
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafkago.Client{Addr: kafkago.TCP(b.addrs...), Transport: tr}
	md, err := cl.Metadata(context.Background(), &kafkago.MetadataRequest{Topics: []string{topic}})
	require.NoError(b.t, err)
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, p := range md.Topics[0].Partitions {
		req.Topics[topic] = append(req.Topics[topic], kafkago.LastOffsetOf(p.ID))
	}
	res, err := cl.ListOffsets(context.Background(), req)
	require.NoError(b.t, err)
	out := map[int]int64{}
	for _, p := range res.Topics[topic] {
		out[p.Partition] = p.LastOffset
	}
	return out
}

// committed lists a group's committed offsets of topic (-1: none).
func (b *broker) committed(group, topic string) map[int]int64 {
	b.t.Helper()
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafkago.Client{Addr: kafkago.TCP(b.addrs...), Transport: tr}
	hw := b.highWatermarks(topic)
	var parts []int
	for p := range hw {
		parts = append(parts, p)
	}
	res, err := cl.OffsetFetch(context.Background(), &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	require.NoError(b.t, err)
	out := map[int]int64{}
	for _, p := range res.Topics[topic] {
		out[p.Partition] = p.CommittedOffset
	}
	return out
}

// readAll reads every message of topic (all partitions) up to the high
// watermarks it has now.
func (b *broker) readAll(topic string) []kafkago.Message {
	b.t.Helper()
	var out []kafkago.Message
	for p, hwm := range b.highWatermarks(topic) {
		if hwm == 0 {
			continue
		}
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: b.addrs, Topic: topic, Partition: p, MaxBytes: 16 << 20, MaxWait: 100 * time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for {
			m, err := r.FetchMessage(ctx)
			require.NoError(b.t, err)
			out = append(out, m)
			if m.Offset+1 >= hwm {
				break
			}
		}
		cancel()
		require.NoError(b.t, r.Close())
	}
	return out
}

// location is a valid location.upserted event whose content depends on
// the version, so the digest tells versions apart.
func location(t testing.TB, id string, version int64) events.Envelope {
	t.Helper()
	env, err := events.New(events.LocationUpserted, id, version, time.Unix(1700000000+version, 0), "test", events.Location{
		GeoType: "city", Name: "City " + id, DisplayName: fmt.Sprintf("City %s v%d, WA", id, version),
		State: "WA", StateName: "Washington", Lat: 47.6, Lon: -122.3, Population: version,
	})
	require.NoError(t, err)
	return env
}

// permit is a valid permit.upserted event in ZIP 98101; all versions of
// one number share a key, so they land on one partition.
func permit(t testing.TB, number string, version int64) events.Envelope {
	t.Helper()
	env, err := events.New(events.PermitUpserted, events.PermitDocID("test", number), version, time.Unix(1700000000+version, 0), "test", events.Permit{
		PermitNumber: number, PermitType: "Building", IssueDate: "2025-01-02", Source: "test",
		Address: events.PermitAddress{Line: "600 UNIVERSITY ST", City: "SEATTLE", State: "WA", Zipcode: "98101", ZipSource: "source"},
	})
	require.NoError(t, err)
	return env
}

func deleted(t testing.TB, typ events.Type, id string, version int64) events.Envelope {
	t.Helper()
	env, err := events.New(typ, id, version, time.Unix(1700000000+version, 0), "test", nil)
	require.NoError(t, err)
	return env
}

// locations returns n entities with versions 1..versions each, shuffled
// deterministically across entities and versions, plus a duplicate of
// every tenth event.
func locations(t testing.TB, prefix string, n, versions int) []events.Envelope {
	var out []events.Envelope
	for v := versions; v >= 1; v-- { // newest first: older versions arrive late
		for i := range n {
			out = append(out, location(t, fmt.Sprintf("%s%05d", prefix, i), int64(v)))
		}
	}
	for i := 0; i < len(out); i += 10 {
		out = append(out, out[i])
	}
	return out
}

// state is a read model's exact content.
type state struct {
	Counts map[readmodel.Kind]int64
	Digest string
}

func (s state) equal(o state) bool { return reflect.DeepEqual(s, o) }

func stateOf(t testing.TB, s *memory.Store) state {
	t.Helper()
	c, err := s.Counts(context.Background())
	require.NoError(t, err)
	d, err := s.Digest(context.Background())
	require.NoError(t, err)
	return state{c, d}
}

// expected projects envs one by one into a fresh store: the state any
// delivery order must reach.
func expected(t testing.TB, envs ...events.Envelope) state {
	t.Helper()
	s := memory.New(memory.Params{})
	for _, env := range envs {
		b, err := indexer.Project(context.Background(), env, s)
		require.NoError(t, err)
		_, err = s.Apply(context.Background(), b)
		require.NoError(t, err)
	}
	return stateOf(t, s)
}

// recordingDLQ keeps dead letters in memory (tests that do not check the
// topic).
type recordingDLQ struct {
	mu   sync.Mutex
	msgs []indexer.Message
}

func (d *recordingDLQ) store(_ context.Context, m indexer.Message, _ error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.msgs = append(d.msgs, m)
	return nil
}

func newIndexer(t testing.TB, s *memory.Store, dlq indexer.DeadLetterFunc) *indexer.Indexer {
	t.Helper()
	if dlq == nil {
		dlq = (&recordingDLQ{}).store
	}
	ix, err := indexer.New(indexer.Params{Writer: s, Lookup: s, DeadLetter: dlq, Logger: testLogger(), MaxMessageBytes: 4096})
	require.NoError(t, err)
	return ix
}

// fastParams are consumer settings for tests: small batches, short waits,
// quick group churn.
func fastParams(b *broker, group string, h kafka.Handler) kafka.Params {
	return kafka.Params{
		Brokers: b.addrs, Group: group, Handler: h, Logger: testLogger(),
		Topics:    []string{locTopic, permitTopic},
		BatchSize: 100, BatchWait: 5 * time.Millisecond, FetchWait: 100 * time.Millisecond,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
		DrainTimeout: 2 * time.Second, PartitionWatchInterval: 500 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 2 * time.Second,
		RebalanceTimeout: 2 * time.Second, JoinGroupBackoff: 100 * time.Millisecond,
	}
}

// parserParams are fastParams with ix as the Parser (as serve wires it):
// each partition parses its next batch while its last one is handled.
func parserParams(b *broker, group string, ix *indexer.Indexer) kafka.Params {
	p := fastParams(b, group, nil)
	p.Parser = ix
	return p
}

// running is a consumer started in the background.
type running struct {
	*kafka.Consumer
	cancel context.CancelFunc
	done   chan error
}

func start(t testing.TB, p kafka.Params, setup ...func(*kafka.Consumer)) *running {
	t.Helper()
	c, err := kafka.New(p)
	require.NoError(t, err)
	for _, f := range setup {
		f(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Consumer: c, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels the consumer and waits for Run; idempotent.
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			require.NoError(t, err)
			close(r.done)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("consumer did not stop within 20s")
	}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var errInjected = errors.New("injected failure")
