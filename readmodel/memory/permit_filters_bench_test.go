package memory_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// benchFilteredPages reads 25-permit first pages of the WA state geo and
// of Seattle with one filter from filters, alternating orders, and
// reports p50/p99 (issue 14: one filter p99 <= 1 ms, q p99 <= 5 ms).
func benchFilteredPages(b *testing.B, filters []readmodel.PermitFilter) {
	buildCorpus(b)
	ctx := context.Background()
	s := bench.store
	geos := []string{events.GeoID("state", "WA"), bench.cityID}
	r := rand.New(rand.NewPCG(3, 4))
	n := samples(b)
	lat := make(latencies, 0, n)
	empty := 0
	b.ResetTimer()
	for i := 0; i < n; i++ {
		q := readmodel.PermitQuery{GeoID: geos[i%2], Desc: i%4 < 2, Limit: 25, Filter: filters[r.IntN(len(filters))]}
		t0 := time.Now()
		p, err := s.SearchPermits(ctx, q)
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Permits) == 0 {
			empty++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(empty)/float64(n), "empty-share")
	lat.report(b)
}

func fptr(f float64) *float64 { return &f }

func BenchmarkPermitsPageOneFilter(b *testing.B) {
	benchFilteredPages(b, []readmodel.PermitFilter{
		{Statuses: []string{"expired"}},
		{Statuses: []string{"in review"}},
		{PermitTypes: []string{"demolition"}},
		{PermitTypes: []string{"electrical", "plumbing"}},
		{WorkTypes: []string{readmodel.FoldValue(events.WorkNewConstruction)}},
		{MinValuation: fptr(250000)},
		{MaxValuation: fptr(1000)},
	})
}

func BenchmarkPermitsPageText(b *testing.B) {
	benchFilteredPages(b, []readmodel.PermitFilter{
		{Text: "kitchen remodel"},
		{Text: "solar"},
		{Text: "demolish gar"},
		{Text: "heat pump"},
		{Text: "construct new townh"},
		{Text: "retaining wall"},
		{Text: "re"},
	})
}
