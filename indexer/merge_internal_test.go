package indexer

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// merge hands the parts it appended to the first back to the pool,
// their documents cleared, for the next batch's decoders: a part's
// slices are not left as garbage once merged.
func TestMergePoolsTheMergedParts(t *testing.T) {
	for range 20 { // the race detector's pool drops some of what it is given
		ix := &Indexer{}
		second := []readmodel.Permit{{PermitID: "b", Version: 1}}
		parts := []readmodel.Batch{{Permits: []readmodel.Permit{{PermitID: "a", Version: 1}}}, {Permits: second}}
		ix.merge(parts)
		require.Len(t, parts[0].Permits, 2)
		require.Equal(t, "b", parts[0].Permits[1].PermitID, "merged before it was cleared")
		require.Empty(t, second[0].PermitID, "the merged part's documents are cleared")
		if b, ok := ix.pool.Get().(*readmodel.Batch); ok {
			require.Empty(t, b.Permits)
			require.Equal(t, 1, cap(b.Permits), "the second part's slice")
			return
		}
	}
	t.Fatal("no merged part came back from the pool")
}
