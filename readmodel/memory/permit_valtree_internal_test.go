package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValueOrdIsValueLess: ascending valueOrd is valuation descending,
// unknown last, and equal valuations (0 and -0) share an ord.
func TestValueOrdIsValueLess(t *testing.T) {
	vals := []float64{math.Inf(1), 1e12, 250000.5, 250000, 100, 1, 1e-9, 0, math.Copysign(0, -1), -1e-9, -5, -1e12, math.Inf(-1), math.NaN()}
	for i, a := range vals {
		for j, b := range vals {
			x, y := valueOrd(a), valueOrd(b)
			switch {
			case math.IsNaN(a) && math.IsNaN(b), a == b:
				require.Equal(t, x, y, "%v %v", a, b)
			case math.IsNaN(b) || !math.IsNaN(a) && a > b:
				require.Less(t, x, y, "%v %v", a, b)
			default:
				require.Greater(t, x, y, "%v %v", a, b)
			}
			require.Equal(t, i < j, x < y || x == y && i < j) // vals is in that order already
		}
	}
}

// TestValueTreeMatchesSortedPermits drives a valueTree as the side does
// (a new version's slot is replaced before the old version's key is
// removed, permits.go) through inserts, revaluations and deletes with
// many equal and unknown valuations, and checks that a walk from any
// pivot (stored or not, with or without a valuation) gives the permits
// valueLess orders from it. The ids tie on the valuation in every way
// their abbreviations (abbr.go) can: none (no group), different ones,
// and equal ones of different ids.
func TestValueTreeMatchesSortedPermits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	idOf := func(n int) string {
		switch n % 4 {
		case 0:
			return fmt.Sprintf("p%03d", n) // no abbreviation
		case 1:
			return fmt.Sprintf("b:%03d", n) // abbreviations decide
		case 2:
			return fmt.Sprintf("a:SYN-7-1234567%03d", n) // 14 bytes shared: equal abbreviations for tens
		default:
			return fmt.Sprintf("a:%d", n*7919) // another number, of the group of 2's
		}
	}
	slab := newPermitSlab()
	tree := newValueTree(slab)
	live := map[string]*cpermit{}
	valuation := func() float64 {
		switch rng.IntN(10) {
		case 0:
			return math.NaN()
		case 1:
			return 0
		default:
			return float64(rng.IntN(30)) * 500 // many ties
		}
	}
	check := func() {
		t.Helper()
		all := make([]*cpermit, 0, len(live))
		for _, c := range live {
			all = append(all, c)
		}
		slices.SortFunc(all, func(a, b *cpermit) int {
			if valueLess(a, b) {
				return -1
			}
			return 1
		})
		require.Equal(t, len(all), tree.Len())
		pivots := []*cpermit{{valuation: math.Inf(1)}}
		for range 20 {
			pivots = append(pivots, &cpermit{valuation: valuation(), id: idOf(rng.IntN(400))})
		}
		for _, p := range pivots {
			var want, got []string
			for _, c := range all {
				if !valueLess(c, p) {
					want = append(want, c.id)
				}
			}
			ascendValues(tree, slab, p, func(c *cpermit) bool { got = append(got, c.id); return true })
			require.Equal(t, want, got, "pivot %v %q", p.valuation, p.id)
			// A walk stops where fn says.
			n := 0
			ascendValues(tree, slab, p, func(*cpermit) bool { n++; return n < 3 })
			require.Equal(t, min(3, len(want)), n)
		}
	}
	for i := range 4000 {
		id := idOf(rng.IntN(400))
		prev := live[id]
		switch {
		case prev != nil && rng.IntN(4) == 0: // deleted
			tree.Delete(vkeyOf(prev))
			slab.release(prev)
			delete(live, id)
		case prev != nil: // a new version, revalued
			c := &cpermit{id: id, valuation: valuation(), slot: prev.slot}
			slab.replace(c)
			tree.Delete(vkeyOf(prev))
			tree.Set(vkeyOf(c))
			live[id] = c
		default:
			c := &cpermit{id: id, valuation: valuation()}
			slab.take(c)
			tree.Set(vkeyOf(c))
			live[id] = c
		}
		if i%250 == 0 {
			check()
		}
	}
	check()
}
