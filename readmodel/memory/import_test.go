package memory_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// An Import replaces the store's state as a whole: readers see the old
// state until Commit and the new one after (never a part), with a new
// read version, and what Apply wrote meanwhile is kept; an Abort leaves
// the store as it was. Readers run during
// it (the race detector watches the sides being swapped).
func TestImportReplacesTheState(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Options{})
	_, err := s.Apply(ctx, readmodel.Batch{Locations: lrLocations()[:1]})
	require.NoError(t, err)
	_, seq0 := s.ReadVersion()

	var stop atomic.Bool
	var wg sync.WaitGroup
	var partial atomic.Int64
	wg.Go(func() {
		for !stop.Load() {
			c, err := s.Counts(ctx)
			if err == nil && c[readmodel.KindLocation] != 1 && c[readmodel.KindLocation] != 3 {
				partial.Add(1)
			}
		}
	})
	aborted := s.NewImport()
	require.NoError(t, aborted.Add(readmodel.Batch{Locations: lrLocations()}))
	aborted.Abort()
	c, err := s.Counts(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), c[readmodel.KindLocation], "an aborted import changes nothing")

	im := s.NewImport()
	require.NoError(t, im.Add(readmodel.Batch{Locations: lrLocations()[1:]}))
	require.Error(t, im.Add(readmodel.Batch{Deletes: []readmodel.Delete{{Kind: "nope", ID: "x", Version: 1}}}))
	require.Error(t, im.Commit(), "an import with a refused batch is not committed")

	im = s.NewImport()
	require.NoError(t, im.Add(readmodel.Batch{Locations: lrLocations()[1:]}))
	// A write while the import runs (serve's embedded feed) is kept.
	_, err = s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityB, 7, 1)})
	require.NoError(t, err)
	require.NoError(t, im.Add(readmodel.Batch{Locations: lrLocations()[:1], Leads: lrLeads(lrCityA, 50, 1)}))
	require.NoError(t, im.Commit())
	stop.Store(true)
	wg.Wait()
	require.Zero(t, partial.Load(), "a reader saw part of an import")

	_, seq1 := s.ReadVersion()
	require.Greater(t, seq1, seq0)
	c, err = s.Counts(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), c[readmodel.KindLocation])
	require.Equal(t, int64(57), c[readmodel.KindLead], "the imported leads and the ones applied meanwhile")
	// Both sides hold the imported state: writes go on from it.
	for range 2 {
		res, err := s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityA, 50, 1)})
		require.NoError(t, err)
		require.Equal(t, 50, res.Stale)
	}
	res, err := s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityA, 50, 2)})
	require.NoError(t, err)
	require.Equal(t, 50, res.Applied)
}
