package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// BenchmarkPermitsPageDenseValue reads a state of 100,000 permits whose
// values have the shares of `permitd gen`'s (status completed 72%,
// issued 17%; type building 55%), with its postings kept and with the
// values above a quarter of the geo dense (permit_dense.go, the
// default): first pages of 25 filtered on a dense value (read from the
// state's own set with the predicate), on a kept one (its posting
// either way), and a twelve-month series filtered on the dense status.
// ns/op is one page or one series: what density costs a reader.
func BenchmarkPermitsPageDenseValue(b *testing.B) {
	reads := []struct {
		name    string
		f       readmodel.PermitFilter
		monthly bool
	}{
		{"status-completed", readmodel.PermitFilter{Statuses: []string{"completed"}}, false},
		{"type-building", readmodel.PermitFilter{PermitTypes: []string{"building"}}, false},
		{"status-issued", readmodel.PermitFilter{Statuses: []string{"issued"}}, false},
		{"completed-building", readmodel.PermitFilter{Statuses: []string{"completed"}, PermitTypes: []string{"building"}}, false},
		{"monthly-completed", readmodel.PermitFilter{Statuses: []string{"completed"}}, true},
	}
	for _, share := range []int{0, 4} {
		restore := memory.SetDenseShare(share)
		s := newStore(b)
		apply(b, s, readmodel.Batch{Permits: genSharePermits(rand.New(rand.NewPCG(3, 4)), 100_000)})
		restore()
		mode := "kept"
		if share > 0 {
			mode = "dense"
		}
		for _, r := range reads {
			b.Run(fmt.Sprint(mode, "/", r.name), func(b *testing.B) {
				ctx := context.Background()
				q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(state), Desc: true, Limit: 25, Filter: r.f}
				mq := readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(state), Filter: r.f, FromDate: "2024-01-01", ToDate: "2024-12-31"}
				for b.Loop() {
					var err error
					if r.monthly {
						_, err = s.PermitMonthly(ctx, mq)
					} else {
						_, err = s.SearchPermits(ctx, q)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// genSharePermits are n permits of the state (and a ZIP and city), over
// 2022 to 2024, with the value shares of `permitd gen`.
func genSharePermits(r *rand.Rand, n int) []readmodel.Permit {
	pick := func(vals []string, shares []float64) string {
		x := r.Float64()
		for i, s := range shares {
			if x < s {
				return vals[i]
			}
			x -= s
		}
		return vals[len(vals)-1]
	}
	ps := make([]readmodel.Permit, 0, n)
	for i := range n {
		p := permit(fmt.Sprintf("%06d", i), fmt.Sprintf("%d-%02d-%02d", 2022+r.IntN(3), 1+r.IntN(12), 1+r.IntN(28)), zipA, 1)
		p.Status = pick([]string{"Completed", "Issued", "Expired", "In Review"}, []float64{0.72, 0.17, 0.07})
		p.PermitType = pick([]string{"Building", "Plumbing", "Electrical", "Mechanical", "Demolition", "Site Development"}, []float64{0.55, 0.1, 0.1, 0.1, 0.08})
		v := float64(1000 + r.IntN(500000))
		p.Valuation = &v
		ps = append(ps, p)
	}
	return ps
}
