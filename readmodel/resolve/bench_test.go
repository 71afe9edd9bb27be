package resolve

import (
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// BenchmarkResolve builds the national index once, then resolves the
// quality set's queries, reporting p50 and p99 latency per query and the
// heap the index holds (go test -run '^$' -bench BenchmarkResolve
// ./readmodel/resolve/). Target: p99 <= 1 ms. On Linux it also reports
// the percentiles in thread CPU time, which a loaded machine does not
// inflate.
func BenchmarkResolve(b *testing.B) {
	rows := loadQuality(b)
	queries := make([]readmodel.ResolveQuery, len(rows))
	for i, r := range rows {
		queries[i] = r.rq
	}
	locs := nationalLocations(b)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	x := New()
	for _, l := range locs {
		x.Upsert(l)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	indexMB := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
	runtime.KeepAlive(locs)

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// At least 20 passes over the quality set, whatever b.N is, so the
	// percentiles mean something at -benchtime 1x (make bench).
	n := max(b.N, 20*len(queries))
	var lat, cpu []time.Duration
	b.ResetTimer()
	for i := 0; i < n; i++ {
		q := queries[i%len(queries)]
		c0, cok := threadCPU()
		start := time.Now()
		x.Search(q)
		lat = append(lat, time.Since(start))
		if c1, ok := threadCPU(); ok && cok {
			cpu = append(cpu, c1-c0)
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(lat, 0.50), "p50-us")
	b.ReportMetric(pct(lat, 0.99), "p99-us")
	if len(cpu) == len(lat) {
		// The same percentiles in thread CPU time: what a query costs
		// when the machine is shared (wall time then includes waiting).
		b.ReportMetric(pct(cpu, 0.50), "p50-cpu-us")
		b.ReportMetric(pct(cpu, 0.99), "p99-cpu-us")
	}
	b.ReportMetric(indexMB, "index-MB")
	b.ReportMetric(float64(len(locs)), "locations")
}

// BenchmarkIndexNational measures indexing the bundled national
// gazetteer (98,016 locations) into an empty Index, as a replay or a
// snapshot's load does once per side ("ns/location"); then Warm, which
// builds the two-typo lookups the index leaves to its first search
// (a store's second side's build runs it, after the readers' side is
// ready: "warm-ms"), and the first two-typo search after it
// ("first-typo-search-ms").
//
//	go test -run '^$' -bench IndexNational ./readmodel/resolve/
func BenchmarkIndexNational(b *testing.B) {
	locs := nationalLocations(b)
	var warm, first time.Duration
	q := readmodel.ResolveQuery{Text: "Sacramentoo", Limit: 5} // two typos' reach: the deletion posts
	b.ResetTimer()
	for range b.N {
		x := New()
		for _, l := range locs {
			x.Upsert(l)
		}
		b.StopTimer()
		start := time.Now()
		x.Warm()
		warm += time.Since(start)
		start = time.Now()
		if len(x.Search(q)) == 0 {
			b.Fatal("no candidate for Sacramentoo")
		}
		first += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(locs)), "ns/location")
	b.ReportMetric(float64(warm.Microseconds())/1000/float64(b.N), "warm-ms")
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "first-typo-search-ms")
}
