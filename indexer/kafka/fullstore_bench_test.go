package kafka_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/snapshot"
	"github.com/permitd/permitd/internal/gctarget"
	"github.com/permitd/permitd/internal/memstore"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/gen"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// BenchmarkIngestMixFullStore compares the mix's ingest rate into a
// memory backend already holding many generated permits (and their
// properties) with the rate into an empty one, in one run: after a
// round that warms the process and the broker ("warmup-events/s"), a
// round into an empty store, before the big store is made, then three
// times (fullRounds) the big store made, a round into it, the store
// dropped and a round into an empty store again. Each full round's
// ratio ("full/empty-1" to "-3") is its rate over the two empty rounds'
// on either side of it (their mean time); full/empty is the median of
// the three, and full/empty-min the least. One round's ratio moved from
// 0.69 to 0.89 from run to run of one build (the empty rounds' rates
// most: 86,000 to 124,000 events/s), so one sample said little about
// the target. Target: full/empty >= 0.7 at 5M permits.
//
// By default it runs what the target names, as a user runs it: 5,000,000
// permits (PERMITD_BENCH_FULL_PERMITS; 1,000,000 on a machine with less
// than fullMemory of memory, which it logs), loaded from a snapshot as a
// restart loads them (PERMITD_BENCH_FULL_FILL, below), the broker a
// process of its own (PERMITD_BENCH_BROKER, newMixBroker: a real broker
// never shares the indexer's heap; in process, the broker's garbage
// brings collections of the big store into the round, and its 16 MiB
// fetch answers, built under those collections' assists, miss kafka-go's
// deadline and are fetched again), and the collector's target as serve
// sets it (serveGC: Go's 100 without a memory limit, as run by hand).
// At 5M permits the run takes about 11 minutes and its heap peaks near
// 19 GB (the fill's garbage beside the 10 GB store).
//
// It also reports the heap in use once the big store is filled
// ("filled-heap-MB") and the collector's CPU time for one collection of
// it with nothing else running ("filled-gc-cpu-s"); per round, the bytes
// allocated, the collections and the collector's CPU time
// ("<round>-alloc-MB", "-gc-cycles", "-gc-cpu-s"), this process's CPU
// time over the round's wall time ("<round>-cores": under the machine's
// cores, the round waited on one goroutine's work rather than on CPU;
// a broker process's time is not counted), the part of it in the kernel
// and the page faults taken ("<round>-sys-cores", "-faults": a round whose
// allocations take new pages pays for them there, and on a VM that hands
// memory back to its host that is much of a round and moves from run to
// run), and the fetches whose answer
// missed kafka-go's deadline, each fetched again
// ("<round>-fetch-timeouts"). PERMITD_BENCH_FULL_CPUPROFILE=path writes
// a CPU profile of the round into the big store,
// PERMITD_BENCH_EMPTY_CPUPROFILE one of the round into the empty store
// (the two compared show where the big store's round spends what the
// empty one does not; PERMITD_BENCH_FULL_TRACE and
// PERMITD_BENCH_EMPTY_TRACE write execution traces of the same rounds), PERMITD_BENCH_FULL_HEAPPROFILE a heap profile of
// the filled store. PERMITD_BENCH_FULL_FILL=snapshot (the default) fills
// it as an Import, writes that to a snapshot and loads it into a new
// store, as a restart does (the permits then hold their slots in index
// order); =import fills it as an Import only (built in bulk); =apply
// writes it with Apply, as a store that grew while serving. With
// PERMITD_BENCH_FULL_SNAPSHOT=path the snapshot is kept there and, when
// the file exists, loaded without filling again (it must hold as many
// permits):
//
//	go test -run '^$' -bench IngestMixFullStore -benchtime 1x -timeout 30m ./indexer/kafka/
//	PERMITD_BENCH_FULL_SNAPSHOT=/tmp/full-5000000.snapshot \
//	  go test -run '^$' -bench IngestMixFullStore -benchtime 1x -timeout 30m ./indexer/kafka/
func BenchmarkIngestMixFullStore(b *testing.B) {
	defer serveGC(b)()
	full := fullPermits(b)
	fill := cmp.Or(os.Getenv("PERMITD_BENCH_FULL_FILL"), "snapshot")
	require.Contains(b, []string{"snapshot", "import", "apply"}, fill, "PERMITD_BENCH_FULL_FILL")
	byImport := fill != "apply"
	d := mixRecords(b)
	addrs := newMixBroker(b, d)
	// The mix is ingested into an empty store first, before the big
	// store exists: a collection during that round then marks what an
	// empty store's process holds, not the big store (at 1M permits the
	// round into the empty store took one, about 6.5 CPU-seconds of
	// marking the big store, when it ran after the fill). Then the big
	// store is filled once, directly (no Kafka), with the gazetteer and
	// permits of another seed, and the mix is ingested into it. Each
	// round starts from a collection, so that neither inherits garbage.
	// A round before them all, not compared: a process's first round
	// ran slower than its later ones into the same empty store (33,683
	// against 57,237 events/s at 5M permits; 36,256 against 58,489 with
	// a store of 1,000), and the full round, never first, was compared
	// with it (probably the heap's pages faulted in for the first time,
	// and the broker's first answers; not measured apart).
	warm, _ := ingestMix(b, addrs, memstore.New(), false)
	b.ResetTimer()
	runtime.GC()
	stop := profileRound(b, "PERMITD_BENCH_EMPTY_CPUPROFILE", true) // the round into the empty store
	emptyCost := startRoundCost()
	empty, _ := ingestMix(b, addrs, memstore.New(), false)
	emptyCost = emptyCost.since()
	stop()
	b.StopTimer()
	// The full rounds, each into the big store made again (a round
	// changes it), each followed by an empty round once the big store is
	// dropped and collected (the collection also sets the next round's
	// target from the small heap left, as before the first round). The
	// rounds into an empty store are minutes apart at 5M permits (the
	// fill or the load between them), and the machine's speed moves in
	// minutes, so each full round is compared with the mean of the empty
	// rounds on either side of it.
	rounds := fullRounds(b, fill)
	snap := os.Getenv("PERMITD_BENCH_FULL_SNAPSHOT")
	if snap == "" { // one file for every round (each TempDir is a new directory)
		snap = filepath.Join(b.TempDir(), "full.snapshot")
	}
	empties := []time.Duration{empty}
	var fulls []time.Duration
	var fullCost, afterCost roundCost
	var counts map[readmodel.Kind]int64
	var ms runtime.MemStats
	filledGC := math.Inf(1)
	for r := range rounds {
		start := time.Now()
		var filled *memory.Store
		if fill == "snapshot" {
			filled = filledFromSnapshot(b, full, snap)
		} else {
			filled = fillStore(b, full, byImport)
		}
		runtime.GC()
		if r == 0 {
			// Collections of the filled store alone: what marking it
			// costs, in the collector's CPU time (steadier than the wall
			// time on a shared machine), the least of three.
			for range 3 {
				c := startRoundCost()
				runtime.GC()
				filledGC = min(filledGC, c.since().gcCPU)
			}
			runtime.ReadMemStats(&ms)
			b.Logf("filled a store with %d generated permits in %v (fill %q); heap %d MB", full, time.Since(start), fill, ms.HeapAlloc>>20)
			if prof := os.Getenv("PERMITD_BENCH_FULL_HEAPPROFILE"); prof != "" { // the filled store's heap
				f, err := os.Create(prof)
				require.NoError(b, err)
				require.NoError(b, pprof.Lookup("heap").WriteTo(f, 0))
				require.NoError(b, f.Close())
			}
		} else {
			b.Logf("full round %d: the store made again in %v", r+1, time.Since(start))
		}
		var err error
		counts, err = filled.Counts(context.Background())
		require.NoError(b, err)
		// Both rounds on the live path (a store that is not empty takes
		// no other).
		b.StartTimer()
		runtime.GC()
		stop := profileRound(b, "PERMITD_BENCH_FULL_CPUPROFILE", r == 0) // the first round into the big store
		c := startRoundCost()
		into, _ := ingestMix(b, addrs, filled, false)
		if c = c.since(); r == 0 {
			fullCost = c
		}
		stop()
		b.StopTimer()
		fulls = append(fulls, into)
		filled = nil
		runtime.GC()
		runtime.GC() // a pooled object (sync.Pool's victim cache) may hold it until the second
		var dropped runtime.MemStats
		runtime.ReadMemStats(&dropped)
		b.Logf("the filled store dropped: heap %d MB", dropped.HeapAlloc>>20)
		b.StartTimer()
		afterCost = startRoundCost()
		emptyAfter, _ := ingestMix(b, addrs, memstore.New(), false)
		afterCost = afterCost.since()
		b.StopTimer()
		empties = append(empties, emptyAfter)
	}
	n := float64(len(d.recs))
	ratios, rates := make([]float64, rounds), make([]float64, rounds)
	for r, into := range fulls {
		ratios[r] = (empties[r] + empties[r+1]).Seconds() / 2 / into.Seconds()
		rates[r] = n / into.Seconds()
		b.ReportMetric(ratios[r], fmt.Sprintf("full/empty-%d", r+1))
		b.ReportMetric(rates[r], fmt.Sprintf("full-%d-events/s", r+1))
	}
	for r, e := range empties[1 : len(empties)-1] {
		b.ReportMetric(n/e.Seconds(), fmt.Sprintf("empty-%d-events/s", r+2))
	}
	b.ReportMetric(float64(counts[readmodel.KindPermit]), "permits-held")
	b.ReportMetric(float64(len(d.recs))/warm.Seconds(), "warmup-events/s")
	b.ReportMetric(float64(ms.HeapAlloc>>20), "filled-heap-MB")
	b.ReportMetric(filledGC, "filled-gc-cpu-s")
	b.ReportMetric(n/empty.Seconds(), "empty-events/s")
	b.ReportMetric(n/empties[len(empties)-1].Seconds(), "empty-after-events/s")
	b.ReportMetric(median(rates), "full-events/s")
	b.ReportMetric(median(ratios), "full/empty")
	b.ReportMetric(slices.Min(ratios), "full/empty-min")
	emptyCost.report(b, "empty")
	fullCost.report(b, "full")
	afterCost.report(b, "empty-after")
	b.ReportMetric(0, "ns/op")
}

