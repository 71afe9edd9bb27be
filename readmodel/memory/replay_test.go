package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// applyBase applies newStore's state to s, in the batches of its export
// (a replay's first writes).
func applyBase(t *testing.T, s *memory.Store) {
	t.Helper()
	require.NoError(t, newStore(t).Export(context.Background(), 100, func(b readmodel.Batch) error {
		_, err := s.Apply(context.Background(), b)
		return err
	}))
}

// A replay writes one side first: readers see nothing of it until
// EndReplay, then the whole replayed state, and once settled the other
// side (built from the first's export) serves the same answers. Each
// Apply's result is the one a store that applied the batches reports.
// The reads of the first side run while the second builds (-race).
func TestConcurrentReplayMatchesApply(t *testing.T) {
	defer memory.SetPostingMin(20)()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(21, 22))
	ps, props := permitsOnProperties(r, 600, 40, 3)
	unlinked := slices.Clone(ps[500:540]) // then re-linked at the same version
	for i := range unlinked {
		unlinked[i].GeoLinks = unlinked[i].GeoLinks[1:]
	}
	changed := slices.Clone(ps[:100])
	for i := range changed {
		changed[i].Version = 2
		changed[i].Status, changed[i].RawDescription = "Expired", "Replace the roof and gutters"
	}
	batches := []readmodel.Batch{
		{Permits: slices.Concat(unlinked, ps[:250]), Properties: props[:20]},
		{Permits: ps[250:400]},
		{Permits: ps[400:600], Properties: props[20:]},
		{Permits: slices.Concat(changed[:50], ps[:10])}, // ps[:10] stale
		{Permits: changed[50:], Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: ps[7].PermitID, Version: 9}, {Kind: readmodel.KindProperty, ID: props[3].PropertyID, Version: 5}}},
	}

	reference := newStore(t)
	replayed := memory.New(memory.Params{})
	require.True(t, replayed.BeginReplay())
	require.False(t, replayed.BeginReplay(), "one replay at a time")
	applyBase(t, replayed)
	// Concurrent calls share steps (group commit): each still gets its
	// own batch's result.
	var wg sync.WaitGroup
	got := make([]readmodel.ApplyResult, len(batches))
	got[0] = apply(t, replayed, batches[0])
	for i, b := range batches[1:3] { // no id in common
		wg.Go(func() { got[1+i] = apply(t, replayed, b) })
	}
	wg.Wait()
	for i, b := range batches[3:] {
		got[3+i] = apply(t, replayed, b)
	}
	for i, b := range batches {
		require.Equal(t, apply(t, reference, b), got[i], "batch %d's result", i)
	}
	counts, err := replayed.Counts(ctx)
	require.NoError(t, err)
	for k, n := range counts {
		require.Zero(t, n, "readers see %s documents before EndReplay", k)
	}
	_, seq := replayed.ReadVersion()

	require.False(t, replayed.ReplayDefersGeoIndexes(), "a newer version ended the deferral")
	require.Equal(t, 1+len(batches), replayed.EndReplay())
	require.Zero(t, replayed.EndReplay(), "ended once")
	_, after := replayed.ReadVersion()
	require.Greater(t, after, seq, "EndReplay is a new version for readers")
	matchesApplied(t, r, batches, props, replayed, "replayed side, at EndReplay")
}

// A replay of one version per permit (a compacted log's) keeps the
// permit geo indexes deferred to EndReplay, which builds them from
// permits that came in any order; answers are Apply's, on the replayed
// side and on the second one. A later newer version, re-link or delete
// is Apply's path (TestConcurrentReplayMatchesApply ends the deferral
// mid-replay with one).
func TestReplayBuildsDeferredGeoIndexesAtTheEnd(t *testing.T) {
	defer memory.SetPostingMin(20)()
	r := rand.New(rand.NewPCG(23, 24))
	ps, props := permitsOnProperties(r, 700, 30, 4)
	r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	var batches []readmodel.Batch
	for lo := 0; lo < len(ps); lo += 90 {
		batches = append(batches, readmodel.Batch{Permits: ps[lo:min(lo+90, len(ps))]})
	}
	batches[0].Properties, batches[len(batches)-1].Properties = props[:15], props[15:]

	replayed := memory.New(memory.Params{})
	require.True(t, replayed.BeginReplay())
	applyBase(t, replayed)
	for _, b := range batches {
		apply(t, replayed, b)
	}
	require.True(t, replayed.ReplayDefersGeoIndexes(), "no permit left its geos: the indexes wait for EndReplay")
	require.Equal(t, 1+len(batches), replayed.EndReplay())
	require.False(t, replayed.ReplayDefersGeoIndexes())
	matchesApplied(t, r, batches, props, replayed, "replayed side, deferred to EndReplay")
}

