package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// BenchmarkPermitScanOpenState opens the export scan of every permit of
// the WA state geo (the 1M generated permits of buildCorpus): opening
// gathers the scan in one read of a side, so its time bounds how long a
// writer can wait for an export (once: the stream reads no side). It
// reports the mean and the longest open (hold-ms, max-hold-ms) and the
// permits gathered, for each way of keeping the texts: the side's whole
// table copied (what a state-wide scan does) or each hit's.
func BenchmarkPermitScanOpenState(b *testing.B) {
	buildCorpus(b)
	for _, bc := range []struct {
		name  string
		whole int
	}{{"texts=whole", 1 << 30}, {"texts=each", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			defer memory.SetWholeTexts(bc.whole)()
			benchScanOpen(b)
		})
	}
}

func benchScanOpen(b *testing.B) {
	ctx := context.Background()
	q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(events.GeoID("state", "WA")), Desc: true, Limit: 100}
	var total, longest time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		sc, err := bench.store.OpenPermitScan(ctx, q, 5_000_001) // the largest plan's row cap, plus one
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		total, longest = total+d, max(longest, d)
		_ = sc.Close()
	}
	b.StopTimer()
	sc, err := bench.store.OpenPermitScan(ctx, q, 5_000_001)
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	n := 0
	for {
		p, err := sc.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n += len(p.Permits)
		if p.Next == nil {
			break
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "hold-ms")
	b.ReportMetric(float64(longest.Microseconds())/1e3, "max-hold-ms")
	b.ReportMetric(float64(n), "permits")
}
