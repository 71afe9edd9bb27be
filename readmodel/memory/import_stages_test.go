package memory_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// An Import builds its sides in two stages (compact, then index) and
// falls back to the ordinary write for what is not a new permit: a new
// version, a tombstone, a re-link at an equal version, a property beside
// the permits of its batch. The imported store holds what a store that
// applied the same batches holds: the same documents (Export), and the
// same answers to text, property, geometry and filtered permit reads, on
// the first side at Commit and on the second once settled.
func TestImportStagesMatchApply(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ps, props := permitsOnProperties(r, 600, 40, 3)
	// Unlinked first (no ZIP link), then linked at the same version: a
	// re-link, which the indexer stage must not see as a new permit.
	unlinked := slices.Clone(ps[500:540])
	for i := range unlinked {
		unlinked[i].GeoLinks = unlinked[i].GeoLinks[1:]
	}
	changed := slices.Clone(ps[:100])
	for i := range changed {
		changed[i].Version = 2
		changed[i].Status, changed[i].RawDescription = "Expired", "Replace the roof and gutters"
	}
	newer := slices.Clone(props[:5]) // new versions of stored properties
	for i := range newer {
		newer[i].Version, newer[i].ParcelID = 2, fmt.Sprint("P-", i)
	}
	for _, tc := range []struct {
		name    string
		batches []readmodel.Batch
	}{
		{name: "kinds mixed", batches: []readmodel.Batch{
			{Permits: ps[:250], Properties: props[:20]}, // the geo indexes start, then wait for the next permits
			{Permits: slices.Concat(ps[250:500], unlinked), Properties: props[20:]},
			{Permits: slices.Concat(ps[500:600], changed[:50])},
			{Permits: changed[50:], Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: ps[7].PermitID, Version: 9}, {Kind: readmodel.KindProperty, ID: props[3].PropertyID, Version: 5}}},
		}},
		{name: "a snapshot's order", batches: []readmodel.Batch{ // the geo indexes are built beside the properties
			{Permits: ps[:300]},
			{Permits: slices.Concat(ps[300:600], unlinked)},
			{Permits: ps[595:600], Properties: props[:20]},
			{Properties: props[20:], Deletes: []readmodel.Delete{{Kind: readmodel.KindProperty, ID: props[3].PropertyID, Version: 5}}},
		}},
		{name: "properties in batches of their own", batches: []readmodel.Batch{
			{Permits: ps[:300]},
			{Properties: props[:15]},                         // after permits, which made some of their entries
			{Properties: slices.Concat(props[15:30], newer)}, // new versions: out of their address chains first
			{Permits: slices.Concat(ps[300:600], unlinked)},
			{Properties: props[30:]},
			{Deletes: []readmodel.Delete{{Kind: readmodel.KindProperty, ID: props[3].PropertyID, Version: 5}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer memory.SetPostingMin(20)()
			importMatchesApply(t, r, tc.batches, props)
		})
	}
}

func importMatchesApply(t *testing.T, r *rand.Rand, batches []readmodel.Batch, props []readmodel.Property) {
	imported := memory.New(memory.Params{})
	im := imported.NewImport()
	require.NoError(t, newStore(t).Export(context.Background(), 100, im.Add))
	for _, b := range batches {
		require.NoError(t, im.Add(b))
	}
	require.NoError(t, im.Commit())
	matchesApplied(t, r, batches, props, imported, "first side, at Commit")
}

