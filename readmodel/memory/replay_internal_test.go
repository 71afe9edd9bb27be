package memory

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/resolve"
)

// After a replay the second side, built from the first's export, names
// every state as the first does for the stats cache (locGen and each
// anchor's version, an anchor whose leads are all deleted included) and
// answers stats and lead pages alike, before and after a later write.
func TestReplaySidesShareStatsKeys(t *testing.T) {
	ctx := context.Background()
	s := New(Params{})
	require.True(t, s.BeginReplay())
	locs := []readmodel.Location{
		{GeoID: "state:WA", GeoType: readmodel.GeoState, Name: "Washington", State: "WA", Version: 1},
		{GeoID: "city:a", GeoType: readmodel.GeoCity, Name: "Alpha", City: "Alpha", State: "WA", Version: 1},
		{GeoID: "city:b", GeoType: readmodel.GeoCity, Name: "Beta", City: "Beta", State: "WA", Version: 1},
	}
	leads := func(city string, n int, v int64) []readmodel.Lead {
		out := make([]readmodel.Lead, n)
		for i := range out {
			conf := float64(i%10) / 10
			out[i] = readmodel.Lead{
				LeadID: fmt.Sprintf("lead-%s-%03d", city, i), SignalKey: []string{"k1", "k2"}[i%2],
				EventDateUsed: time.Date(2025, 1, 1+i%60, 0, 0, 0, 0, time.UTC).Format(time.DateOnly),
				Confidence:    &conf,
				Location:      readmodel.LeadLocation{City: city, CityNorm: city, ZipcodeNorm: fmt.Sprint(98000 + i%5), CountyNorm: "king county"},
				GeoIDs:        []string{"state:WA", city}, Version: v,
			}
		}
		return out
	}
	write := func(b readmodel.Batch) {
		t.Helper()
		_, err := s.Apply(ctx, b)
		require.NoError(t, err)
	}
	write(readmodel.Batch{Locations: locs, Leads: leads("city:a", 40, 1)})
	write(readmodel.Batch{Leads: leads("city:a", 40, 2)}) // rewritten: versions move twice
	write(readmodel.Batch{Leads: leads("city:b", 10, 1)})
	var gone []readmodel.Delete
	for _, l := range leads("city:b", 10, 1) {
		gone = append(gone, readmodel.Delete{Kind: readmodel.KindLead, ID: l.LeadID, Version: 2})
	}
	write(readmodel.Batch{Deletes: gone}) // city:b has no lead left
	require.Positive(t, s.EndReplay())
	s.Settle()

	same := func(msg string) {
		t.Helper()
		for _, geo := range []string{"state:WA", "city:a", "city:b"} {
			q := readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(geo)}, Today: "2025-03-01", TopN: 5}
			require.Equal(t, s.sides[0].statsKey(q), s.sides[1].statsKey(q), "%s: %s", msg, geo)
			want, err := s.sides[0].PermitStats(ctx, q)
			require.NoError(t, err)
			got, err := s.sides[1].PermitStats(ctx, q)
			require.NoError(t, err)
			require.Equal(t, want, got, "%s: %s", msg, geo)
			for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
				lq := readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(geo)}, Sort: sort, Limit: 100}
				wl, err := s.sides[0].PermitLeads(ctx, lq)
				require.NoError(t, err)
				gl, err := s.sides[1].PermitLeads(ctx, lq)
				require.NoError(t, err)
				require.Equal(t, wl, gl, "%s: leads of %s by %s", msg, geo, sort)
			}
		}
	}
	same("settled")
	write(readmodel.Batch{Leads: leads("city:b", 3, 3)})
	s.Settle()
	write(readmodel.Batch{}) // the standby side catches up with the last write
	same("after a write")
}

