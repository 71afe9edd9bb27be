package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// The resolver's index is made to size (a resolver with Reserve, as
// resolve.Index has): a replay's side's and an Import's first side's
// when their late build starts (resolver_late.go), for the live
// locations they hold, not for ReserveReplay's or Import.Reserve's
// counts; the second side after a replay for the replayed side's live
// locations; an Import's second side for Import.Reserve's.
func TestReserveSizesTheResolver(t *testing.T) {
	var sizes []int
	var mu sync.Mutex
	taken := func() []int {
		mu.Lock()
		defer mu.Unlock()
		out := sizes
		sizes = nil
		return out
	}
	s := New(Params{NewResolver: func() Resolver {
		return reservingResolver{Resolver: resolve.New(), sizes: &sizes, mu: &mu}
	}})
	require.True(t, s.BeginReplay())
	require.True(t, s.ReserveReplay(map[readmodel.Kind]int64{readmodel.KindLocation: 5000, readmodel.KindPermit: 10}))
	require.Empty(t, taken(), "the replay's side: sized when built, not from the backlog")
	_, err := s.Apply(context.Background(), readmodel.Batch{Locations: []readmodel.Location{
		{GeoID: "state:WA", GeoType: readmodel.GeoState, Name: "Washington", State: "WA", Version: 1},
		{GeoID: "city:a", GeoType: readmodel.GeoCity, Name: "Alpha", City: "Alpha", State: "WA", Version: 1},
		{GeoID: "city:b", GeoType: readmodel.GeoCity, Name: "Beta", City: "Beta", State: "WA", Version: 1},
	}, Deletes: []readmodel.Delete{{Kind: readmodel.KindLocation, ID: "city:b", Version: 2}}})
	require.NoError(t, err)
	require.Positive(t, s.EndReplay())
	s.Settle()
	require.Equal(t, []int{2, 2}, taken(), "the replayed side's late build and the second side, both for its two live locations")

	im := New(Params{NewResolver: func() Resolver {
		return reservingResolver{Resolver: resolve.New(), sizes: &sizes, mu: &mu}
	}}).NewImport()
	im.Reserve(map[readmodel.Kind]int64{readmodel.KindLocation: 700})
	require.NoError(t, im.Add(readmodel.Batch{Locations: []readmodel.Location{{GeoID: "state:WA", GeoType: readmodel.GeoState, Name: "Washington", State: "WA", Version: 1}}}))
	require.NoError(t, im.Commit()) // the builder waited for Reserve
	im.s.Settle()
	require.ElementsMatch(t, []int{1, 700}, taken(), "an Import's first side when built (its one location), its second side from Reserve")
}

// countingResolver counts the Upserts and Deletes it is given, and holds
// the first Upsert of hold (when set) until release is closed.
type countingResolver struct {
	Resolver
	upserts, deletes *atomic.Int64
	hold             string
	held             *atomic.Bool
	release          chan struct{}
}

func (r countingResolver) Upsert(l readmodel.Location) {
	if r.hold != "" && l.GeoID == r.hold && r.held.CompareAndSwap(false, true) {
		<-r.release
	}
	r.upserts.Add(1)
	r.Resolver.Upsert(l)
}

func (r countingResolver) Delete(geoID string) {
	r.deletes.Add(1)
	r.Resolver.Delete(geoID)
}