// matchesApplied checks that imported, built from newStore's locations
// and batches otherwise than by Apply, holds what a store that applied
// them holds (documents, and text, filter, geometry, monthly and
// property reads): first as it is, then once settled and written to, so
// that its other side serves.
func matchesApplied(t *testing.T, r *rand.Rand, batches []readmodel.Batch, props []readmodel.Property, imported *memory.Store, first string) {
	ctx := context.Background()
	applied := newStore(t)
	for _, b := range batches {
		apply(t, applied, b)
	}
	same := func(msg string) {
		t.Helper()
		require.Equal(t, sortedExport(t, applied), sortedExport(t, imported), msg)
		for i, q := range queries {
			geo := []string{zipA, zipB, city, state}[i%4]
			pq := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 7, Filter: readmodel.PermitFilter{Text: q}}
			require.Equal(t, walk(t, applied, pq, nil), walk(t, imported, pq, nil), "%s: q %q", msg, q)
		}
		for i := range 60 {
			f := randomPermitFilter(r)
			lat, lon := 47.62, -122.33
			f.Near, f.RadiusM = &readmodel.GeoPoint{Lat: lat, Lon: lon}, 2000
			if i%2 == 0 {
				f = readmodel.PermitFilter{Statuses: f.Statuses}
			}
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef([]string{zipA, zipB, city, state}[i%4]), Limit: 9, Filter: f}
			require.Equal(t, walk(t, applied, q, nil), walk(t, imported, q, nil), "%s: filter %+v", msg, f)
		}
		for i, geo := range []string{zipA, zipB, city, state} {
			mq := readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(geo), FromDate: "2023-12-01", ToDate: "2024-05-31"}
			if i%2 == 1 {
				mq.Filter = readmodel.PermitFilter{Statuses: []string{"issued"}}
			}
			wm, err := applied.PermitMonthly(ctx, mq)
			require.NoError(t, err)
			gm, err := imported.PermitMonthly(ctx, mq)
			require.NoError(t, err)
			require.Equal(t, wm, gm, "%s: monthly %+v", msg, mq)
		}
		for _, p := range slices.Concat(props[:3], props[4:8]) { // props[3] is deleted
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(p.PropertyID), Limit: 50}
			require.Equal(t, walk(t, applied, q, nil), walk(t, imported, q, nil), "%s: property %s", msg, p.PropertyID)
		}
		for i, p := range props[:12] { // the address chains: exact, normalized and fuzzy matches
			for _, addr := range []string{p.CanonicalAddress, strings.ToUpper(p.NormalizedAddress), fmt.Sprintf("%d Pine", 100+i), fmt.Sprintf("%d Pin Street", 100+i)} {
				q := readmodel.PropertyQuery{Address: addr, City: "Seattle", Limit: 20}
				want, err := applied.SearchProperties(ctx, q)
				require.NoError(t, err)
				got, err := imported.SearchProperties(ctx, q)
				require.NoError(t, err)
				require.Equal(t, want, got, "%s: property search %q", msg, addr)
			}
		}
	}
	same(first)
	imported.Settle()
	// The second side becomes the active one with the next write.
	p := batches[0].Permits[11]
	p.Version = 50
	b := readmodel.Batch{Permits: []readmodel.Permit{p}}
	apply(t, applied, b)
	apply(t, imported, b)
	same("second side, settled")
}

// sortedExport is every document of s (exported), in a fixed order.
func sortedExport(t *testing.T, s *memory.Store) readmodel.Batch {
	t.Helper()
	all := exported(t, s)
	slices.SortFunc(all.Locations, func(a, b readmodel.Location) int { return cmp.Compare(a.GeoID, b.GeoID) })
	slices.SortFunc(all.Permits, func(a, b readmodel.Permit) int { return cmp.Compare(a.PermitID, b.PermitID) })
	slices.SortFunc(all.Properties, func(a, b readmodel.Property) int { return cmp.Compare(a.PropertyID, b.PropertyID) })
	slices.SortFunc(all.Deletes, func(a, b readmodel.Delete) int { return cmp.Compare(string(a.Kind)+a.ID, string(b.Kind)+b.ID) })
	return all
}

// permitsOnProperties is n filter permits (filterPermits) and nprops
// properties in one Seattle ZIP, every every-th permit on one of them.
func permitsOnProperties(r *rand.Rand, n, nprops, every int) ([]readmodel.Permit, []readmodel.Property) {
	ps := filterPermits(r, n)
	props := make([]readmodel.Property, nprops)
	for i := range props {
		props[i] = property(fmt.Sprintf("%d Pine Street", 100+i), "Seattle", "WA", "98101", 1)
	}
	for i := range ps {
		if i%every == 0 {
			ps[i].PropertyID = props[i%len(props)].PropertyID
		}
	}
	return ps, props
}