// fullMemory is the machine memory from which BenchmarkIngestMixFullStore
// fills 5M permits by default: the run's heap peaks near 19 GB.
const fullMemory = 22 << 30

// fullPermits is the big store's permits: PERMITD_BENCH_FULL_PERMITS,
// else 5M, or 1M on a machine with less than fullMemory (or whose
// memory it cannot tell).
func fullPermits(b *testing.B) int {
	if v := os.Getenv("PERMITD_BENCH_FULL_PERMITS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "PERMITD_BENCH_FULL_PERMITS")
		require.Positive(b, n, "PERMITD_BENCH_FULL_PERMITS")
		return n
	}
	if mem := machineMemory(); mem < fullMemory {
		b.Logf("the machine has %d MiB of memory (0: unknown), under the %d MiB a 5M-permit store's run needs: 1M permits", mem>>20, fullMemory>>20)
		return 1_000_000
	}
	return 5_000_000
}

// fullRounds is the number of full rounds: PERMITD_BENCH_FULL_ROUNDS,
// else 3 when the big store is loaded from a snapshot (each round's
// store is loaded again, in about a minute at 5M permits with its
// collections) and 1 when it is filled (minutes each).
func fullRounds(b *testing.B, fill string) int {
	if v := os.Getenv("PERMITD_BENCH_FULL_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "PERMITD_BENCH_FULL_ROUNDS")
		require.Positive(b, n, "PERMITD_BENCH_FULL_ROUNDS")
		return n
	}
	if fill == "snapshot" {
		return 3
	}
	return 1
}

