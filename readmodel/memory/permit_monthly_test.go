package memory_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// TestPermitMonthlyAgreesWithSearch: for random filters and windows, each
// month's count equals what paging SearchPermits with the same filter and
// window yields for that month, and the totals and medians are those of
// the paged permits' valuations.
func TestPermitMonthlyAgreesWithSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ps := filterPermits(r, 700)
	s := newStore(t)
	apply(t, s, readmodel.Batch{Permits: ps})
	// move some permits to other days and valuations, delete a few
	var b readmodel.Batch
	for i := 0; i < len(ps); i += 7 {
		p := ps[i]
		p.Version = 2
		p.IssueDate = "2024-03-17"
		v := float64(i)
		p.Valuation = &v
		b.Permits = append(b.Permits, p)
	}
	for i := 3; i < len(ps); i += 50 {
		b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindPermit, ID: ps[i].PermitID, Version: 3})
	}
	apply(t, s, b)
	windows := [][2]string{{"2023-11-15", "2024-06-30"}, {"2024-01-01", "2024-04-30"}, {"2024-02-03", "2024-02-03"}, {"2024-03-01", "2024-12-31"}}
	counted := 0 // cases with a permit in a month: not every case may be empty
	for i := range 120 {
		f := readmodel.PermitFilter{}
		if i%3 > 0 {
			f = randomPermitFilter(r)
		}
		geo := []string{zipA, zipB, city, state}[i%4]
		w := windows[i%len(windows)]
		got, err := s.PermitMonthly(context.Background(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(geo), Filter: f, FromDate: w[0], ToDate: w[1]})
		if err != nil {
			t.Fatal(err)
		}
		months := readmodel.MonthsOf(w[0], w[1])
		if len(got) != len(months) {
			t.Fatalf("%d buckets, want %d", len(got), len(months))
		}
		count := map[string]int64{}
		vals := map[string][]float64{}
		q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: true, FromDate: w[0], ToDate: w[1], Limit: 100, Filter: f}
		for {
			page, err := s.SearchPermits(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range page.Permits {
				m := h.Permit.IssueDate[:7]
				count[m]++
				if h.Permit.Valuation != nil {
					vals[m] = append(vals[m], *h.Permit.Valuation)
				}
			}
			if page.Next == nil {
				break
			}
			q.After = page.Next
		}
		for j, b := range got {
			if b.Month != months[j] {
				t.Fatalf("month %d is %s, want %s", j, b.Month, months[j])
			}
			sum := 0.0
			for _, v := range vals[b.Month] {
				sum += v
			}
			med := readmodel.Median(vals[b.Month])
			if b.Count != count[b.Month] || math.Abs(b.TotalValuation-sum) > 0.01 || (med == nil) != (b.MedianValuation == nil) ||
				med != nil && *med != *b.MedianValuation {
				t.Fatalf("filter %+v geo %s %v month %s: got %+v, paging gives count %d total %v median %v", f, geo, w, b.Month, b, count[b.Month], sum, med)
			}
			if b.Count > 0 {
				counted++
			}
		}
	}
	if counted < 60 {
		t.Fatalf("only %d month buckets of all cases hold a permit", counted)
	}
}
