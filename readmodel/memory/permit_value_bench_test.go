package memory_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// BenchmarkPermitsPageByValue reads valuation_desc pages of a state of
// 100,000 permits whose valuations are log-normal whole dollars around
// $20,000, as `permitd gen`'s (so a state's order holds runs of equal
// ones), a tenth unknown. With "cents-10pct", a tenth of the known
// valuations also have cents: those permits are in the order's odd part
// (permit_sort.go), and every page merges the two walks. The reads: the
// first page of 25, a page from a cursor in the middle of the order, and
// a first page filtered on a status held by 17% of the permits (about
// six permits walked per hit). ns/op is one page.
func BenchmarkPermitsPageByValue(b *testing.B) {
	for _, cents := range []bool{false, true} {
		r := rand.New(rand.NewPCG(5, 6))
		ps := genSharePermits(r, 100_000)
		for i := range ps {
			switch {
			case i%10 == 0:
				ps[i].Valuation = nil
			default:
				v := math.Round(20000 * math.Exp(1.2*r.NormFloat64()))
				if cents && i%10 == 1 {
					v += 0.5
				}
				ps[i].Valuation = &v
			}
		}
		s := newStore(b)
		apply(b, s, readmodel.Batch{Permits: ps})
		mode := map[bool]string{false: "whole-dollars", true: "cents-10pct"}[cents]
		mid := ps[len(ps)/2]
		reads := []struct {
			name  string
			f     readmodel.PermitFilter
			after *readmodel.PermitKey
		}{
			{"first", readmodel.PermitFilter{}, nil},
			{"middle", readmodel.PermitFilter{}, &readmodel.PermitKey{PermitID: mid.PermitID, HasValuation: mid.Valuation != nil, Valuation: valueOf(mid)}},
			{"status-issued", readmodel.PermitFilter{Statuses: []string{"issued"}}, nil},
		}
		for _, rd := range reads {
			b.Run(fmt.Sprint(mode, "/", rd.name), func(b *testing.B) {
				ctx := context.Background()
				q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(state), Limit: 25, Filter: rd.f, Sort: readmodel.SortValuationDesc, After: rd.after}
				for b.Loop() {
					page, err := s.SearchPermits(ctx, q)
					if err != nil {
						b.Fatal(err)
					}
					if len(page.Permits) != 25 {
						b.Fatalf("a page of %d", len(page.Permits))
					}
				}
			})
		}
	}
}

func valueOf(p readmodel.Permit) float64 {
	if p.Valuation == nil {
		return 0
	}
	return *p.Valuation
}