// median is the middle of xs (not empty), the mean of the two middle
// ones when their number is even.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// machineMemory is MemTotal from /proc/meminfo in bytes, 0 when it
// cannot be read.
func machineMemory() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest) // "24683944 kB"
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// roundCost is what a round cost the runtime: bytes allocated,
// collections, and the collector's CPU time (runtime/metrics), so that a
// full/empty ratio can be read as "the round allocates more" or "each
// collection costs more".
type roundCost struct {
	allocMB, cycles, gcCPU float64
	timeouts               int64     // fetchTimeouts
	use                    procUse   // the process's CPU time (user, system) and page faults
	wall                   time.Time // at the start; since: the round's wall time in cores
	cores, sysCores        float64
	faults                 int64
}

var roundCostMetrics = []string{"/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles", "/cpu/classes/gc/total:cpu-seconds"}

func readRoundCost() roundCost {
	s := make([]metrics.Sample, len(roundCostMetrics))
	for i, n := range roundCostMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	return roundCost{allocMB: float64(s[0].Value.Uint64()) / (1 << 20), cycles: float64(s[1].Value.Uint64()), gcCPU: s[2].Value.Float64(),
		timeouts: fetchTimeouts.Load(), use: kernelUse(), wall: time.Now()}
}

func startRoundCost() roundCost { return readRoundCost() }