// A replay's side's place index is built from its live locations once the
// replay ends, not as they arrive: nothing reaches a resolver during the
// replay, then each live location once (not its older versions, not a
// deleted one), and the side answers place searches as one written
// location by location would, before and after the second side is in
// place.
func TestLateResolverBuildsTheReplayedLocations(t *testing.T) {
	ctx := context.Background()
	s := New(Params{NewResolver: func() Resolver {
		return countingResolver{Resolver: resolve.New(), upserts: new(atomic.Int64), deletes: new(atomic.Int64)}
	}})
	direct := New(Params{NewResolver: func() Resolver { return resolve.New() }})
	replayed := s.sides[1-s.active.Load()]
	counts := func(d *side) (upserts, deletes int64) {
		r := d.resolver
		if l, ok := r.(*lateResolver); ok {
			r = l.r
		}
		c := r.(countingResolver)
		return c.upserts.Load(), c.deletes.Load()
	}
	require.True(t, s.BeginReplay())
	batches := []readmodel.Batch{
		{Locations: []readmodel.Location{
			{GeoID: "state:WA", GeoType: readmodel.GeoState, Name: "Washington", State: "WA", Version: 1},
			{GeoID: "city:a", GeoType: readmodel.GeoCity, Name: "Alpha", City: "Alpha", State: "WA", Version: 1},
			{GeoID: "city:b", GeoType: readmodel.GeoCity, Name: "Bravo", City: "Bravo", State: "WA", Version: 1},
			{GeoID: "city:c", GeoType: readmodel.GeoCity, Name: "Charlie", City: "Charlie", State: "WA", Version: 1},
		}},
		{
			Locations: []readmodel.Location{{GeoID: "city:a", GeoType: readmodel.GeoCity, Name: "Alphaville", City: "Alphaville", State: "WA", Version: 2}},
			Deletes:   []readmodel.Delete{{Kind: readmodel.KindLocation, ID: "city:b", Version: 2}},
		},
	}
	for _, b := range batches {
		_, err := s.Apply(ctx, b)
		require.NoError(t, err)
		_, err = direct.Apply(ctx, b)
		require.NoError(t, err)
	}
	u, d := counts(replayed)
	require.Zero(t, u+d, "no resolver is written during the replay")
	require.Positive(t, s.EndReplay())
	search := func(st *Store, text string) []string {
		cs, err := st.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: text, Limit: 20})
		require.NoError(t, err)
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.Location.GeoID)
		}
		return ids
	}
	texts := []string{"Alphaville", "Alpha", "Bravo", "Charlie", "Washington", "Charlie WA"}
	for _, text := range texts { // the replayed side, its index built late
		require.Equal(t, search(direct, text), search(s, text), text)
	}
	require.Equal(t, []string{"city:a"}, search(s, "Alphaville"))
	require.Empty(t, search(s, "Bravo"), "a deleted location")
	u, d = counts(replayed)
	require.Equal(t, int64(3), u, "each live location once")
	require.Zero(t, d, "a deleted location is not indexed, so not deleted")
	s.Settle()
	for _, text := range texts { // the second side, the readers' now
		require.Equal(t, search(direct, text), search(s, text), text)
	}
}

// lateStore is a Store whose replay wrote 200 towns and "Holdfast" and
// ended, its late resolver's build held at Holdfast until release is
// closed (and its second side not built in the background: StopBuilding).
func lateStore(t *testing.T) (s *Store, release chan struct{}) {
	t.Helper()
	var upserts, deletes atomic.Int64
	var held atomic.Bool
	release = make(chan struct{})
	s = New(Params{NewResolver: func() Resolver {
		return countingResolver{Resolver: resolve.New(), upserts: &upserts, deletes: &deletes,
			hold: "city:hold", held: &held, release: release}
	}})
	require.True(t, s.BeginReplay())
	var locs []readmodel.Location
	for i := range 200 {
		locs = append(locs, readmodel.Location{GeoID: fmt.Sprintf("city:%d", i), GeoType: readmodel.GeoCity,
			Name: fmt.Sprintf("Town %d", i), City: fmt.Sprintf("Town %d", i), State: "WA", Version: 1})
	}
	locs = append(locs, readmodel.Location{GeoID: "city:hold", GeoType: readmodel.GeoCity, Name: "Holdfast", City: "Holdfast", State: "WA", Version: 1})
	_, err := s.Apply(context.Background(), readmodel.Batch{Locations: locs})
	require.NoError(t, err)
	s.StopBuilding() // no second side in the background: the next write's settle builds it
	require.Positive(t, s.EndReplay())
	require.Eventually(t, held.Load, 10*time.Second, time.Millisecond, "the late build reached the held location")
	return s, release
}