// A permit deleted during a replay, while the replay still defers the
// geo indexes, is not in them once the replayed side is completed: the
// delete ends the deferral by building the permit sets alone (the side
// is lean) and takes the permit out of them, so the lists that build
// left, which still hold it, are not the sets' any more and must not be
// what the side's derived indexes are built from at settle. (They were:
// the deleted permit stayed in the month stats and the valuation order,
// whose build then met its released slot, a nil pointer, on a tie.)
func TestReplayDeleteLeavesTheLeanListsBehind(t *testing.T) {
	defer memory.SetPostingMin(2)()
	ctx := context.Background()
	s := memory.New(memory.Params{})
	require.True(t, s.BeginReplay())
	applyBase(t, s)
	a, b, c := permit("a", "2024-02-01", zipA, 1), permit("b", "2024-02-03", zipA, 1), permit("c", "2024-02-05", zipA, 1)
	tie := 1000.5 // valuations off the blocks' whole numbers go to a tree that compares ids on ties
	a.Valuation, b.Valuation = &tie, &tie
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{a, b}})
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{c}, Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: a.PermitID, Version: 2}}})
	s.EndReplay()
	s.Settle()
	// Both sides settled, then written; each side is read once.
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{permit("d", "2024-03-01", zipB, 1)}})
	for range 2 {
		months, err := s.PermitMonthly(ctx, readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(zipA), FromDate: "2024-02-01", ToDate: "2024-02-29"})
		require.NoError(t, err)
		require.Len(t, months, 1)
		require.Equal(t, int64(2), months[0].Count, "b and c; a is deleted")
		got := walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zipA), Limit: 5, Sort: readmodel.SortValuationDesc}, nil)
		require.Equal(t, []string{b.PermitID, c.PermitID}, got)
		got = walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zipA), Desc: true, Limit: 5, Filter: readmodel.PermitFilter{Statuses: []string{"issued"}}}, nil)
		require.Equal(t, []string{c.PermitID, b.PermitID}, got)
		apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{permit("e", "2023-01-01", zipB, 1)}})
	}
}

// ReserveReplay sizes an open replay's empty tables and leaves what the
// replay wrote: a replay sized after its first writes (the locations)
// ends as one that was not sized, and as Apply.
func TestReserveReplay(t *testing.T) {
	defer memory.SetPostingMin(20)()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(25, 26))
	ps, props := permitsOnProperties(r, 400, 30, 3)
	batches := []readmodel.Batch{{Permits: ps[:200], Properties: props[:10]}, {Permits: ps[200:], Properties: props[10:]}}

	s := memory.New(memory.Params{})
	require.False(t, s.ReserveReplay(map[readmodel.Kind]int64{readmodel.KindPermit: 400}), "no replay open")
	require.True(t, s.BeginReplay())
	applyBase(t, s)
	base, err := newStore(t).Counts(ctx)
	require.NoError(t, err)
	require.Positive(t, base[readmodel.KindLocation])
	require.True(t, s.ReserveReplay(map[readmodel.Kind]int64{
		readmodel.KindLocation: 5000, readmodel.KindPermit: 400, readmodel.KindProperty: 30,
		readmodel.KindLead: 1000, readmodel.KindGeoSignal: 100, readmodel.KindCatalog: 10,
	}))
	for _, b := range batches {
		apply(t, s, b)
	}
	s.EndReplay()
	counts, err := s.Counts(ctx)
	require.NoError(t, err)
	require.Equal(t, base[readmodel.KindLocation], counts[readmodel.KindLocation], "the locations written before it are kept")

	plain := memory.New(memory.Params{})
	require.True(t, plain.BeginReplay())
	applyBase(t, plain)
	for _, b := range batches {
		apply(t, plain, b)
	}
	plain.EndReplay()
	want, err := plain.Digest(ctx)
	require.NoError(t, err)
	got, err := s.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got, "sized or not, the same state")
	matchesApplied(t, r, batches, props, s, "a replay sized after its locations")
}

// A replay begins only into an empty store: no document, no tombstone.
func TestReplayOnlyIntoAnEmptyStore(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Params{})
	_, err := s.Apply(ctx, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "t:1", Version: 3}}})
	require.NoError(t, err)
	require.False(t, s.BeginReplay(), "a tombstone is state")
	require.False(t, newStore(t).BeginReplay())

	// Ended with nothing written: still empty, and a new replay may begin.
	s = memory.New(memory.Params{})
	require.True(t, s.BeginReplay())
	require.Zero(t, s.EndReplay())
	require.True(t, s.BeginReplay())
}

