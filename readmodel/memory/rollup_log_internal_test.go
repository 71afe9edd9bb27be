package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// setFenLog sets fenLogMin and fenFoldMin until the test ends.
func setFenLog(t *testing.T, logMin, foldMin int) {
	oldLog, oldFold := fenLogMin, fenFoldMin
	fenLogMin, fenFoldMin = logMin, foldMin
	t.Cleanup(func() { fenLogMin, fenFoldMin = oldLog, oldFold })
}

// fenReads are every read of a tree's top-list counts: per floor bucket
// b (0 to 64) the counts idsAtLeast adds, per bucket those idsOfBucket
// adds, then the null ones, each as "kind id count" lines of the ids
// not at zero.
func fenReads(f *confFen, names int) []string {
	var out []string
	acc := &leadStatsAcc{bySignal: map[string]int64{}}
	read := func(what string, add func()) {
		acc.reset(0, nil, names)
		for _, c := range []*idCounter{&acc.cities, &acc.zips, &acc.counties} {
			clear(c.n)
		}
		add()
		var lines []string
		for k, c := range map[string]*idCounter{"city": &acc.cities, "zip": &acc.zips, "county": &acc.counties} {
			for id, n := range c.n {
				if n != 0 {
					lines = append(lines, fmt.Sprintf("%s %s %d %d", what, k, id, n))
				}
			}
		}
		slices.Sort(lines)
		out = append(out, lines...)
	}
	for b := 0; b <= confBuckets; b++ {
		read(fmt.Sprintf("b>=%d", b), func() { f.idsAtLeast(b, acc, 1) })
		if b < confBuckets {
			read(fmt.Sprintf("b=%d", b), func() { f.idsOfBucket(b, acc, 1) })
		}
	}
	read("null", func() { f.nullIDsInto(acc, 1) })
	return out
}

// TestFenLogMatchesAdds checks that a tree that logs its top-list
// changes (and folds them at any size) reads as one that adds each at
// once, after every step, and holds the same lists once folded: leads
// added, removed (each removal one of the leads added) and added again.
func TestFenLogMatchesAdds(t *testing.T) {
	const names = 600
	for _, fold := range []int{1, 3, 64, 1 << 30} {
		t.Run(fmt.Sprintf("foldMin=%d", fold), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(83, uint64(fold)))
			type lead struct {
				hasConf bool
				conf    float64
				ids     leadIDs
			}
			var held []lead
			var direct, logged confFen
			setFenLog(t, fenLogMin, fenFoldMin) // restored when the test ends
			for step := range 3000 {
				var l lead
				delta := int64(1)
				if len(held) > 0 && rng.IntN(3) == 0 {
					j := rng.IntN(len(held))
					l, delta = held[j], -1
					held = slices.Delete(held, j, j+1)
				} else {
					l.hasConf = rng.IntN(6) > 0
					if l.hasConf {
						l.conf = []float64{0, 0.015, 0.5, 0.74, 0.75, 0.99, 1, rng.Float64()}[rng.IntN(8)]
					}
					// ids 0 (empty) to names-1, many repeated
					l.ids = leadIDs{city: uint32(rng.IntN(names)), zip: uint32(rng.IntN(names / 3)), county: uint32(rng.IntN(12))}
					held = append(held, l)
				}
				fenLogMin, fenFoldMin = 1<<30, 1<<30
				direct.add(l.hasConf, l.conf, l.ids, delta)
				fenLogMin, fenFoldMin = 0, fold
				logged.add(l.hasConf, l.conf, l.ids, delta)
				if step%97 == 0 || step == 2999 {
					require.Equal(t, fenReads(&direct, names), fenReads(&logged, names), "step %d", step)
				}
			}
			if fold < 1<<30 {
				require.NotEmpty(t, logged.ids[confBuckets], "the lists were folded into")
			}
			logged.fold()
			require.Empty(t, logged.log)
			require.Equal(t, fmt.Sprint(direct), fmt.Sprint(logged))
		})
	}
}

// TestAddSortedMatchesAdd checks addSorted against add one change at a
// time, on lists short and long, with changes that insert, add to,
// repeat and drop ids.
func TestAddSortedMatchesAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(84, 85))
	for round := range 400 {
		var want sparseCounts
		for range rng.IntN(300) {
			want.add(uint32(1+rng.IntN(400)), int64(1+rng.IntN(3)))
		}
		got := slices.Clone(want)
		var ch []idCountPair
		for range rng.IntN(40) {
			id := uint32(1 + rng.IntN(400))
			n := int32(1 + rng.IntN(2))
			if i, ok := slices.BinarySearchFunc(want, id, func(e idCountPair, id uint32) int { return int(e.id) - int(id) }); ok && rng.IntN(2) == 0 {
				n = -min(n, want[i].n) // never below zero, as the leads' removals
			}
			want.add(id, int64(n))
			ch = append(ch, idCountPair{id: id, n: n})
		}
		slices.SortStableFunc(ch, func(a, b idCountPair) int { return int(a.id) - int(b.id) })
		got.addSorted(ch)
		require.Equal(t, fmt.Sprint(want), fmt.Sprint(got), "round %d", round)
	}
}
