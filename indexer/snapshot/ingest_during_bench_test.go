package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer/snapshot"
	"github.com/permitd/permitd/readmodel"
)

// BenchmarkIngestDuringSnapshot measures what a periodic snapshot costs
// ingest: a store loaded as BenchmarkLoad loads it (the same snapshot,
// PERMITD_BENCH_LOAD_PERMITS and PERMITD_BENCH_LOAD_DIR alike) takes a
// stream of permit updates on one writer (each permit of the store
// again at a newer version, in batches of 1,024, as one partition's
// consumer applies them) while a snapshot of it is written. Reported:
// the writer's events/s in the seconds before the write
// ("before-events/s") and while it runs ("during-events/s"), their ratio
// ("during/before"), the longest Apply call from the write's start to a
// second after its end ("max-apply-ms": how long ingest stood still),
// and the write's time ("write-s"). By default the writer applies as
// fast as it can (the worst case: the most to catch up with after the
// write); PERMITD_BENCH_DURING_RATE=n paces it to n events/s, a feed
// the store keeps up with.
//
//	PERMITD_BENCH_LOAD_PERMITS=1000000 PERMITD_BENCH_LOAD_DIR=/tmp/keep \
//	  go test -run '^$' -bench IngestDuringSnapshot -benchtime 1x -timeout 30m ./indexer/snapshot/
func BenchmarkIngestDuringSnapshot(b *testing.B) {
	permits, path, _ := loadBenchFile(b)
	rate := 0.0
	if v, err := strconv.ParseFloat(os.Getenv("PERMITD_BENCH_DURING_RATE"), 64); err == nil && v > 0 {
		rate = v
	}
	if _, err := os.Stat(path); err != nil {
		writeLoadSnapshot(b, path, permits)
	}
	ctx := context.Background()
	store := serveLoad(b, path, false)
	store.Settle()
	// The updates: the store's permits, in batches, each applied at a
	// version one above the last.
	var updates []readmodel.Batch
	require.NoError(b, store.Export(ctx, 1024, func(bt readmodel.Batch) error {
		if len(bt.Permits) > 0 {
			updates = append(updates, readmodel.Batch{Permits: bt.Permits})
		}
		return nil
	}))
	require.NotEmpty(b, updates)
	runtime.GC()
	out := filepath.Join(b.TempDir(), "during.snapshot")
	var before, during, maxApply, write float64
	for b.Loop() {
		var (
			mu          sync.Mutex
			start, end  time.Time // the write's
			stop        = make(chan struct{})
			done        = make(chan struct{})
			nBefore     int
			nDuring     int
			longest     time.Duration
			writerStart = time.Now()
			writeStart  time.Time
		)
		go func() {
			defer close(done)
			sent := 0
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if rate > 0 { // the next batch is due when the rate says
					time.Sleep(time.Until(writerStart.Add(time.Duration(float64(sent) / rate * float64(time.Second)))))
				}
				bt := &updates[i%len(updates)]
				sent += len(bt.Permits)
				for j := range bt.Permits {
					bt.Permits[j].Version++
				}
				t0 := time.Now()
				_, err := store.Apply(ctx, *bt)
				t1 := time.Now()
				if err != nil {
					panic(err)
				}
				mu.Lock()
				switch {
				case start.IsZero():
					nBefore += len(bt.Permits)
				case end.IsZero():
					nDuring += len(bt.Permits)
				}
				if !start.IsZero() && (end.IsZero() || t0.Before(end.Add(time.Second))) {
					longest = max(longest, t1.Sub(t0))
				}
				mu.Unlock()
			}
		}()
		time.Sleep(3 * time.Second)
		mu.Lock()
		writeStart = time.Now()
		start = writeStart
		mu.Unlock()
		_, err := snapshot.Write(out, snapshot.Offsets{"t": {0: 1}}, func(fn func(readmodel.Batch) error) error {
			return store.Export(ctx, 4096, fn)
		})
		require.NoError(b, err)
		mu.Lock()
		end = time.Now()
		mu.Unlock()
		time.Sleep(2 * time.Second) // the catch-up after the write, into max-apply-ms
		close(stop)
		<-done
		before += float64(nBefore) / writeStart.Sub(writerStart).Seconds()
		during += float64(nDuring) / end.Sub(start).Seconds()
		maxApply += float64(longest.Milliseconds())
		write += end.Sub(start).Seconds()
		require.NoError(b, os.Remove(out))
	}
	n := float64(b.N)
	b.ReportMetric(before/n, "before-events/s")
	b.ReportMetric(during/n, "during-events/s")
	b.ReportMetric(during/before, "during/before")
	b.ReportMetric(maxApply/n, "max-apply-ms")
	b.ReportMetric(write/n, "write-s")
	b.ReportMetric(0, "ns/op")
}
