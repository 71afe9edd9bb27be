// Reads during writes: the signal reads' latency while batches are applied, on the data of signals_bench_test.go.

package memory_test

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// BenchmarkReadsDuringWrites: a mix of reads (city leads page, state
// stats with a swept confidence floor, geo signal page, location) timed
// idle, then while a writer applies batches of permits, leads and geo
// signals (at rising versions, so every document is re-indexed) as fast
// as it can. Reports p50/p99 of both and the p99 ratio (target <= 2).
//
// in_place: the rewritten leads keep their positions (a new document
// only); move: every rewrite gives each lead a new confidence, so it
// moves in its trees, day cells and roll-ups (the full re-index). Before
// the idle phase the writer applies one round of the batches, so idle and
// busy reads see data of the same shape (moved leads spread over every
// confidence bucket).
func BenchmarkReadsDuringWrites(b *testing.B) {
	for _, c := range []struct {
		name string
		move bool
	}{{"in_place", false}, {"move", true}} {
		b.Run(c.name, func(b *testing.B) { readsDuringWrites(b, c.move) })
	}
}

// benchVersion is the writer's next version: rising across the
// sub-benchmarks, so every batch they apply is new.
var benchVersion int64 = 1_000_000

func readsDuringWrites(b *testing.B, move bool) {
	d := loadSignalBench(b)
	if len(d.writes) == 0 {
		b.Fatal("no write batches sampled")
	}
	ctx := context.Background()
	read := func(i int) {
		var err error
		switch i % 4 {
		case 0:
			_, err = d.store.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(d.city), FreshSince: freshSince(60)}, Sort: readmodel.SortConfidenceDesc, Limit: 25})
		case 1:
			f := float64(i%21) / 20
			_, err = d.store.PermitStats(ctx, readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(d.state), MinConfidence: &f}, Today: benchNow.Format(time.DateOnly), TopN: 10})
		case 2:
			_, err = d.store.SearchGeoSignals(ctx, readmodel.GeoSignalQuery{State: "WA", Limit: 25})
		case 3:
			_, err = d.store.Location(ctx, readmodel.ParseGeoRef(d.city))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	apply := func(w readmodel.Batch) {
		if _, err := d.store.Apply(ctx, withVersion(w, benchVersion, move)); err != nil {
			panic(err)
		}
	}
	for _, w := range d.writes { // the shape the busy phase reads
		apply(w)
	}
	benchVersion++
	n := max(b.N, 4000)
	var batches atomic.Int64
	// measure times at least n reads and, while a writer runs, goes on
	// until it has applied two rounds of batches (at most a minute).
	measure := func(writing bool) []time.Duration {
		lat := make([]time.Duration, 0, n)
		start := time.Now()
		for i := 0; i < n || writing && batches.Load() < int64(2*len(d.writes)) && time.Since(start) < time.Minute; i++ {
			t0 := time.Now()
			read(i)
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		return lat
	}
	runtime.GC()
	b.ResetTimer()
	idle := measure(false)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		applied := 0
		for ; ; benchVersion++ {
			for _, w := range d.writes {
				select {
				case <-stop:
					done <- applied
					return
				default:
				}
				apply(w)
				applied += w.Len()
				batches.Add(1)
			}
		}
	}()
	t0 := time.Now()
	busy := measure(true)
	close(stop)
	applied := <-done
	benchVersion++
	elapsed := time.Since(t0)
	b.StopTimer()
	p := func(l []time.Duration, q int) float64 { return float64(l[len(l)*q/100].Nanoseconds()) / 1e3 }
	b.ReportMetric(p(idle, 50), "idle-p50-us")
	b.ReportMetric(p(idle, 99), "idle-p99-us")
	b.ReportMetric(p(busy, 50), "busy-p50-us")
	b.ReportMetric(p(busy, 99), "busy-p99-us")
	b.ReportMetric(p(busy, 99)/p(idle, 99), "p99-ratio")
	b.ReportMetric(float64(applied)/elapsed.Seconds(), "docs-written/s")
	b.ReportMetric(float64(batches.Load()), "batches")
}

// withVersion is w with every document at version v; move gives each
// lead a new confidence, so it moves in its trees and roll-ups instead of
// being rewritten in place.
func withVersion(w readmodel.Batch, v int64, move bool) readmodel.Batch {
	out := readmodel.Batch{
		Leads:      slices.Clone(w.Leads),
		GeoSignals: slices.Clone(w.GeoSignals),
		Permits:    slices.Clone(w.Permits),
	}
	for i := range out.Leads {
		out.Leads[i].Version = v
		if move {
			c := float64((v+int64(i))%64) / 64
			out.Leads[i].Confidence = &c
		}
	}
	for i := range out.GeoSignals {
		out.GeoSignals[i].Version = v
	}
	for i := range out.Permits {
		out.Permits[i].Version = v
	}
	return out
}