// After an Import (a restart from a snapshot) BeginReplay answers no at
// once, while the Import's second side is still being built: serve
// starts its consumer after it, and with nothing to replay is ready
// with the first side (the first write waits for the second).
func TestBeginReplayDoesNotWaitForAnImportsSecondSide(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	defer memory.HoldStandby(func() { <-release })()
	s := memory.New(memory.Params{})
	im := s.NewImport()
	require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
	require.NoError(t, im.Commit())

	began := make(chan bool, 1)
	go func() { began <- s.BeginReplay() }()
	select {
	case ok := <-began:
		require.False(t, ok, "the store holds the imported state")
	case <-time.After(time.Minute): // held: BeginReplay waits for the release
		close(release)
		t.Fatal("BeginReplay waited for the Import's second side")
	}
	close(release)
	s.Settle()
	want, err := newStore(t).Digest(ctx)
	require.NoError(t, err)
	got, err := s.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got, "the imported state")
	require.False(t, s.BeginReplay())
}

// Export and NewImport end an open replay first: a snapshot taken
// before the consumer caught up (at shutdown) holds what was applied,
// and an Import's journal starts from the readers' state.
func TestReplayEndsBeforeExportAndImport(t *testing.T) {
	ctx := context.Background()
	want, err := newStore(t).Digest(ctx)
	require.NoError(t, err)

	s := memory.New(memory.Params{})
	require.True(t, s.BeginReplay())
	applyBase(t, s)
	var n int
	require.NoError(t, s.Export(ctx, 100, func(b readmodel.Batch) error {
		n += b.Len()
		return nil
	}))
	require.Equal(t, 4, n, "the export holds the replayed locations")
	got, err := s.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got)
	// The export ended the replay, whose second side builds in the
	// background: done here, not in the next test (which changes what it
	// reads, SetParallelKeys).
	s.Settle()

	s = memory.New(memory.Params{})
	require.True(t, s.BeginReplay())
	apply(t, s, readmodel.Batch{Locations: lrLocations()})
	im := s.NewImport()
	require.NoError(t, im.Add(readmodel.Batch{Permits: filterPermits(rand.New(rand.NewPCG(1, 2)), 5)}))
	require.NoError(t, im.Commit())
	s.Settle()
	counts, err := s.Counts(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 5, counts[readmodel.KindPermit])
}