// firstPlace is the geo_id of the first place candidate for text.
func firstPlace(t *testing.T, s *Store, text string) string {
	t.Helper()
	cs, err := s.ResolveCandidates(context.Background(), readmodel.ResolveQuery{Text: text, Limit: 5})
	require.NoError(t, err)
	require.NotEmpty(t, cs, text)
	return cs[0].Location.GeoID
}

// While a late resolver is being built, a place search waits for it, and
// then finds what it holds.
func TestLateResolverConcurrentSearchWaits(t *testing.T) {
	s, release := lateStore(t)
	searched := make(chan string, 1)
	go func() {
		cs, err := s.ResolveCandidates(context.Background(), readmodel.ResolveQuery{Text: "Holdfast", Limit: 5})
		if err != nil || len(cs) == 0 {
			searched <- ""
			return
		}
		searched <- cs[0].Location.GeoID
	}()
	select {
	case <-searched:
		t.Fatal("a place search returned before the late index was built")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	require.Equal(t, "city:hold", <-searched)
}

// While a late resolver is being built, a write to its side waits for it
// before it changes the locations the build reads: here a write after
// StopBuilding, whose settle builds the second side at once and then
// writes the replayed side. Without the wait the write's change of the
// location table races with the build's pass over it (-race reports it;
// make test runs this test under -race). Once the build is done the
// write goes on, and both sides find the written location.
func TestLateResolverConcurrentWriteWaits(t *testing.T) {
	ctx := context.Background()
	s, release := lateStore(t)
	wrote := make(chan error, 1)
	go func() {
		_, err := s.Apply(ctx, readmodel.Batch{Locations: []readmodel.Location{
			{GeoID: "city:new", GeoType: readmodel.GeoCity, Name: "Newcastle", City: "Newcastle", State: "WA", Version: 1},
		}})
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a write returned before the late index was built (%v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-wrote)
	s.Settle()
	for range 2 { // both sides: a write swaps the readers' side
		require.Equal(t, "city:new", firstPlace(t, s, "Newcastle"))
		require.Equal(t, "city:hold", firstPlace(t, s, "Holdfast"))
		_, err := s.Apply(ctx, readmodel.Batch{Locations: []readmodel.Location{
			{GeoID: "city:other", GeoType: readmodel.GeoCity, Name: "Otherton", City: "Otherton", State: "WA", Version: 1},
		}})
		require.NoError(t, err)
	}
}

// A batch lent to a replay (lentBatch) whose step comes after the
// replay ended is copied whole by that step: the Store keeps a live
// step's batches for the other side (pending). Here the caller's
// permits and properties are overwritten after Apply, and the other
// side, which applies them with the next write, must hold the
// originals.
func TestBatchLentAfterTheReplayEndedIsCopied(t *testing.T) {
	ctx := context.Background()
	val, lat := 250000.0, 47.6
	permit := readmodel.Permit{PermitID: "src:P1", PermitNumber: "P1", Source: "src", PermitType: "Building", Status: "Issued",
		IssueDate: "2026-01-02", Valuation: &val, Lat: &lat, Version: 1,
		Address:  readmodel.Address{FullAddress: "1 Pine St, Seattle, WA 98101", City: "Seattle", State: "WA", Zipcode: "98101"},
		GeoLinks: []readmodel.GeoLink{{GeoID: "state:WA", GeoType: readmodel.GeoState, Confidence: 1, Method: "state"}}}
	prop := readmodel.Property{PropertyID: "prop:1", CanonicalAddress: "1 PINE ST SEATTLE WA 98101", City: "Seattle", State: "WA", Zipcode: "98101", Lat: &lat, Version: 1,
		GeoLinks: []readmodel.GeoLink{{GeoID: "state:WA", GeoType: readmodel.GeoState, Confidence: 1, Method: "state"}}}
	next := readmodel.Batch{Permits: []readmodel.Permit{{PermitID: "src:P2", PermitNumber: "P2", Source: "src", Version: 1}}}

	reference := New(Params{})
	for _, b := range []readmodel.Batch{{Permits: []readmodel.Permit{permit.Clone()}, Properties: []readmodel.Property{prop.Clone()}}, next} {
		_, err := reference.Apply(ctx, b)
		require.NoError(t, err)
	}

	s := New(Params{})
	s.replaying.Store(true) // Apply saw the replay open; it ended before the step
	lent := readmodel.Batch{Permits: []readmodel.Permit{permit.Clone()}, Properties: []readmodel.Property{prop.Clone()}}
	_, err := s.Apply(ctx, lent)
	require.NoError(t, err)
	s.replaying.Store(false)
	*lent.Permits[0].Valuation, *lent.Permits[0].Lat, *lent.Properties[0].Lat = -1, -1, -1
	lent.Permits[0].GeoLinks[0].GeoID, lent.Properties[0].GeoLinks[0].GeoID = "state:XX", "state:XX"
	lent.Permits[0], lent.Properties[0] = readmodel.Permit{PermitID: "src:X", Version: 9}, readmodel.Property{PropertyID: "prop:X", Version: 9}
	_, err = s.Apply(ctx, next) // the other side applies the pending step, then next
	require.NoError(t, err)

	exported := func(s *Store) []readmodel.Batch {
		var out []readmodel.Batch
		require.NoError(t, s.Export(ctx, 10, func(b readmodel.Batch) error {
			out = append(out, b)
			return nil
		}))
		return out
	}
	require.Equal(t, exported(reference), exported(s))
}

// A batch of the signal families whose Apply saw the replay open but
// that waited for the signal writer until the writer had closed
// (EndReplay closes it under smu) is not applied by the signal writer:
// it leaves the writer's queue and goes through a step under wmu, as
// any write does once the replay has ended (apply.go, "The signal
// writer"), with its own result.
func TestSignalBatchAfterTheSignalWriterClosedTakesAStep(t *testing.T) {
	ctx := context.Background()
	lead := readmodel.Lead{LeadID: "l:1", SignalKey: "roof", EventDateUsed: "2026-01-02", GeoIDs: []string{"state:WA"}, Version: 1,
		Location: readmodel.LeadLocation{State: "WA", CityNorm: "seattle", ZipcodeNorm: "98101"}}
	s := New(Params{})
	require.True(t, s.BeginReplay())
	_, err := s.Apply(ctx, readmodel.Batch{Leads: []readmodel.Lead{lead}})
	require.NoError(t, err)
	s.smu.Lock()
	require.Equal(t, 1, s.sigBatches, "the signal writer applied the first batch")
	next := lead
	next.LeadID, next.Version = "l:2", 3
	got := make(chan readmodel.ApplyResult)
	go func() {
		res, err := s.Apply(ctx, readmodel.Batch{Leads: []readmodel.Lead{next}})
		assert.NoError(t, err)
		got <- res
	}()
	require.Eventually(t, func() bool { return waiting(&s.squeue) == 1 }, 5*time.Second, time.Millisecond, "the call waits for the signal writer")
	s.sigOpen = false // as EndReplay closes it
	s.smu.Unlock()
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, <-got)
	require.Zero(t, waiting(&s.squeue), "the call left the signal writer's queue")
	require.Equal(t, 1, s.sigBatches, "the signal writer applied no other batch")
	require.Equal(t, 1, s.replay.batches, "a step applied the second batch")
	require.Equal(t, 2, s.EndReplay())
	counts, err := s.Counts(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, counts[readmodel.KindLead])
}

// waiting is the number of calls in q.
func waiting(q *applyQueue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.reqs)
}
