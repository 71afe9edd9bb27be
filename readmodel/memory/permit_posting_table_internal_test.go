package memory

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPostingTableIsAMap: the postings' table answers as a map of the
// same keys does through every put, replace and delete, with keys drawn
// from a small space so that probes collide, runs wrap past the table's
// end and deletes move keys back into their holes: get and getAll (more
// keys than one stage probes, some missing) give each key's posting,
// len counts them, and all gives each exactly once.
func TestPostingTableIsAMap(t *testing.T) {
	for _, space := range []int{3, 12, 40, 400} {
		rng := rand.New(rand.NewPCG(uint64(space), 7))
		tab, want := newPostingTable(), map[fkey]treeSet{}
		key := func() fkey {
			return fkey{geo: uint32(rng.IntN(space)), field: filterField(1 + rng.IntN(3)), val: uint32(rng.IntN(space))}
		}
		sets := make([]*blockSet, 16)
		for i := range sets {
			sets[i] = &blockSet{n: i}
		}
		for step := range 20_000 {
			k := key()
			switch op := rng.IntN(10); {
			case op < 5:
				v := treeSet{sets[rng.IntN(len(sets))]}
				tab.put(k, v)
				want[k] = v
			default:
				tab.del(k)
				delete(want, k)
			}
			require.Equal(t, len(want), tab.len(), "step %d", step)
			got, ok := tab.get(k)
			w, wok := want[k]
			require.Equal(t, wok, ok, "step %d: %+v", step, k)
			require.Same(t, w.t, got.t, "step %d: %+v", step, k)
			if step%97 != 0 {
				continue
			}
			all := map[fkey]treeSet{}
			for k, v := range tab.all() {
				_, twice := all[k]
				require.False(t, twice, "step %d: %+v twice", step, k)
				all[k] = v
			}
			require.True(t, maps.Equal(want, all), "step %d: all", step)
			keys := make([]fkey, 0, 2*postingsAtOnce+5)
			for range cap(keys) {
				keys = append(keys, key())
			}
			out := make([]*blockSet, len(keys))
			for j := range out {
				out[j] = sets[0] // getAll sets every one, missing keys to nil
			}
			tab.getAll(keys, out)
			for j, k := range keys {
				require.Same(t, want[k].t, out[j], "step %d: getAll of %+v", step, k)
			}
		}
	}
}

// TestPostingTableRefusesAKeyWithoutAField: field 0 marks an empty slot,
// so a key without one would be lost; put refuses it.
func TestPostingTableRefusesAKeyWithoutAField(t *testing.T) {
	require.Panics(t, func() { newPostingTable().put(fkey{geo: 1, val: 2}, treeSet{}) })
}

// BenchmarkPostingLookups looks up a permit's worth of postings (20
// keys, present) at a time in a table of 4M, as a write into a large
// store does (lanePostings): in Go's map one key after another ("map"),
// and in the postings' table in lock step ("table", getAll). It reports
// ns a key.
//
//	go test -run '^$' -bench PostingLookups ./readmodel/memory/
func BenchmarkPostingLookups(b *testing.B) {
	const n, per = 1 << 22, 20
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]fkey, n)
	m, tab := make(map[fkey]treeSet, n), newPostingTable()
	set := &blockSet{}
	for i := range keys {
		keys[i] = fkey{geo: uint32(rng.IntN(200_000)), field: filterField(1 + rng.IntN(5)), val: uint32(rng.IntN(1 << 20))}
		m[keys[i]] = treeSet{set}
		tab.put(keys[i], treeSet{set})
	}
	groups := make([][per]fkey, 1<<16)
	for g := range groups {
		for j := range per {
			groups[g][j] = keys[rng.IntN(n)]
		}
	}
	var out [per]*blockSet
	b.Run("map", func(b *testing.B) {
		for i := range b.N {
			g := &groups[i%len(groups)]
			for j, k := range g {
				out[j] = m[k].t
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/key")
	})
	b.Run("table", func(b *testing.B) {
		for i := range b.N {
			tab.getAll(groups[i%len(groups)][:], out[:])
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/key")
	})
	if out[0] != set {
		b.Fatal("a key was not found")
	}
}
