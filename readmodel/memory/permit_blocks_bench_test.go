package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkBlockSetInsert inserts and removes permits at random places
// of a set of 1M permits (about a state's set at 5M generated permits)
// spread over 1,000 days, so a seek meets same-day ties (ids compared
// through the slab) and, the set being loaded in one piece, full blocks
// that split.
func BenchmarkBlockSetInsert(b *testing.B) {
	const n, days = 1_000_000, 1000
	r := rand.New(rand.NewPCG(3, 4))
	slab := newPermitSlab()
	ps := make([]*cpermit, n)
	for i := range ps {
		ps[i] = &cpermit{id: fmt.Sprintf("gen:%09d", r.IntN(1e9)), ik: -int32(r.IntN(days))}
		slab.take(ps[i])
	}
	slices.SortFunc(ps, permitCmp)
	keys := make([]pkey, len(ps))
	for i, c := range ps {
		keys[i] = keyOf(c)
	}
	s := blockSetOf(slab, keys)
	extra := make([]*cpermit, 4096)
	for i := range extra {
		extra[i] = &cpermit{id: fmt.Sprintf("new:%09d", r.IntN(1e9)), ik: -int32(r.IntN(days))}
		slab.take(extra[i])
	}
	b.ResetTimer()
	for b.Loop() { // an op: every extra permit inserted, then each deleted
		for _, c := range extra {
			s.set(c)
		}
		for _, c := range extra {
			s.delete(c)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(extra)), "ns/insert+delete")
}
