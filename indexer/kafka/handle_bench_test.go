package kafka_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/memstore"
	"github.com/permitd/permitd/pipeline/mix"
)

// BenchmarkHandleMix is BenchmarkIngestMix's ingest without Kafka: the
// real mix handed to one indexer's HandleBatch from one goroutine, in
// the consumer's batches (2000 messages of one topic), locations first
// and then the other topics taking turns, into a memory backend in
// replay mode, until EndReplay returned (ready). It measures this
// process's own work per event with no broker beside it and no reader
// to wait for: "ns/event" (wall) and "cpu-ns/event" (the process's CPU
// time, user and system), with the allocations per event.
// PERMITD_BENCH_HANDLE_CPUPROFILE=path writes a CPU profile of the first
// round, PERMITD_BENCH_HANDLE_HEAPPROFILE=path a heap profile right after
// it (what the ready store and the benchmark's copy of the mix hold; the
// live heap and its objects are logged).
//
//	go test -run '^$' -bench 'HandleMix$' -benchtime 3x ./indexer/kafka/
func BenchmarkHandleMix(b *testing.B) { handleMix(b, true) }

// BenchmarkHandleMixLive is BenchmarkHandleMix on the live path: no
// replay mode, so every batch is applied to both of the store's sides
// with each lead's trees kept as it is written (BenchmarkIngestMix's
// "live-events/s" without Kafka), until the last batch is visible.
// PERMITD_BENCH_HANDLE_CPUPROFILE and PERMITD_BENCH_HANDLE_HEAPPROFILE
// work as there.
//
//	go test -run '^$' -bench 'HandleMixLive$' -benchtime 3x ./indexer/kafka/
func BenchmarkHandleMixLive(b *testing.B) { handleMix(b, false) }

// handleMix runs BenchmarkHandleMix, in replay mode with oneSide.
func handleMix(b *testing.B, oneSide bool) {
	d := mixRecords(b)
	msgs := make([]indexer.Message, len(d.recs))
	for i, r := range d.recs {
		msgs[i] = indexer.Message{Topic: r.Topic, Offset: int64(i), Key: r.Key, Value: r.Value}
	}
	first, order := mix.HandleOrder(msgs, func(m indexer.Message) string { return m.Topic }, 2000)
	ctx := context.Background()
	n := len(d.recs)
	var cpu time.Duration
	var heap heapStats
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		collect(b)
		store := memstore.New()
		if oneSide {
			require.True(b, store.BeginReplay())
		}
		ix, err := indexer.New(indexer.Params{Writer: store, DeadLetter: func(_ context.Context, _ indexer.Message, err error) error { return err }})
		require.NoError(b, err)
		stop := profileRound(b, "PERMITD_BENCH_HANDLE_CPUPROFILE", i == 0)
		c0, h0 := cpuTime(), heapUse()
		for _, m := range first {
			require.NoError(b, ix.HandleBatch(ctx, m))
		}
		require.NoError(b, ix.Settle(ctx))
		for _, m := range order {
			require.NoError(b, ix.HandleBatch(ctx, m))
		}
		if oneSide {
			store.EndReplay()
		}
		cpu += cpuTime() - c0
		heap.add(h0, heapUse())
		stop()
		if path := os.Getenv("PERMITD_BENCH_HANDLE_HEAPPROFILE"); path != "" && i == 0 {
			b.StopTimer()
			writeHeapProfile(b, path)
			b.StartTimer()
		}
		b.StopTimer()
		store.Settle()
		b.StartTimer()
	}
	events := float64(n * b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
	b.ReportMetric(float64(heap.bytes)/events, "B/event")
	b.ReportMetric(float64(heap.allocs)/events, "allocs/event")
	b.ReportMetric(0, "ns/op")
}

// writeHeapProfile collects, writes a heap profile to path and logs the
// live heap.
func writeHeapProfile(tb testing.TB, path string) {
	tb.Helper()
	runtime.GC()
	f, err := os.Create(path)
	require.NoError(tb, err)
	require.NoError(tb, pprof.WriteHeapProfile(f))
	require.NoError(tb, f.Close())
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	tb.Logf("live heap: %d MiB in %d objects", m.HeapAlloc>>20, m.HeapObjects)
}
