package memory

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValSetMatchesASortedSlice: a valSet holds the values a sorted
// slice given the same adds and deletes (one equal value each) holds,
// while small, in blocks that split, empty, join and shrink back to
// few, and loads (an Import's, in order) followed by adds and deletes
// give the same as adds. Every block stays sorted, not empty, in order
// and within valBlockMax, its last value recorded.
func TestValSetMatchesASortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(v *valSet, ref []float64) {
		t.Helper()
		require.Equal(t, len(ref), v.len())
		for i := range ref {
			require.Equal(t, ref[i], v.at(i), i)
		}
		if v.big == nil {
			require.LessOrEqual(t, len(v.small), valBlockMax)
			require.True(t, slices.IsSorted(v.small))
			return
		}
		require.Nil(t, v.small)
		require.Len(t, v.big.last, len(v.big.blocks))
		n := 0
		for i, b := range v.big.blocks {
			require.NotEmpty(t, b, "block %d", i)
			require.LessOrEqual(t, len(b), valBlockMax)
			require.True(t, slices.IsSorted(b))
			require.Equal(t, b[len(b)-1], v.big.last[i])
			if i > 0 {
				require.LessOrEqual(t, v.big.last[i-1], b[0])
			}
			n += len(b)
		}
		require.Equal(t, n, v.big.n)
	}
	add := func(v *valSet, ref []float64, x float64) []float64 {
		v.set(x)
		i, _ := slices.BinarySearch(ref, x)
		return slices.Insert(ref, i, x)
	}
	del := func(v *valSet, ref []float64, x float64) []float64 {
		v.del(x)
		if i, found := slices.BinarySearch(ref, x); found {
			return slices.Delete(ref, i, i+1)
		}
		return ref
	}
	value := func(spread int) float64 { return float64(rng.IntN(spread)) * 500 } // many equal values

	// Grown past a block, to many blocks, and shrunk to none, with
	// deletes of values held and not held all along.
	var v valSet
	var ref []float64
	sawBig := false
	for phase, adds := range []int{3, 2, 1} { // in thirds: adds of every three steps
		for i := range 4000 {
			if rng.IntN(3) < adds {
				ref = add(&v, ref, value(40+phase*400))
			} else {
				ref = del(&v, ref, value(40+phase*400))
			}
			sawBig = sawBig || v.big != nil
			if i%40 == 0 || v.len() == valBlockMax || v.len() == valBlockMax+1 {
				check(&v, ref)
			}
		}
		check(&v, ref)
	}
	require.True(t, sawBig, "past valBlockMax the set is in blocks")
	for len(ref) > 0 {
		ref = del(&v, ref, ref[rng.IntN(len(ref))])
		if len(ref)%17 == 0 {
			check(&v, ref)
		}
	}
	check(&v, ref)
	for range 2 * valBlockMax { // and grown again
		ref = add(&v, ref, value(1000))
	}
	check(&v, ref)

	// Loads in order, then adds and deletes, give what adds give.
	for _, n := range []int{5, valBlockFill, valBlockFill + 1, 1000} {
		var loaded valSet
		var lref []float64
		for i := range n {
			x := float64(i / 3) // equal values too
			loaded.load(x)
			lref = append(lref, x)
		}
		check(&loaded, lref)
		for range 300 {
			if rng.IntN(2) == 0 {
				lref = add(&loaded, lref, value(n/2))
			} else {
				lref = del(&loaded, lref, float64(rng.IntN(n/3+1)))
			}
		}
		check(&loaded, lref)
	}
}

// TestSetAllIsSetOneByOne: adding a value to many large sets in lock
// step (setAll, a permit's valuation into its geos' month stats) leaves
// every set block for block as adding it to each in turn does: sets of
// one block to many, values below, among, equal to and above those
// held, blocks full (split) and not, more sets than a lock step takes.
func TestSetAllIsSetOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	build := func(n int, spread float64) (*valSet, *valSet) {
		var a, b valSet
		for range n {
			x := float64(rng.IntN(int(spread))) * 10
			a.set(x)
			b.set(x)
		}
		return &a, &b
	}
	for round := range 200 {
		count := 1 + rng.IntN(2*valSetMany+3)
		var got, want []*valSet
		for range count {
			a, b := build(valBlockMax+1+rng.IntN(20*valBlockMax), float64(10+rng.IntN(5000)))
			got, want = append(got, a), append(want, b)
		}
		for range 1 + rng.IntN(valBlockMax) { // enough to fill and split blocks
			var x float64
			switch rng.IntN(4) {
			case 0:
				x = -1 // below every value
			case 1:
				x = 1e9 // above
			case 2:
				x = float64(rng.IntN(100)) * 10 // equal to some
			default:
				x = float64(rng.IntN(50000)) + 0.5
			}
			bigs := make([]*valBlocks, len(got))
			for j, v := range got {
				bigs[j] = v.big
			}
			setAll(bigs, x)
			for _, v := range want {
				v.set(x)
			}
		}
		for j := range got {
			require.Equal(t, want[j].big.blocks, got[j].big.blocks, "round %d, set %d", round, j)
			require.Equal(t, want[j].big.last, got[j].big.last, "round %d, set %d", round, j)
			require.Equal(t, want[j].big.n, got[j].big.n, "round %d, set %d", round, j)
		}
	}
}

// TestGeoMonthsIndex: a month's place is found by its offset from the
// first month when the months run without a gap, and by a search
// otherwise, as slices.BinarySearch finds it, for months held and not,
// before, among and after the others.
func TestGeoMonthsIndex(t *testing.T) {
	dense := &geoMonths{}
	for m := int32(24000); m < 24120; m++ {
		dense.months = append(dense.months, m)
	}
	gapped := &geoMonths{months: []int32{23990, 24001, 24002, 24010, 24100, 24101, 24200}}
	for _, g := range []*geoMonths{dense, gapped, {}, {months: []int32{24050}}} {
		for m := int32(23980); m < 24220; m++ {
			wi, wok := slices.BinarySearch(g.months, m)
			gi, gok := g.index(m)
			require.Equal(t, wok, gok, "month %d of %v", m, g.months)
			require.Equal(t, wi, gi, "month %d of %v", m, g.months)
		}
	}
}
