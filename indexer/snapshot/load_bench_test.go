package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/snapshot"
	"github.com/permitd/permitd/internal/gctarget"
	"github.com/permitd/permitd/internal/memstore"
	"github.com/permitd/permitd/internal/statereads"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/gen"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// BenchmarkLoad measures a restart's load of a snapshot: the gazetteer
// and PERMITD_BENCH_LOAD_PERMITS generated permits with their properties
// (default 200,000; BenchmarkRestart in indexer/kafka loads 1,000,000
// and sets it beside a full replay), exported once; each round verifies
// the file and loads it into an empty store and the indexer's location
// table, as serve does before it replays what came after the snapshot
// ("load-s", memory.Import, to its Commit: readable), then until the
// import's second side is built too ("settled-s"), and again through
// Apply batch by batch, the load before Import ("apply-load-s"); with the
// CPU time of each.
//
//	go test -run '^$' -bench Load -benchtime 3x -timeout 30m ./indexer/snapshot/
//
// PERMITD_BENCH_LOAD_CPUPROFILE=path writes a CPU profile of the Import
// loads alone (to Commit), without the setup or the Apply loads;
// PERMITD_BENCH_LOAD_APPLY=0 leaves the Apply loads out;
// PERMITD_BENCH_LOAD_DIR=dir keeps the snapshot and its digest in dir
// and loads them from there when present (named by the permits and the
// format version), so that test binaries compared in turn skip the
// generation and load the same file.
func BenchmarkLoad(b *testing.B) {
	permits, path, keep := loadBenchFile(b)
	var want string
	var counts map[readmodel.Kind]int64
	if keep {
		if kept, err := os.ReadFile(path + ".digest"); err == nil {
			want = string(kept)
		} else {
			defer func() {
				if !b.Failed() {
					require.NoError(b, os.WriteFile(path+".digest", []byte(want), 0o644))
				}
			}()
		}
	}
	var info snapshot.Info
	if want == "" {
		want, counts, info = writeLoadSnapshot(b, path, permits)
	} else {
		st, err := os.Stat(path)
		require.NoError(b, err)
		info.Bytes = st.Size()
	}
	loadRounds(b, path, want, counts, info)
}

// loadBenchFile is the permits (PERMITD_BENCH_LOAD_PERMITS, default
// 200,000) and the file of the snapshot BenchmarkLoad loads: in
// PERMITD_BENCH_LOAD_DIR, named by the permits and the format version,
// kept (keep), else a temporary one.
func loadBenchFile(b *testing.B) (permits int, path string, keep bool) {
	permits = 200_000
	if v, err := strconv.Atoi(os.Getenv("PERMITD_BENCH_LOAD_PERMITS")); err == nil && v > 0 {
		permits = v
	}
	if dir := os.Getenv("PERMITD_BENCH_LOAD_DIR"); dir != "" {
		return permits, filepath.Join(dir, fmt.Sprintf("load-%d-v%d.snapshot", permits, snapshot.FormatVersion)), true
	}
	return permits, filepath.Join(b.TempDir(), "memory.snapshot"), false
}

