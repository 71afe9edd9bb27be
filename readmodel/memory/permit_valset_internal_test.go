package memory

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/btree"
)

// TestValSetMatchesBTree: a valSet holds the keys a B-tree given the same
// sets and deletes holds, in the same order, below and past smallVals,
// and loads (an Import's, in order) give the same as sets.
func TestValSetMatchesBTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var v valSet
	ref := btree.NewBTreeG(valKeyLess)
	check := func() {
		t.Helper()
		require.Equal(t, ref.Len(), v.len())
		for i := range ref.Len() {
			want, _ := ref.GetAt(i)
			require.Equal(t, want, v.at(i), i)
		}
	}
	key := func() valKey {
		return valKey{v: float64(rng.IntN(20)) * 1000, slot: uint32(rng.IntN(200))}
	}
	for i := range 3000 {
		k := key()
		if rng.IntN(3) == 0 {
			v.del(k)
			ref.Delete(k)
		} else {
			v.set(k)
			ref.Set(k)
		}
		if i%50 == 0 || v.len() == smallVals || v.len() == smallVals+1 {
			check()
		}
	}
	check()
	require.NotNil(t, v.tree, "past smallVals the set is a B-tree")

	var small, loaded valSet
	for i := range smallVals + 10 {
		k := valKey{v: float64(i), slot: 1}
		small.set(k)
		loaded.load(k)
		require.Equal(t, small.len(), loaded.len())
		for j := range small.len() {
			require.Equal(t, small.at(j), loaded.at(j))
		}
	}
	require.NotNil(t, loaded.tree)
}
