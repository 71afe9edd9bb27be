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

// TestPermitMonthlyCountsAPermitOnceInAGeo: a permit linked twice to one
// geo counts once in its month stats (the unfiltered series of whole
// months), as paging counts it, through a new version and a delete.
func TestPermitMonthlyCountsAPermitOnceInAGeo(t *testing.T) {
	s := newStore(t)
	twice := func(id string, version int64, v float64) readmodel.Permit {
		p := permit(id, "2024-03-05", zipA, version)
		p.Valuation = &v
		p.GeoLinks = append(p.GeoLinks, p.GeoLinks[0]) // the ZIP again
		return p
	}
	q := readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(zipA), FromDate: "2024-03-01", ToDate: "2024-03-31"}
	month := func() readmodel.MonthBucket {
		t.Helper()
		got, err := s.PermitMonthly(context.Background(), q)
		if err != nil || len(got) != 1 {
			t.Fatalf("%v %v", got, err)
		}
		return got[0]
	}
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{twice("1", 1, 100), twice("2", 1, 300), permit("3", "2024-03-09", zipA, 1)}})
	if b := month(); b.Count != 3 || b.TotalValuation != 1400 || *b.MedianValuation != 300 {
		t.Fatalf("got %+v, want 3 permits, 1400 in all, median 300", b)
	}
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{twice("1", 2, 5000)}, Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "test:2", Version: 2}}})
	if b := month(); b.Count != 2 || b.TotalValuation != 6000 || *b.MedianValuation != 3000 {
		t.Fatalf("got %+v, want 2 permits, 6000 in all, median 3000", b)
	}
}
