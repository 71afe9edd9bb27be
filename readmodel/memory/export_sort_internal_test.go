package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// The keyed sorts order as the orders they copy: permits by permitLess,
// leads by dateLess, ties on the day (and on the confidence) included.
func TestExportSortsMatchTheirOrders(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{0, 1, 2, 7, 500, 3000} {
		ps := make([]*cpermit, n)
		for i := range ps {
			ik := -int32(19000 + r.IntN(40))
			if r.IntN(10) == 0 {
				ik = undated
			}
			ps[i] = &cpermit{ik: ik, id: fmt.Sprintf("s:%d", r.IntN(n+1)*7919%100003)}
		}
		want := slices.Clone(ps)
		sortByLess(want, permitLess)
		sortPermits(ps)
		for i := range ps {
			if permitLess(ps[i], want[i]) || permitLess(want[i], ps[i]) {
				t.Fatalf("n=%d: permit %d is %d/%s, want %d/%s", n, i, ps[i].ik, ps[i].id, want[i].ik, want[i].id)
			}
		}

		ls := make([]*leadRec, n)
		for i := range ls {
			l := &leadRec{date: int32(19000 + r.IntN(30)), hasConf: r.IntN(4) != 0, conf: float64(r.IntN(5)) / 4}
			if r.IntN(10) == 0 {
				l.date = noDate
			}
			l.lead = readmodel.Lead{LeadID: fmt.Sprintf("l:%d", r.IntN(n+1))}
			ls[i] = l
		}
		wantL := slices.Clone(ls)
		sortByLess(wantL, dateLess)
		sortLeads(ls)
		for i := range ls {
			if dateLess(ls[i], wantL[i]) || dateLess(wantL[i], ls[i]) {
				t.Fatalf("n=%d: lead %d is %+v, want %+v", n, i, *ls[i], *wantL[i])
			}
		}
	}
}

// BenchmarkExportSortPermits sorts 1M permits stored in another order
// than the index's, as a replay leaves them: through their pointers
// (sortByLess) and on copies of their keys (sortPermits).
func BenchmarkExportSortPermits(b *testing.B) {
	r := rand.New(rand.NewPCG(43, 44))
	const n = 1_000_000
	ps := make([]*cpermit, n)
	for i := range ps {
		ps[i] = &cpermit{ik: -int32(16000 + r.IntN(3650)), id: fmt.Sprintf("gen:%09d", r.IntN(1<<30))}
	}
	for _, how := range []string{"pointers", "keys"} {
		b.Run(how, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				xs := slices.Clone(ps)
				r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
				b.StartTimer()
				if how == "pointers" {
					sortByLess(xs, permitLess)
				} else {
					sortPermits(xs)
				}
			}
		})
	}
}
