package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkBlockSetInsertCold is BenchmarkBlockSetInsert among many large
// sets over a large slab, so that a seek's loads miss the caches as in a
// store of millions of permits: 12 sets of about 1.3M keys each over 4M
// permits of 1,000 days, each new permit inserted into 6 of them and
// then deleted. Its permits hold their slots
//
//   - grown: in no order, as in a store written by Apply (a replay's, a
//     live one's);
//   - loaded: in index order, as in a store an Import loaded from a
//     snapshot (which holds permits in index order), so the keys of a
//     block name neighbouring slots and the abbreviated ids that break
//     their day's ties share cache lines and pages.
func BenchmarkBlockSetInsertCold(b *testing.B) {
	for _, loaded := range []bool{false, true} {
		b.Run(map[bool]string{false: "grown", true: "loaded"}[loaded], func(b *testing.B) {
			const n, days, nsets = 4_000_000, 1000, 12
			r := rand.New(rand.NewPCG(5, 6))
			slab := newPermitSlab()
			ps := make([]*cpermit, n)
			for i := range ps {
				ps[i] = &cpermit{id: fmt.Sprintf("gen:SYN-%09d", r.IntN(1e9)), ik: -int32(r.IntN(days))}
				if !loaded {
					slab.take(ps[i])
				}
			}
			slices.SortFunc(ps, permitCmp)
			if loaded {
				for _, c := range ps {
					slab.take(c)
				}
			}
			sets := make([]*blockSet, nsets)
			for j := range sets {
				var keys []pkey
				for _, c := range ps {
					if r.IntN(3) == 0 {
						keys = append(keys, keyOf(c))
					}
				}
				sets[j] = blockSetOf(slab, keys)
			}
			extra := make([]*cpermit, 8192)
			in := make([][6]int, len(extra))
			for i := range extra {
				extra[i] = &cpermit{id: fmt.Sprintf("gen:SYN-%09d", r.IntN(1e9)), ik: -int32(r.IntN(days))}
				slab.take(extra[i])
				for k := range in[i] {
					in[i][k] = r.IntN(nsets)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				for i, c := range extra {
					for _, j := range in[i] {
						sets[j].set(c)
					}
				}
				for i, c := range extra {
					for _, j := range in[i] {
						sets[j].delete(c)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(extra)*6), "ns/insert+delete")
		})
	}
}
