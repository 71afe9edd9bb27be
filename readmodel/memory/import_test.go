package memory_test

import (
	"context"
	"math/rand/v2"
	"slices"
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
	s := memory.New(memory.Params{})
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

// An Import answers filtered permit queries as Apply's state does, also
// when its batches change and delete permits it already holds (the bulk
// load's staged postings are flushed before a permit leaves them).
func TestImportedPermitIndexesMatchApplied(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ps := filterPermits(r, 400)
	changed := slices.Clone(ps)
	for i := 0; i < len(changed); i += 5 {
		p := changed[i]
		p.Version = 2
		p.Status, p.PermitType = "Expired", "Demolition"
		p.GeoLinks = slices.Clone(p.GeoLinks)
		p.GeoLinks[0].GeoID = zipB
		changed[i] = p
	}
	var dels []readmodel.Delete
	for i := 3; i < len(ps); i += 11 {
		dels = append(dels, readmodel.Delete{Kind: readmodel.KindPermit, ID: ps[i].PermitID, Version: 3})
	}
	batches := []readmodel.Batch{{Permits: ps}, {Permits: changed}, {Deletes: dels}}

	applied := newStore(t)
	for _, b := range batches {
		apply(t, applied, b)
	}
	imported := memory.New(memory.Params{})
	im := imported.NewImport()
	locs := newStore(t)
	require.NoError(t, locs.Export(context.Background(), 100, im.Add))
	for _, b := range batches {
		require.NoError(t, im.Add(b))
	}
	require.NoError(t, im.Commit())

	ctx := context.Background()
	da, err := applied.Digest(ctx)
	require.NoError(t, err)
	di, err := imported.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, da, di)
	found := 0
	for i := range 300 {
		f := randomPermitFilter(r)
		q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef([]string{zipA, zipB, city}[i%3]), Limit: 1 + i%9, Filter: f}
		if i%2 == 1 {
			q.Sort = readmodel.SortValuationDesc
		}
		want := walk(t, applied, q, nil)
		require.Equal(t, want, walk(t, imported, q, nil), "filter %+v", f)
		found += len(want)
	}
	require.Positive(t, found)
}