// A replay's side leaves its leads' keys unbuilt (lead_bulk.go) through
// rewrites that leave every lead where it was, and a lead that moves
// builds the keys it leaves, only those; either way every lead page and
// stats answer is a store's that built every key as it wrote
// (BuildLeadKeysEagerly), on the replayed side, on the second side once
// settled and on the replayed one after a write. A read builds the keys
// it reads, first reads at once build each once, and settle leaves the
// unread keys of both sides to their readers.
func TestReplayDefersLeadTrees(t *testing.T) {
	defer memory.SetParallelKeys(2)() // the keys' trees built by two goroutines (-race)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(25, 26))
	ids := r.Perm(500)
	fresh := []readmodel.Batch{{Locations: leadLocations()}}
	for lo := 0; lo < len(ids); lo += 70 {
		var b readmodel.Batch
		for _, i := range ids[lo:min(lo+70, len(ids))] {
			b.Leads = append(b.Leads, testLead(i, 1, 0))
		}
		fresh = append(fresh, b)
	}
	var rewritten, moved readmodel.Batch // same place, version 2; another day, version 3
	for i := range 60 {
		rewritten.Leads = append(rewritten.Leads, testLead(i*7, 2, 0))
		moved.Leads = append(moved.Leads, testLead(i*5+1, 3, 17))
	}
	moved.Deletes = []readmodel.Delete{{Kind: readmodel.KindLead, ID: "lead-0003", Version: 9}}

	for _, tc := range []struct {
		name     string
		batches  []readmodel.Batch
		deferred bool
	}{
		{"to the end", append(slices.Clone(fresh), rewritten), true},
		{"ended by a move", append(slices.Clone(fresh), rewritten, moved), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			defer memory.HoldStandby(func() { <-release })() // the replayed side serves until Settle
			applied := memory.New(memory.Params{})
			applied.BuildLeadKeysEagerly()
			replayed := memory.New(memory.Params{})
			require.True(t, replayed.BeginReplay())
			for _, b := range tc.batches {
				apply(t, applied, b)
				apply(t, replayed, b)
			}
			require.True(t, replayed.ReplayDefersLeadTrees(), "until EndReplay, a move too")
			require.Positive(t, replayed.EndReplay())
			left, _ := replayed.LeadKeysLeft()
			if tc.deferred {
				require.Equal(t, replayed.LeadKeyCount(), left, "the trees are left to their readers")
			} else {
				require.Positive(t, left, "zip:98101's keys: no lead left them")
				require.Less(t, left, replayed.LeadKeyCount(), "the move built the keys it left")
			}
			if tc.deferred {
				// A read builds the keys it reads, and only those; first
				// reads of the same keys at once build each once (-race).
				q := readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("city:a")}, Sort: readmodel.SortEventDateDesc, Limit: 5}
				require.Equal(t, walkLeads(t, applied, q), walkLeads(t, replayed, q))
				after, _ := replayed.LeadKeysLeft()
				require.Less(t, after, left, "city:a's keys, built")
				require.Positive(t, after, "the other geos' keys, still left")
				q.Filter.Geo = readmodel.ParseGeoRef("state:WA")
				want := walkLeads(t, applied, q)
				got := make([]readmodel.LeadPage, 4)
				errs := make([]error, len(got))
				var wg sync.WaitGroup
				for i := range got {
					wg.Go(func() { got[i], errs[i] = replayed.PermitLeads(ctx, q) })
				}
				wg.Wait()
				for i, p := range got {
					require.NoError(t, errs[i])
					require.Equal(t, want[:q.Limit], p.Leads)
				}
			}
			sameLeads(t, applied, replayed, "replayed side", leadGeos[:3]...) // zip:98101's keys left unread
			close(release)
			replayed.Settle()
			active, standby := replayed.LeadKeysLeft()
			require.Equal(t, standby, active, "the second side built the keys read on the first (buildLike), only those")
			require.Positive(t, standby, "zip:98101's keys, unread on the replayed side")
			sameLeads(t, applied, replayed, "settled", leadGeos...)
			b := readmodel.Batch{Leads: []readmodel.Lead{testLead(2, 5, 40)}}
			apply(t, applied, b)
			apply(t, replayed, b) // the replayed side, completed, serves now
			sameLeads(t, applied, replayed, "after a write", leadGeos...)
		})
	}
}

// The keys of an anchor of leadBuildMin records or more are built
// without a reader (lead_bulk.go): on the live path by the write that
// reaches the size, and after a replay on the readers' side first, then
// on the second side by its build, before settle; smaller anchors' keys
// wait for their readers. The answers are a store's that builds every key as it writes.
func TestLargeLeadKeysBuiltWithoutReaders(t *testing.T) {
	defer memory.SetLeadBuildMin(100)()
	release := make(chan struct{})
	defer memory.HoldStandby(func() { <-release })()
	// testLead(i) for i < 300: state:WA holds 300 records in three keys,
	// city:a and city:b 150 each, zip:98101 60.
	b := readmodel.Batch{Locations: leadLocations()}
	for i := range 300 {
		b.Leads = append(b.Leads, testLead(i, 1, 0))
	}
	applied := memory.New(memory.Params{})
	applied.BuildLeadKeysEagerly()
	live := memory.New(memory.Params{})
	replayed := memory.New(memory.Params{})
	require.True(t, replayed.BeginReplay())
	for _, s := range []*memory.Store{applied, live, replayed} {
		apply(t, s, b)
	}
	left, _ := live.LeadKeysLeft()
	require.Equal(t, 12, live.LeadKeyCount())
	require.Equal(t, 3, left, "zip:98101's keys wait for a reader, the others were built by the write")
	sameLeads(t, applied, live, "live", leadGeos...)

	require.Positive(t, replayed.EndReplay())
	// The readers' side builds its large anchors' keys in the background
	// first, before the second side's build starts (held here).
	require.Eventually(t, func() bool { left, _ := replayed.LeadKeysLeft(); return left == 3 }, 10*time.Second, time.Millisecond,
		"the replayed side's large keys, built before the second side's build")
	require.True(t, replayed.SecondSideBuilding())
	close(release)
	replayed.Settle()
	active, standby := replayed.LeadKeysLeft()
	require.Equal(t, 3, active, "the second side built its large keys")
	require.Equal(t, 3, standby, "and the replayed side's")
	sameLeads(t, applied, replayed, "settled", leadGeos...)
	newKey := testLead(701, 1, 0) // state:WA and city:b, no zip
	newKey.SignalKey = "k4"
	move := readmodel.Batch{Leads: []readmodel.Lead{testLead(2, 5, 40), testLead(700, 1, 0), newKey}}
	for _, s := range []*memory.Store{applied, live, replayed} {
		apply(t, s, move)
	}
	left, _ = live.LeadKeysLeft()
	require.Equal(t, 14, live.LeadKeyCount())
	require.Equal(t, 3, left, "a new key of a large anchor is built as it is made")
	sameLeads(t, applied, replayed, "after a write", leadGeos...)
	sameLeads(t, applied, live, "live, after a write", leadGeos...)
}

