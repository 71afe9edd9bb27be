package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
)

// An Import, and a replay, index their locations for the resolver in
// the background once the side is filled (resolver_late.go): after
// Commit or EndReplay the candidates are the ones a store written with
// Apply gives, with the upserts, deletes and newer versions applied in
// their order, on the first side and on the second.
func TestImportBuildsTheResolver(t *testing.T) {
	for _, replay := range []bool{false, true} {
		t.Run(map[bool]string{false: "import", true: "replay"}[replay], func(t *testing.T) { buildsTheResolver(t, replay) })
	}
}

func buildsTheResolver(t *testing.T, replay bool) {
	ctx := context.Background()
	newStore := func() *memory.Store {
		return memory.New(memory.Params{NewResolver: func() memory.Resolver { return resolve.New() }})
	}
	city := func(name string, v int64) readmodel.Location {
		return readmodel.Location{GeoID: "city:wa:" + name, GeoType: readmodel.GeoCity, Name: name, DisplayName: name + ", WA",
			State: "WA", StateName: "Washington", City: name, Lat: 47, Lon: -122, Version: v}
	}
	var many []readmodel.Location
	for i := range 300 { // more than a batch of them
		many = append(many, city(fmt.Sprint("Placeville ", i), 1))
	}
	spokaneValley := city("Spokane", 2)
	spokaneValley.Name, spokaneValley.DisplayName = "Spokane Valley", "Spokane Valley, WA"
	batches := []readmodel.Batch{
		{Locations: append([]readmodel.Location{city("Seattle", 1), city("Tacoma", 1), city("Spokane", 1)}, many...)},
		{Deletes: []readmodel.Delete{{Kind: readmodel.KindLocation, ID: "city:wa:Tacoma", Version: 2}}},
		{Locations: []readmodel.Location{spokaneValley, city("Seattle", 1)}}, // a newer version; a stale one
	}
	applied := newStore()
	for _, b := range batches {
		apply(t, applied, b)
	}
	imported := newStore()
	if replay {
		require.True(t, imported.BeginReplay())
		for _, b := range batches {
			apply(t, imported, b)
		}
		require.Equal(t, len(batches), imported.EndReplay())
	} else {
		im := imported.NewImport()
		for _, b := range batches {
			require.NoError(t, im.Add(b))
		}
		require.NoError(t, im.Commit())
	}
	same := func(msg string) {
		t.Helper()
		for _, q := range []string{"Seattle", "Tacoma", "Spokane", "Spokane Valley", "Placeville 7", "Placevile 299"} {
			rq := readmodel.ResolveQuery{Text: q, Limit: 5}
			want, err := applied.ResolveCandidates(ctx, rq)
			require.NoError(t, err)
			got, err := imported.ResolveCandidates(ctx, rq)
			require.NoError(t, err)
			require.Equal(t, want, got, "%s: %q", msg, q)
		}
	}
	same("the first side")
	want, err := applied.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "Spokane Valley", Limit: 1})
	require.NoError(t, err)
	require.Len(t, want, 1)
	require.Equal(t, "city:wa:Spokane", want[0].Location.GeoID)
	imported.Settle()
	b := readmodel.Batch{Locations: []readmodel.Location{city("Olympia", 1)}}
	apply(t, applied, b)
	apply(t, imported, b) // the second side becomes the readers'
	same("the second side, after a write")
}

// TestSettleWarmsTheResolvers: a replay and an Import leave the
// resolver's two-typo lookups (resolve.Index.Warm) to the background,
// after the readers' side is ready: the readers' side's resolver is
// warmed before the second side is built (readyForReaders, held here),
// and both sides' resolvers have them once settled: no search pays for
// them.
func TestSettleWarmsTheResolvers(t *testing.T) {
	for _, replay := range []bool{false, true} {
		t.Run(map[bool]string{false: "import", true: "replay"}[replay], func(t *testing.T) {
			release := make(chan struct{})
			defer memory.HoldStandby(func() { <-release })()
			var mu sync.Mutex
			var made []*resolve.Index
			s := memory.New(memory.Params{NewResolver: func() memory.Resolver {
				x := resolve.New()
				mu.Lock()
				made = append(made, x)
				mu.Unlock()
				return x
			}})
			b := readmodel.Batch{Locations: []readmodel.Location{{GeoID: "city:wa:wenatchee", GeoType: readmodel.GeoCity, Name: "Wenatchee",
				DisplayName: "Wenatchee, WA", State: "WA", City: "Wenatchee", Version: 1}}}
			if replay {
				require.True(t, s.BeginReplay())
				apply(t, s, b)
				require.Equal(t, 1, s.EndReplay())
			} else {
				im := s.NewImport()
				require.NoError(t, im.Add(b))
				require.NoError(t, im.Commit())
			}
			// holding counts the resolvers holding the location, and
			// those of them warmed.
			holding := func() (n, warmed int) {
				mu.Lock()
				defer mu.Unlock()
				for _, x := range made {
					if x.Len() > 0 {
						n++
						if x.Warmed() {
							warmed++
						}
					}
				}
				return n, warmed
			}
			require.Eventually(t, func() bool { _, w := holding(); return w == 1 }, 10*time.Second, time.Millisecond,
				"the readers' side's resolver, warmed before the second side's build")
			require.True(t, s.SecondSideBuilding())
			close(release)
			s.Settle()
			n, warmed := holding()
			require.Equal(t, 2, n, "the sides' resolvers holding the location")
			require.Equal(t, 2, warmed, "both warmed, once settled")
		})
	}
}

// TestWarmResolvers: a Store filled with Apply (no second side's build)
// warms both sides' resolvers when asked.
func TestWarmResolvers(t *testing.T) {
	var made []*resolve.Index
	s := memory.New(memory.Params{NewResolver: func() memory.Resolver {
		x := resolve.New()
		made = append(made, x)
		return x
	}})
	apply(t, s, readmodel.Batch{Locations: []readmodel.Location{{GeoID: "city:wa:wenatchee", GeoType: readmodel.GeoCity, Name: "Wenatchee",
		DisplayName: "Wenatchee, WA", State: "WA", City: "Wenatchee", Version: 1}}})
	require.Len(t, made, 2)
	for _, x := range made {
		require.False(t, x.Warmed(), "warmed by Apply")
	}
	s.WarmResolvers()
	for _, x := range made {
		require.True(t, x.Warmed())
	}
}
