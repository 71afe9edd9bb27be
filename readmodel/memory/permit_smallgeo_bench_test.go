package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// BenchmarkPermitsPageSmallGeo reads first pages of 25 permits of a ZIP
// of about 1,000 permits (filterPermits' mix) with postings and a
// valuation order (postings from 0) and without (read from the geo's own
// set with the predicate; a valuation_desc page selects its permits in
// one pass, topValues): the read cost of the
// threshold from which a geo keeps them (postingMin), at its worst
// (a geo just under it). Filters: a status, a type, a contractor that
// matches nothing (the whole set is read), a valuation floor, and none
// with valuation_desc. ns/op is one page.
func BenchmarkPermitsPageSmallGeo(b *testing.B) {
	filters := []struct {
		name string
		sort readmodel.PermitSort
		f    readmodel.PermitFilter
	}{
		{"status", "", readmodel.PermitFilter{Statuses: []string{"expired"}}},
		{"type", "", readmodel.PermitFilter{PermitTypes: []string{"demolition"}}},
		{"no-match", "", readmodel.PermitFilter{Contractor: "nobody"}},
		{"min-valuation", "", readmodel.PermitFilter{MinValuation: fptr(9000)}},
		{"valuation-desc", readmodel.SortValuationDesc, readmodel.PermitFilter{}},
		{"valuation-desc-status", readmodel.SortValuationDesc, readmodel.PermitFilter{Statuses: []string{"expired"}}},
	}
	for _, min := range []int{0, 1 << 30} {
		restore := memory.SetPostingMin(min)
		s := newStore(b)
		apply(b, s, readmodel.Batch{Permits: filterPermits(rand.New(rand.NewPCG(1, 2)), 1500)})
		restore()
		postings := "postings"
		if min > 0 {
			postings = "none"
		}
		for _, fl := range filters {
			b.Run(fmt.Sprint(postings, "/", fl.name), func(b *testing.B) {
				ctx := context.Background()
				q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zipA), Desc: true, Limit: 25, Filter: fl.f, Sort: fl.sort}
				for b.Loop() {
					if _, err := s.SearchPermits(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
