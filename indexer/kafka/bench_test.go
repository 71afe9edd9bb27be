package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/internal/memstore"
)

// BenchmarkIngest measures one family alone, locations, each with a name
// no other location has ("City g0000001"): 200,000 new terms for the
// resolver's index, each posted under up to 37 hashed variants of
// itself (its two-typo neighbourhood, readmodel/resolve/deletes.go). That
// is the location path's worst case: the gazetteer's 98,016 locations
// share most of their words, and BenchmarkIngestMix reports their rate
// ("location-events/s") beside the real mix's, which is what issue 12's
// targets are about. On the same messages in one run it measures the
// ingest rate from kfake, in this process, into the memory backend
// through the consumer (fetch, decode, validate, project, apply to both
// sides: the live path; "events/s"), and the raw kafka-go consume rate
// with the same per-partition fetchers and nothing done per message
// ("raw-events/s"). Both clocks run from start until every partition is
// read to its high watermark, connection setup included. On a shared
// machine the rates depend on what else runs, so the CPU time the process
// spent per event in each phase (kfake included, as it serves both) is
// reported too.
//
//	go test -run '^$' -bench '^BenchmarkIngest$' -benchtime 3x ./indexer/kafka/
func BenchmarkIngest(b *testing.B) {
	const (
		n          = 200_000
		partitions = 6
	)
	br := newBroker(b, partitions)
	pub, err := kafka.NewPublisher(br.addrs)
	require.NoError(b, err)
	recs := make([]kafka.Record, 0, 10_000)
	for i := range n {
		env := location(b, fmt.Sprintf("g%07d", i), 1)
		raw, err := json.Marshal(env)
		require.NoError(b, err)
		recs = append(recs, kafka.Record{Topic: locTopic, Key: []byte(env.EntityID), Value: raw})
		if len(recs) == cap(recs) || i == n-1 {
			require.NoError(b, pub.PublishRaw(context.Background(), recs...))
			recs = recs[:0]
		}
	}
	require.NoError(b, pub.Close())
	hwm := br.highWatermarks(locTopic)

	// At least five rounds of each phase, whatever b.N is: the raw
	// phase lasts a fraction of a second and one round of it is noisy.
	// The phases alternate and neither forces a collection: each pays the
	// garbage collector for what happens to be collected while it runs,
	// as a long-running process would. (A collection forced before each
	// phase lets the raw phase, which allocates less than the heap's
	// headroom, run without one at all, while ingest, which builds the
	// read model, always gets one.)
	rounds := max(b.N, 5)
	var ingest, raw, ingestCPU, rawCPU time.Duration
	b.ResetTimer()
	for range rounds {
		cpu := cpuTime()
		raw += rawConsume(b, br.addrs, hwm)
		rawCPU += cpuTime() - cpu

		store := memstore.New()
		ix := newIndexer(b, store, nil)
		c, err := kafka.New(kafka.Params{Brokers: br.addrs, Topics: []string{locTopic}, Parser: ix, Logger: testLogger()})
		require.NoError(b, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		cpu = cpuTime()
		start := time.Now()
		go func() { done <- c.Run(ctx) }()
		for !c.CaughtUp() {
			time.Sleep(500 * time.Microsecond)
		}
		ingest += time.Since(start)
		ingestCPU += cpuTime() - cpu
		cancel()
		require.NoError(b, <-done)
		counts, err := store.Counts(context.Background())
		require.NoError(b, err)
		require.Equal(b, int64(n), counts["location"])
	}
	b.StopTimer()
	ingestRate := float64(n*rounds) / ingest.Seconds()
	rawRate := float64(n*rounds) / raw.Seconds()
	b.ReportMetric(ingestRate, "events/s")
	b.ReportMetric(rawRate, "raw-events/s")
	b.ReportMetric(ingestRate/rawRate, "ingest/raw")
	b.ReportMetric(float64(ingestCPU.Nanoseconds())/float64(n*rounds), "cpu-ns/event")
	b.ReportMetric(float64(rawCPU.Nanoseconds())/float64(n*rounds), "raw-cpu-ns/event")
	b.ReportMetric(0, "ns/op")
}

// rawConsume reads every partition to its high watermark with the
// consumer's own fetchers (kafka.FetchToEnd), doing nothing per message.
// The clock stops when the last partition is read.
func rawConsume(b *testing.B, addrs []string, hwm map[int]int64) time.Duration {
	start := time.Now()
	require.NoError(b, kafka.FetchToEnd(context.Background(), addrs, map[string]map[int]int64{locTopic: hwm}))
	return time.Since(start)
}
