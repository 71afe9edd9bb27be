package indexer

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestReserveLocations sizes the location table without losing or
// changing a row, and bounds what a backlog can make it reserve: a topic
// of 2^21 messages (two million versions of fewer geographies) reserves
// slots for maxReservedLocations rows (about 14 MB: the map keeps a row
// of this size apart, a key and a pointer in the slot), not for 2^21
// (about 110 MB).
func TestReserveLocations(t *testing.T) {
	ix, err := New(Params{Writer: memory.New(memory.Params{}), DeadLetter: func(context.Context, Message, error) error { return nil }})
	require.NoError(t, err)
	var locs []readmodel.Location
	for i := range 100 {
		locs = append(locs, readmodel.Location{GeoID: fmt.Sprintf("g%03d", i), GeoType: readmodel.GeoCity, City: fmt.Sprint(i), Version: 1})
	}
	ix.loc.apply(locs, nil)
	ix.loc.apply(nil, []readmodel.Delete{{Kind: readmodel.KindLocation, ID: "g007", Version: 2}})

	ix.ReserveLocations(1000)
	ix.ReserveLocations(0)
	ix.ReserveLocations(-5)
	for i := range 100 {
		l, ok := ix.loc.get(fmt.Sprintf("g%03d", i))
		if i == 7 {
			require.False(t, ok, "the deleted row stays deleted")
			continue
		}
		require.True(t, ok)
		require.Equal(t, fmt.Sprint(i), l.City)
	}
	require.True(t, ix.loc.putLocked(readmodel.Location{GeoID: "new", Version: 1}), "the table takes rows after")

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ix.ReserveLocations(1 << 21)
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(48<<20), "bounded by maxReservedLocations")
	_, ok := ix.loc.get("g042")
	require.True(t, ok)
}