// Export hands out leads in the date trees' order (dateLess: newest
// event date first, then confidence, then lead id), so a side built
// from it appends to its anchors' date trees.
func TestExportLeadsInDateOrder(t *testing.T) {
	ctx := context.Background()
	s := New(Params{})
	var leads []readmodel.Lead
	for i := range 300 {
		conf := float64(i%7) / 7
		l := readmodel.Lead{
			LeadID: fmt.Sprintf("lead-%03d", (i*37)%300), SignalKey: "k",
			Confidence: &conf, GeoIDs: []string{"state:WA"}, Version: 1,
		}
		if i%11 != 0 {
			l.EventDateUsed = time.Date(2025, 1, 1+(i*13)%90, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
		}
		leads = append(leads, l)
	}
	_, err := s.Apply(ctx, readmodel.Batch{Leads: leads})
	require.NoError(t, err)
	var got []*leadRec
	require.NoError(t, s.Export(ctx, 64, func(b readmodel.Batch) error {
		for _, l := range b.Leads {
			r := &leadRec{lead: l, date: parseDay(l.EventDateUsed)}
			if l.Confidence != nil {
				r.hasConf, r.conf = true, *l.Confidence
			}
			got = append(got, r)
		}
		return nil
	}))
	require.Len(t, got, len(leads))
	for i := 1; i < len(got); i++ {
		require.True(t, dateLess(got[i-1], got[i]), "lead %d (%s) after %s", i, got[i].lead.LeadID, got[i-1].lead.LeadID)
	}
}

// A replay's side does not yield while it is written (side.quiet: no
// reader sees it); a live write, and a write after EndReplay, yields
// every applyStep documents on each side.
func TestReplayWritesDoNotYield(t *testing.T) {
	ctx := context.Background()
	locs := func(v int64) []readmodel.Location {
		out := make([]readmodel.Location, 10*applyStep)
		for i := range out {
			out[i] = readmodel.Location{GeoID: fmt.Sprintf("city:c%04d", i), GeoType: readmodel.GeoCity, Name: "C", City: "C", State: "WA", Version: v}
		}
		return out
	}
	yields := func(s *Store) [2]int64 { return [2]int64{s.sides[0].yields.Load(), s.sides[1].yields.Load()} }
	s := New(Params{})
	require.True(t, s.BeginReplay())
	_, err := s.Apply(ctx, readmodel.Batch{Locations: locs(1)})
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 0}, yields(s), "a replay's writes")
	require.Positive(t, s.EndReplay())
	s.Settle()
	before := yields(s)
	_, err = s.Apply(ctx, readmodel.Batch{Locations: locs(2)})
	require.NoError(t, err)
	_, err = s.Apply(ctx, readmodel.Batch{}) // the other side catches up
	require.NoError(t, err)
	after := yields(s)
	require.Equal(t, [2]int64{10, 10}, [2]int64{after[0] - before[0], after[1] - before[1]}, "a write after the replay, on each side")

	live := New(Params{})
	_, err = live.Apply(ctx, readmodel.Batch{Locations: locs(1)})
	require.NoError(t, err)
	_, err = live.Apply(ctx, readmodel.Batch{})
	require.NoError(t, err)
	require.Equal(t, [2]int64{10, 10}, yields(live), "a live write, on each side")
}

// reservingResolver records the sizes Reserve was given.
type reservingResolver struct {
	Resolver
	sizes *[]int
	mu    *sync.Mutex
}

func (r reservingResolver) Reserve(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.sizes = append(*r.sizes, n)
}

// ReserveReplay, the second side's build after a replay and
// Import.Reserve size the resolver's index too (a resolver with Reserve,
// as resolve.Index has), through a bulk resolver's wrapping.
func TestReserveSizesTheResolver(t *testing.T) {
	var sizes []int
	var mu sync.Mutex
	s := New(Params{NewResolver: func() Resolver {
		return reservingResolver{Resolver: resolve.New(), sizes: &sizes, mu: &mu}
	}})
	require.True(t, s.BeginReplay())
	require.True(t, s.ReserveReplay(map[readmodel.Kind]int64{readmodel.KindLocation: 5000, readmodel.KindPermit: 10}))
	mu.Lock()
	require.Equal(t, []int{5000}, sizes, "the replay's side")
	sizes = nil
	mu.Unlock()
	_, err := s.Apply(context.Background(), readmodel.Batch{Locations: []readmodel.Location{
		{GeoID: "state:WA", GeoType: readmodel.GeoState, Name: "Washington", State: "WA", Version: 1},
		{GeoID: "city:a", GeoType: readmodel.GeoCity, Name: "Alpha", City: "Alpha", State: "WA", Version: 1},
	}})
	require.NoError(t, err)
	require.Positive(t, s.EndReplay())
	s.Settle()
	mu.Lock()
	require.Equal(t, []int{2}, sizes, "the second side, built from the replayed one")
	sizes = nil
	mu.Unlock()

	im := New(Params{NewResolver: func() Resolver {
		return reservingResolver{Resolver: resolve.New(), sizes: &sizes, mu: &mu}
	}}).NewImport()
	im.Reserve(map[readmodel.Kind]int64{readmodel.KindLocation: 700})
	require.NoError(t, im.Add(readmodel.Batch{Locations: []readmodel.Location{{GeoID: "state:WA", GeoType: readmodel.GeoState, Name: "Washington", State: "WA", Version: 1}}}))
	require.NoError(t, im.Commit()) // the builder waited for Reserve
	mu.Lock()
	require.NotEmpty(t, sizes, "an Import's first side")
	require.Equal(t, 700, sizes[0], "an Import's first side")
	mu.Unlock()
}