// leadGeos are the anchors of testLead's leads.
var leadGeos = []string{"state:WA", "city:a", "city:b", "zip:98101"}

// leadLocations are leadGeos' locations.
func leadLocations() []readmodel.Location {
	return []readmodel.Location{
		{GeoID: "state:WA", GeoType: readmodel.GeoState, Name: "Washington", State: "WA", Version: 1},
		{GeoID: "city:a", GeoType: readmodel.GeoCity, Name: "Alpha", City: "Alpha", State: "WA", Version: 1},
		{GeoID: "city:b", GeoType: readmodel.GeoCity, Name: "Beta", City: "Beta", State: "WA", Version: 1},
		{GeoID: "zip:98101", GeoType: readmodel.GeoZip, Name: "98101", Zipcode: "98101", State: "WA", Version: 1},
	}
}

// testLead is lead i at version v, its date moved by shift days: one of
// three signal keys, anchored to the state, one of two cities and every
// fifth to the ZIP, with a null confidence or date now and then.
func testLead(i int, v int64, shift int) readmodel.Lead {
	l := readmodel.Lead{
		LeadID: fmt.Sprintf("lead-%04d", i), SignalKey: []string{"k1", "k2", "k3"}[i%3],
		Location: readmodel.LeadLocation{CityNorm: []string{"alpha", "beta"}[i%2], ZipcodeNorm: "98101", CountyNorm: "king county"},
		GeoIDs:   []string{"state:WA", leadGeos[1+i%2]}, Version: v,
	}
	if i%5 == 0 {
		l.GeoIDs = append(l.GeoIDs, "zip:98101")
	}
	if i%9 != 0 {
		conf := float64((i*7)%10) / 10
		l.Confidence = &conf
	}
	if i%13 != 0 {
		l.EventDateUsed = time.Date(2025, 1, 1+(i*31+shift)%120, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	}
	return l
}

// sameLeads requires got to answer every lead page (by date and by
// confidence) and stats query of geos as want does.
func sameLeads(t *testing.T, want, got *memory.Store, msg string, geos ...string) {
	t.Helper()
	ctx := context.Background()
	for _, geo := range geos {
		for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
			q := readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(geo)}, Sort: sort, Limit: 37}
			require.Equal(t, walkLeads(t, want, q), walkLeads(t, got, q), "%s: leads of %s by %s", msg, geo, sort)
		}
		sq := readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(geo)}, Today: "2025-04-01", TopN: 5}
		ws, err := want.PermitStats(ctx, sq)
		require.NoError(t, err)
		gs, err := got.PermitStats(ctx, sq)
		require.NoError(t, err)
		require.Equal(t, ws, gs, "%s: stats of %s", msg, geo)
	}
}

// walkLeads is every lead q's pages hold, page by page.
func walkLeads(t *testing.T, s *memory.Store, q readmodel.LeadQuery) []readmodel.Lead {
	t.Helper()
	var out []readmodel.Lead
	for {
		p, err := s.PermitLeads(context.Background(), q)
		require.NoError(t, err)
		out = append(out, p.Leads...)
		if p.Next == nil {
			return out
		}
		q.After = p.Next
	}
}

// A replay's Apply shares the caller's permits and properties while it
// runs (the side keeps compact forms only), and nothing of them after:
// here every permit, property and link of each batch is overwritten
// right after its Apply returns (scribble, import_lent_test.go), and the
// replayed store (the replayed side, then the second one built from it)
// holds and answers what a store given untouched batches does.
func TestReplayKeepsNothingOfTheCallersBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	ps, props := permitsOnProperties(r, 300, 30, 2)
	batches := []readmodel.Batch{
		{Permits: ps[:120], Properties: props[:10]},
		{Permits: ps[120:300], Properties: props[10:]},
	}
	replayed := memory.New(memory.Params{})
	require.True(t, replayed.BeginReplay())
	applyBase(t, replayed)
	for _, b := range batches {
		lent := deepCopy(b)
		apply(t, replayed, lent)
		scribble(&lent)
	}
	replayed.EndReplay()
	matchesApplied(t, r, batches, props, replayed, "replayed side")
}