// writeLoadSnapshot writes the snapshot BenchmarkLoad loads to path and
// returns the digest and counts of its state.
func writeLoadSnapshot(b *testing.B, path string, permits int) (string, map[readmodel.Kind]int64, snapshot.Info) {
	ctx := context.Background()
	src := memory.New(memory.Params{})
	var batch readmodel.Batch
	flush := func() {
		_, err := src.Apply(ctx, batch)
		require.NoError(b, err)
		batch = readmodel.Batch{}
	}
	project := func(env events.Envelope) error {
		d, err := indexer.Project(ctx, env, src)
		if err != nil {
			return err
		}
		batch.Append(d)
		if batch.Len() >= 4096 {
			flush()
		}
		return nil
	}
	_, err := gazetteer.Import(ctx, data.Open, project)
	require.NoError(b, err)
	flush()
	_, err = gen.Generate(ctx, gen.Params{Permits: permits, Seed: 7, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, project)
	require.NoError(b, err)
	flush()
	want, err := src.Digest(ctx)
	require.NoError(b, err)
	counts, err := src.Counts(ctx)
	require.NoError(b, err)
	info, err := snapshot.Write(path, snapshot.Offsets{"t": {0: 1}}, func(fn func(readmodel.Batch) error) error {
		return src.Export(ctx, 4096, fn)
	})
	require.NoError(b, err)
	return want, counts, info
}

// loadRounds loads the snapshot at path b.N times and reports the times.
func loadRounds(b *testing.B, path, want string, counts map[readmodel.Kind]int64, info snapshot.Info) {
	ctx := context.Background()
	runtime.GC()

	var took, applyTook, cpu, applyCPU, settled, settledCPU, leanReads, wholeReads time.Duration
	ways := []bool{false, true}
	if os.Getenv("PERMITD_BENCH_LOAD_APPLY") == "0" {
		ways = ways[:1] // the Import alone
	}
	for b.Loop() {
		for _, viaApply := range ways {
			runtime.GC()
			prof := os.Getenv("PERMITD_BENCH_LOAD_CPUPROFILE")
			if prof != "" && !viaApply {
				f, err := os.Create(prof)
				require.NoError(b, err)
				require.NoError(b, pprof.StartCPUProfile(f))
				defer f.Close()
			}
			start, cpu0 := time.Now(), cpuTime()
			store := serveLoad(b, path, viaApply)
			if prof != "" && !viaApply {
				pprof.StopCPUProfile()
			}
			if viaApply {
				applyTook += time.Since(start)
				applyCPU += cpuTime() - cpu0
			} else {
				took += time.Since(start)
				cpu += cpuTime() - cpu0
				// State-wide reads on the Import's lean first side (the
				// second side being built beside them), then on the whole
				// sides: the same answers, and what the lean side costs.
				leanTook, lean := stateReads(b, store)
				leanReads += leanTook
				store.Settle() // the second side, built after Commit
				settled += time.Since(start)
				settledCPU += cpuTime() - cpu0
				wholeTook, whole := stateReads(b, store)
				wholeReads += wholeTook
				require.Equal(b, whole, lean, "the lean side answers as the whole ones")
			}
			got, err := store.Digest(ctx)
			require.NoError(b, err)
			require.Equal(b, want, got, "the load restores the exported state")
		}
	}
	if counts != nil { // not known of a kept snapshot
		b.ReportMetric(float64(counts[readmodel.KindPermit]), "permits")
		b.ReportMetric(float64(counts[readmodel.KindProperty]), "properties")
	}
	b.ReportMetric(float64(info.Bytes)/1e6, "snapshot-MB")
	b.ReportMetric(took.Seconds()/float64(b.N), "load-s")
	b.ReportMetric(settled.Seconds()/float64(b.N), "settled-s")
	b.ReportMetric(settledCPU.Seconds()/float64(b.N), "settled-cpu-s")
	b.ReportMetric(applyTook.Seconds()/float64(b.N), "apply-load-s")
	// CPU time too: on a shared machine the wall time says as much about
	// the neighbours as about the load.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "load-cpu-s")
	b.ReportMetric(applyCPU.Seconds()/float64(b.N), "apply-load-cpu-s")
	b.ReportMetric(float64(leanReads.Milliseconds())/float64(b.N), "lean-reads-ms")
	b.ReportMetric(float64(wholeReads.Milliseconds())/float64(b.N), "whole-reads-ms")
	b.ReportMetric(0, "ns/op")
}

// stateReads runs the state-wide permit reads (statereads.Permits: pages
// by date, valuation, q and distance, a monthly series, in CA, TX and
// WA) on s and returns their time and their answers.
func stateReads(b *testing.B, s *memory.Store) (time.Duration, []string) {
	start := time.Now()
	out, err := statereads.Permits(context.Background(), s, statereads.States)
	require.NoError(b, err)
	return time.Since(start), out
}

// serveLoad is serve's load of a snapshot (cmd/permitd, loadSnapshot);
// viaApply loads it with Apply instead of an Import.
func serveLoad(b *testing.B, path string, viaApply bool) *memory.Store {
	defer gctarget.Resume(debug.SetGCPercent(snapshot.LoadGCPercent))
	store := memstore.New()
	ix, err := indexer.New(indexer.Params{Writer: store, DeadLetter: func(_ context.Context, _ indexer.Message, err error) error { return err }})
	require.NoError(b, err)
	if viaApply {
		_, err = snapshot.Load(path, func(bt readmodel.Batch) error {
			ix.Preload(bt)
			_, err := store.Apply(context.Background(), bt)
			return err
		})
		require.NoError(b, err)
		return store
	}
	im := store.NewImport()
	_, again, err := snapshot.LoadLent(path, im.Reserve, func(bt readmodel.Batch, shapes *readmodel.LinkShapes, done func()) error {
		ix.Preload(bt)
		return im.AddLent(bt, shapes, done)
	})
	require.NoError(b, err)
	im.SecondFrom(again)
	require.NoError(b, im.Commit())
	return store
}