func (c roundCost) since() roundCost {
	n := readRoundCost()
	wall := n.wall.Sub(c.wall).Seconds()
	return roundCost{allocMB: n.allocMB - c.allocMB, cycles: n.cycles - c.cycles, gcCPU: n.gcCPU - c.gcCPU,
		timeouts: n.timeouts - c.timeouts,
		cores:    (n.use.user + n.use.sys - c.use.user - c.use.sys).Seconds() / wall,
		sysCores: (n.use.sys - c.use.sys).Seconds() / wall, faults: n.use.faults - c.use.faults}
}

func (c roundCost) report(b *testing.B, round string) {
	b.ReportMetric(c.allocMB, round+"-alloc-MB")
	b.ReportMetric(c.cycles, round+"-gc-cycles")
	b.ReportMetric(c.gcCPU, round+"-gc-cpu-s")
	b.ReportMetric(c.cores, round+"-cores")
	b.ReportMetric(c.sysCores, round+"-sys-cores")
	b.ReportMetric(float64(c.faults), round+"-faults")
	b.ReportMetric(float64(c.timeouts), round+"-fetch-timeouts")
}

// fillStore fills a store with the gazetteer and full generated permits
// of another seed than the mix's, directly (no Kafka): as an Import when
// byImport, else with Apply.
func fillStore(b *testing.B, full int, byImport bool) *memory.Store {
	filled := memstore.New()
	var w readmodel.Writer = filled
	var im *memory.Import
	if byImport {
		im = filled.NewImport()
		w = im
	}
	ix, err := indexer.New(indexer.Params{Writer: w, DeadLetter: func(_ context.Context, _ indexer.Message, err error) error { return err }})
	require.NoError(b, err)
	feed := indexer.NewFeed(ix, 4096)
	require.NoError(b, feed.Run(context.Background(), func(ctx context.Context, emit indexer.Emit) error {
		if _, err := gazetteer.Import(ctx, data.Open, indexer.Envelopes(emit)); err != nil {
			return err
		}
		_, err := gen.Generate(ctx, gen.Params{Permits: full, Seed: 2, Now: mixAsOf}, indexer.Envelopes(emit))
		return err
	}))
	if im != nil {
		require.NoError(b, im.Commit())
		filled.Settle() // both sides built: the mix's writes would wait for the second
	}
	return filled
}

// filledFromSnapshot is fillStore's Import written to a snapshot at
// path, when no file is there yet, and loaded into a new store as serve
// loads one at a start, both sides built. A file at path must hold full
// permits (PERMITD_BENCH_FULL_SNAPSHOT keeps one from run to run).
func filledFromSnapshot(b *testing.B, full int, path string) *memory.Store {
	if _, err := os.Stat(path); err != nil {
		st := fillStore(b, full, true)
		_, err := snapshot.Write(path, snapshot.Offsets{}, func(fn func(readmodel.Batch) error) error {
			return st.Export(context.Background(), 4096, fn)
		})
		require.NoError(b, err)
		runtime.GC() // st is garbage
	}
	gc := debug.SetGCPercent(snapshot.LoadGCPercent)
	defer gctarget.Resume(gc)
	filled := memstore.New()
	im := filled.NewImport()
	_, again, err := snapshot.LoadLent(path, im.Reserve, im.AddLent)
	require.NoError(b, err)
	im.SecondFrom(again)
	require.NoError(b, im.Commit())
	filled.Settle()
	counts, err := filled.Counts(context.Background())
	require.NoError(b, err)
	require.Equal(b, int64(full), counts[readmodel.KindPermit], "%s holds another store than PERMITD_BENCH_FULL_PERMITS asks for", path)
	return filled
}
