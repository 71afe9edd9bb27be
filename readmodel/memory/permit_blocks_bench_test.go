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
	benchBlockSets(b, blockSetBench{seed: 3, permits: 1_000_000, days: 1000, sets: 1, every: 1, into: 1,
		id: "gen:%09d", newID: "new:%09d", extra: 4096})
}

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
			benchBlockSets(b, blockSetBench{seed: 5, permits: 4_000_000, days: 1000, sets: 12, every: 3, into: 6,
				id: "gen:SYN-%09d", newID: "gen:SYN-%09d", extra: 8192, loaded: loaded})
		})
	}
}

// blockSetBench is a block-set benchmark's store: permits of random ids
// and days, sets each holding every permit (every 1) or about one in
// every, and extra new permits each inserted into into sets at random.
type blockSetBench struct {
	seed                uint64
	permits, days, sets int
	every, into, extra  int
	id, newID           string // formats of a random number below 1e9
	loaded              bool   // slots in index order, else in the order of creation
}

// benchBlockSets times, per op, every extra permit inserted into its
// sets, then each deleted, and reports ns per insert and delete.
func benchBlockSets(b *testing.B, p blockSetBench) {
	r := rand.New(rand.NewPCG(p.seed, p.seed+1))
	slab := newPermitSlab()
	ps := make([]*cpermit, p.permits)
	for i := range ps {
		ps[i] = &cpermit{id: fmt.Sprintf(p.id, r.IntN(1e9)), ik: -int32(r.IntN(p.days))}
		if !p.loaded {
			slab.take(ps[i])
		}
	}
	slices.SortFunc(ps, permitCmp)
	if p.loaded {
		for _, c := range ps {
			slab.take(c)
		}
	}
	sets := make([]*blockSet, p.sets)
	for j := range sets {
		keys := make([]pkey, 0, len(ps)/p.every)
		for _, c := range ps {
			if p.every == 1 || r.IntN(p.every) == 0 {
				keys = append(keys, keyOf(c))
			}
		}
		sets[j] = blockSetOf(slab, keys)
	}
	extra := make([]*cpermit, p.extra)
	into := make([][]int, len(extra))
	for i := range extra {
		extra[i] = &cpermit{id: fmt.Sprintf(p.newID, r.IntN(1e9)), ik: -int32(r.IntN(p.days))}
		slab.take(extra[i])
		into[i] = make([]int, p.into)
		for k := range into[i] {
			if p.sets > 1 {
				into[i][k] = r.IntN(p.sets)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for i, c := range extra {
			for _, j := range into[i] {
				sets[j].set(c)
			}
		}
		for i, c := range extra {
			for _, j := range into[i] {
				sets[j].delete(c)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(extra)*p.into), "ns/insert+delete")
}
