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

// TestValueOrderMatchesSortedPermits drives three valuation orders as
// the side does (a new version's slot is replaced before the old
// version's key is removed, permits.go; the exact valuations' blocks of
// a permit's orders written together, laneValues, or one at a time)
// through inserts, revaluations and deletes with many equal and unknown
// valuations, some with cents or beyond the blocks' range, and checks
// that a walk from any pivot (stored or not, with or without a
// valuation, exact or not) gives the permits valueLess orders from it.
// The ids tie on the valuation in every way their abbreviations
// (abbr.go) can: none (no group), different ones, and equal ones of
// different ids.
func TestValueOrderMatchesSortedPermits(t *testing.T) {
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
	orders := []*valueOrder{newValueOrder(slab), newValueOrder(slab), newValueOrder(slab)}
	live := make([]map[string]*cpermit, len(orders)) // what each order holds
	for i := range live {
		live[i] = map[string]*cpermit{}
	}
	valuation := func() float64 {
		switch rng.IntN(14) {
		case 0:
			return math.NaN()
		case 1:
			return 0
		case 2:
			return float64(rng.IntN(30))*500 + 0.25 // cents: the odd part
		case 3:
			return []float64{maxExactValue, -maxExactValue, maxExactValue + 1, 3e9, -3e9, 1e300}[rng.IntN(6)] // the blocks' bounds
		default:
			return float64(rng.IntN(30)) * 500 // many ties
		}
	}
	write := func(c *cpermit, in []int, add bool) {
		if exactValue(c.valuation) && rng.IntN(2) == 0 {
			var sets []*blockSet
			for _, j := range in {
				sets = append(sets, orders[j].blocks)
			}
			writeAll(sets, c, add, nil)
			return
		}
		for _, j := range in {
			if add {
				orders[j].set(c)
			} else {
				orders[j].delete(c)
			}
		}
	}
	check := func() {
		t.Helper()
		pivots := []*cpermit{{valuation: math.Inf(1)}, {valuation: math.Inf(-1)}, {valuation: 500.5, id: idOf(5)}, {valuation: -0.5}, {valuation: 4e9}, {valuation: -4e9, id: "z"}}
		for range 20 {
			pivots = append(pivots, &cpermit{valuation: valuation(), id: idOf(rng.IntN(400))})
		}
		for j, o := range orders {
			all := make([]*cpermit, 0, len(live[j]))
			for _, c := range live[j] {
				all = append(all, c)
			}
			slices.SortFunc(all, func(a, b *cpermit) int {
				if valueLess(a, b) {
					return -1
				}
				return 1
			})
			require.Equal(t, len(all), o.len())
			for _, p := range pivots {
				var want, got []string
				for _, c := range all {
					if !valueLess(c, p) {
						want = append(want, c.id)
					}
				}
				o.ascend(p, func(c *cpermit) bool { got = append(got, c.id); return true })
				require.Equal(t, want, got, "order %d pivot %v %q", j, p.valuation, p.id)
				// A walk stops where fn says.
				n := 0
				o.ascend(p, func(*cpermit) bool { n++; return n < 3 })
				require.Equal(t, min(3, len(want)), n)
			}
		}
	}
	held := map[string][]int{} // the orders an id is in
	for i := range 6000 {
		id := idOf(rng.IntN(400))
		in := held[id]
		var prev *cpermit
		if len(in) > 0 {
			prev = live[in[0]][id]
		}
		switch {
		case prev != nil && rng.IntN(4) == 0: // deleted
			write(prev, in, false)
			slab.release(prev)
			for _, j := range in {
				delete(live[j], id)
			}
			delete(held, id)
		case prev != nil: // a new version, revalued
			c := &cpermit{id: id, valuation: valuation(), slot: prev.slot}
			slab.replace(c)
			write(prev, in, false)
			write(c, in, true)
			for _, j := range in {
				live[j][id] = c
			}
		default:
			c := &cpermit{id: id, valuation: valuation()}
			slab.take(c)
			in = nil
			for j := range orders {
				if rng.IntN(3) > 0 {
					in = append(in, j)
					live[j][id] = c
				}
			}
			if len(in) == 0 {
				slab.release(c)
				continue
			}
			held[id] = in
			write(c, in, true)
		}
		if i%250 == 0 {
			check()
		}
	}
	check()
	require.NotNil(t, orders[0].odd, "some valuations are outside the blocks")
}
