package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
	require.ErrorContains(t, im.Add(readmodel.Batch{Deletes: []readmodel.Delete{{Kind: "nope", ID: "x", Version: 1}}}), `delete of unknown kind "nope"`)
	require.ErrorContains(t, im.Commit(), `delete of unknown kind "nope"`, "an import with a refused batch is not committed")

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

// An Import answers filtered permit queries, valuation pages and monthly
// series as Apply's state does: when its batches only add permits (the
// per-geo indexes built once at the end, permit_bulk.go), in index
// order or not, and when they change and delete permits it already
// holds (the deferred indexes built before a permit leaves them), with
// one builder or several. With postingMin lowered or raised, geos above
// and below it at the end of the import (postings and valuation order
// only for those above) answer as Apply's state does, and so does a geo
// that crosses it through Apply after the import.
func TestImportedPermitIndexesMatchApplied(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ps := filterPermits(r, 400)
	changed, dels := changesOf(ps)
	shuffled := slices.Clone(ps)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	// few: six permits of zipA and three of zipB; rest: the others
	var few, rest []readmodel.Permit
	for n := map[string]int{}; len(few)+len(rest) < len(ps); {
		p := ps[len(few)+len(rest)]
		if z := p.GeoLinks[0].GeoID; z == zipA && n[z] < 6 || z == zipB && n[z] < 3 {
			n[z]++
			few = append(few, p)
		} else {
			rest = append(rest, p)
		}
	}
	zipCount := func(bs ...[]readmodel.Permit) map[string]int {
		latest := map[string]string{}
		for _, b := range bs {
			for _, p := range b {
				latest[p.PermitID] = p.GeoLinks[0].GeoID
			}
		}
		n := map[string]int{}
		for _, z := range latest {
			n[z]++
		}
		return n
	}
	// with postings from 150, zipB is below at the import's end and
	// crosses it with the changes applied after (city and zipA above)
	require.Less(t, zipCount(ps)[zipB], 150)
	require.Greater(t, zipCount(ps)[zipA], 150)
	require.Greater(t, zipCount(ps, changed)[zipB], 150)
	require.Less(t, zipCount(few)[zipB], 5)
	require.Positive(t, zipCount(few)[zipB])
	require.GreaterOrEqual(t, zipCount(few)[zipA], 5)
	for _, tc := range []struct {
		name       string
		batches    []readmodel.Batch
		postingMin int               // 0: the default
		after      []readmodel.Batch // applied to both after Commit
	}{
		{name: "adds only", batches: []readmodel.Batch{{Permits: ps[:150]}, {Permits: ps[150:]}}},
		{name: "adds in no order", batches: []readmodel.Batch{{Permits: shuffled}}},
		{name: "changes and deletes", batches: []readmodel.Batch{{Permits: ps}, {Permits: changed}, {Deletes: dels}}},
		{name: "adds, builders side by side", batches: []readmodel.Batch{{Permits: shuffled}}},
		{name: "postings from 5, a zip above and one below", batches: []readmodel.Batch{{Permits: few}}, postingMin: 5},
		{name: "postings from 5, a zip crosses it after", batches: []readmodel.Batch{{Permits: few}}, postingMin: 5, after: []readmodel.Batch{{Permits: rest}, {Deletes: dels}}},
		{name: "postings from 150, a zip below", batches: []readmodel.Batch{{Permits: shuffled}}, postingMin: 150},
		{name: "postings from 150, a zip crosses it in the import", batches: []readmodel.Batch{{Permits: ps}, {Permits: changed}, {Deletes: dels}}, postingMin: 150},
		{name: "postings from 150, a zip crosses it after", batches: []readmodel.Batch{{Permits: ps}}, postingMin: 150, after: []readmodel.Batch{{Permits: changed}, {Deletes: dels}}},
		{name: "postings from 150, builders side by side", batches: []readmodel.Batch{{Permits: shuffled}}, postingMin: 150},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasSuffix(tc.name, "side by side") {
				defer memory.SetParallelGeos(1)()
			}
			if tc.postingMin > 0 {
				defer memory.SetPostingMin(tc.postingMin)()
			}
			applied := newStore(t)
			for _, b := range tc.batches {
				apply(t, applied, b)
			}
			imported := memory.New(memory.Params{})
			defer imported.Settle() // before postingMin is restored: the second side reads it
			im := imported.NewImport()
			locs := newStore(t)
			require.NoError(t, locs.Export(context.Background(), 100, im.Add))
			for _, b := range tc.batches {
				require.NoError(t, im.Add(b))
			}
			require.NoError(t, im.Commit())
			for _, b := range tc.after {
				apply(t, applied, b)
				apply(t, imported, b)
			}

			samePermitReads(t, r, applied, imported, "")
		})
	}
}

// changesOf returns ps with every fifth permit changed (a new version,
// another status and type, moved to zipB), and deletes of every eleventh
// from the fourth on.
func changesOf(ps []readmodel.Permit) ([]readmodel.Permit, []readmodel.Delete) {
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
	return changed, dels
}

// samePermitReads checks that imported answers permit pages (by date and
// by valuation) and monthly series, filtered or not, as applied does, and
// holds the same documents.
func samePermitReads(t *testing.T, r *rand.Rand, applied, imported *memory.Store, msg string) {
	t.Helper()
	ctx := context.Background()
	da, err := applied.Digest(ctx)
	require.NoError(t, err)
	di, err := imported.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, da, di, msg)
	found := 0
	for i := range 300 {
		f := randomPermitFilter(r)
		if i%4 == 0 {
			f = readmodel.PermitFilter{}
		}
		geo := []string{zipA, zipB, city, state}[i%4]
		q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 1 + i%9, Filter: f}
		if i%2 == 1 {
			q.Sort = readmodel.SortValuationDesc
		}
		want := walk(t, applied, q, nil)
		require.Equal(t, want, walk(t, imported, q, nil), "%s: filter %+v", msg, f)
		found += len(want)
		mq := readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(geo), Filter: f, FromDate: "2023-12-01", ToDate: "2024-05-31"}
		if i%3 == 0 {
			mq.FromDate = "2024-02-03"
		}
		wm, err := applied.PermitMonthly(ctx, mq)
		require.NoError(t, err)
		gm, err := imported.PermitMonthly(ctx, mq)
		require.NoError(t, err)
		require.Equal(t, wm, gm, "%s: monthly %+v", msg, mq)
	}
	require.Positive(t, found, msg)
}

// An Import's first side is lean (permit_bulk.go): readers have it with
// its permit sets but no postings, valuation orders or month stats, and
// read its geos as they read a small geo's, with the same answers;
// Apply's batches during the Import (its journal, applied to it at
// Commit) leave it so. Settle makes the second side, built whole, the
// readers' and gives the first its derived indexes; the next write makes
// that one the readers' again, with the same answers.
func TestImportFirstSideIsLeanUntilSettled(t *testing.T) {
	defer memory.SetPostingMin(20)()
	r := rand.New(rand.NewPCG(41, 42))
	ps := filterPermits(r, 400)
	changed, dels := changesOf(ps)
	applied := newStore(t)
	apply(t, applied, readmodel.Batch{Permits: ps})

	release := make(chan struct{})
	defer memory.HoldStandby(func() { <-release })()
	imported := memory.New(memory.Params{})
	im := imported.NewImport()
	require.NoError(t, newStore(t).Export(context.Background(), 100, im.Add))
	require.NoError(t, im.Add(readmodel.Batch{Permits: slices.Clone(ps)}))
	for _, b := range []readmodel.Batch{{Permits: changed}, {Deletes: dels}} { // the Import's journal
		apply(t, applied, b)
		apply(t, imported, b)
	}
	require.NoError(t, im.Commit())
	require.True(t, imported.SecondSideBuilding(), "held")
	active, _, derived, _ := imported.SidesLean()
	require.True(t, active, "readers have the first side, lean")
	require.False(t, derived, "a lean side holds no derived index, the journal's permits' neither")
	samePermitReads(t, r, applied, imported, "the lean first side")

	close(release)
	imported.Settle()
	active, standby, derived, standbyDerived := imported.SidesLean()
	require.False(t, active || standby, "no side is lean once settled")
	require.True(t, derived && standbyDerived, "both sides hold derived indexes")
	samePermitReads(t, r, applied, imported, "the second side, settled")

	p := ps[1]
	p.Version = 50
	p.Status = "Final"
	apply(t, applied, readmodel.Batch{Permits: []readmodel.Permit{p}})
	apply(t, imported, readmodel.Batch{Permits: []readmodel.Permit{p}})
	samePermitReads(t, r, applied, imported, "the first side, completed, after a write")
}

// An Import's first side leaves its leads' keys to their readers, as a
// replay's does (lead_bulk.go); a lead written to it (Apply's during the
// Import, applied at Commit: a new lead and a move) appends to the keys
// it joins and builds the ones it leaves. Either way its answers are a
// store's that built every key as it wrote, and settle leaves the keys
// nobody read to their readers.
func TestImportLeavesLeadTreesToReaders(t *testing.T) {
	for _, withJournal := range []bool{false, true} {
		t.Run(fmt.Sprint("journal ", withJournal), func(t *testing.T) {
			release := make(chan struct{})
			defer memory.HoldStandby(func() { <-release })()
			base := readmodel.Batch{Locations: leadLocations()}
			for i := range 300 {
				base.Leads = append(base.Leads, testLead(i, 1, 0))
			}
			applied := memory.New(memory.Params{})
			applied.BuildLeadKeysEagerly()
			apply(t, applied, base)
			imported := memory.New(memory.Params{})
			im := imported.NewImport()
			require.NoError(t, im.Add(base))
			if withJournal {
				b := readmodel.Batch{Leads: []readmodel.Lead{testLead(700, 1, 0), testLead(3, 2, 17)}} // new first; the move builds the keys it leaves
				apply(t, applied, b)
				apply(t, imported, b)
			}
			require.NoError(t, im.Commit())
			left, _ := imported.LeadKeysLeft()
			require.Positive(t, left, "keys left to their readers")
			if withJournal {
				require.Less(t, left, imported.LeadKeyCount(), "the move built the keys it left")
			} else {
				require.Equal(t, imported.LeadKeyCount(), left)
			}
			sameLeads(t, applied, imported, "the first side", leadGeos[1:]...)
			close(release)
			imported.Settle()
			active, standby := imported.LeadKeysLeft()
			require.Equal(t, standby, active, "the second side built the keys read on the first (buildLike), only those")
			require.Positive(t, standby, "state:WA's keys, unread on the first side")
			sameLeads(t, applied, imported, "settled", leadGeos...)
		})
	}
}

// Commit makes an Import's first side readable while its second side is
// built in the background; the next write waits for the second side.
// The sides are built apart and share no index: a change written after
// the load is seen on either side (each write makes the other side the
// active one), and the state equals that of a store that applied the
// same batches, before and after Settle.
func TestImportSecondSide(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	ps := filterPermits(r, 300)
	applied := newStore(t)
	apply(t, applied, readmodel.Batch{Permits: ps})
	imported := memory.New(memory.Params{})
	im := imported.NewImport()
	require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
	require.NoError(t, im.Add(readmodel.Batch{Permits: ps}))
	require.NoError(t, im.Commit())
	same := func(msg string) {
		t.Helper()
		da, err := applied.Digest(ctx)
		require.NoError(t, err)
		di, err := imported.Digest(ctx)
		require.NoError(t, err)
		require.Equal(t, da, di, msg)
		for _, geo := range []string{zipA, zipB, city} {
			for _, f := range []readmodel.PermitFilter{{}, {Statuses: []string{"withdrawn"}}, {PermitTypes: []string{"building"}}} {
				q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 50, Filter: f}
				require.Equal(t, walk(t, applied, q, nil), walk(t, imported, q, nil), "%s: %s %+v", msg, geo, f)
			}
		}
	}
	same("readable at Commit")
	for i := range 4 {
		p := ps[7*i]
		p.Version = int64(2 + i)
		p.Status, p.PermitType = "Withdrawn", "Building"
		b := readmodel.Batch{Permits: []readmodel.Permit{p}}
		apply(t, applied, b)
		res, err := imported.Apply(ctx, b)
		require.NoError(t, err)
		require.Equal(t, 1, res.Applied)
		same(fmt.Sprintf("after write %d", i))
	}
	imported.Settle()
	same("settled")
}

// A permit linked to no geo (only to its property) is found by a
// filtered page of its property after an Import as after Apply: its
// values' folds are known although no geo posting holds it.
func TestImportedPropertyOnlyPermitFilters(t *testing.T) {
	ctx := context.Background()
	const prop = "prop_0123456789abcdef0123456789abcdef"
	p := permit("solo", "2024-03-01", zipA, 1)
	p.PropertyID, p.Status, p.PermitType, p.Contractor = prop, "Under Review", "Fence", "Solo Fencing LLC"
	p.GeoLinks = []readmodel.GeoLink{{GeoID: prop, GeoType: readmodel.GeoProperty, Confidence: 1, Method: "address"}}
	b := readmodel.Batch{Properties: []readmodel.Property{property("1 Solo Way", "Seattle", "WA", "98101", 1)}, Permits: []readmodel.Permit{p}}
	b.Properties[0].PropertyID = prop
	applied := newStore(t)
	apply(t, applied, b)
	imported := memory.New(memory.Params{})
	im := imported.NewImport()
	require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
	require.NoError(t, im.Add(b))
	require.NoError(t, im.Commit())
	for _, f := range []readmodel.PermitFilter{{Statuses: []string{"under review"}}, {PermitTypes: []string{"fence"}}, {Contractor: readmodel.ContractorKey("Solo Fencing LLC")}} {
		q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(prop), Limit: 10, Filter: f}
		want := walk(t, applied, q, nil)
		require.Equal(t, []string{p.PermitID}, want, "%+v", f)
		require.Equal(t, want, walk(t, imported, q, nil), "%+v", f)
	}
}

// Apply calls made from many goroutines while an Import runs (grouped
// by the writer, permits and leads written side by side) are all
// journaled: after Commit the store holds the imported batches and every
// applied one, as a store that applied them all does, on the first side
// and, once Settle has put it in place, on the second.
func TestConcurrentAppliesDuringImportAreKept(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 10))
	ps := filterPermits(r, 600)
	cities := []string{"ca", "cb", "cc", "cd", "ce", "cf", "cg", "ch"}
	var during []readmodel.Batch // one per goroutine: 30 permits and 70 leads
	for i, c := range cities {
		during = append(during, readmodel.Batch{Permits: ps[300+30*i : 300+30*(i+1)], Leads: lrLeads(c, 70, 1)})
	}
	imported := newStore(t)
	im := imported.NewImport()
	require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, b := range during {
		wg.Go(func() {
			<-start
			res, err := imported.Apply(ctx, b)
			if assert.NoError(t, err) { // assert: not the test's goroutine
				assert.Equal(t, b.Len(), res.Applied)
			}
		})
	}
	for i := 0; i < 300; i += 50 {
		if i == 100 {
			close(start)
		}
		require.NoError(t, im.Add(readmodel.Batch{Permits: ps[i : i+50]}))
	}
	wg.Wait()
	require.NoError(t, im.Commit())

	applied := newStore(t)
	apply(t, applied, readmodel.Batch{Permits: ps[:300]})
	for _, b := range during {
		apply(t, applied, b)
	}
	same := func(msg string) {
		t.Helper()
		da, err := applied.Digest(ctx)
		require.NoError(t, err)
		di, err := imported.Digest(ctx)
		require.NoError(t, err)
		require.Equal(t, da, di, msg)
		c, err := imported.Counts(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(len(cities)*70), c[readmodel.KindLead], msg)
		for _, geo := range []string{zipA, zipB, city} {
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 40, Filter: readmodel.PermitFilter{Statuses: []string{"issued"}}}
			require.Equal(t, walk(t, applied, q, nil), walk(t, imported, q, nil), "%s: %s", msg, geo)
		}
	}
	same("at Commit")
	imported.Settle()
	// one more write makes the second side the active one
	b := readmodel.Batch{Permits: ps[540:]}
	apply(t, applied, b)
	apply(t, imported, b)
	same("second side")
}

// Reserve only sizes the new sides' tables: with the right counts, wrong
// ones or none, before the first Add or (ignored) after it, the import
// builds the state a store that applied the same batches holds, on both
// sides.
func TestImportReserve(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	ps := filterPermits(r, 200)
	applied := newStore(t)
	apply(t, applied, readmodel.Batch{Permits: ps})
	want, err := applied.Digest(ctx)
	require.NoError(t, err)
	counts, err := applied.Counts(ctx)
	require.NoError(t, err)
	for name, reserve := range map[string]func(*memory.Import){
		"exact": func(im *memory.Import) { im.Reserve(counts) },
		"zero":  func(im *memory.Import) { im.Reserve(map[readmodel.Kind]int64{}) },
		"too small": func(im *memory.Import) {
			im.Reserve(map[readmodel.Kind]int64{readmodel.KindPermit: 3, readmodel.KindLocation: 1})
		},
		"too large": func(im *memory.Import) {
			im.Reserve(map[readmodel.Kind]int64{readmodel.KindPermit: 50_000, readmodel.KindProperty: 50_000})
		},
		"twice, the second ignored": func(im *memory.Import) {
			im.Reserve(counts)
			im.Reserve(map[readmodel.Kind]int64{readmodel.KindPermit: 1})
		},
		"none":       func(*memory.Import) {},
		"after Adds": nil,
	} {
		t.Run(name, func(t *testing.T) {
			imported := memory.New(memory.Params{})
			im := imported.NewImport()
			if reserve != nil {
				reserve(im)
			}
			require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
			require.NoError(t, im.Add(readmodel.Batch{Permits: ps}))
			if reserve == nil {
				im.Reserve(map[readmodel.Kind]int64{readmodel.KindPermit: 1}) // does nothing now
			}
			require.NoError(t, im.Commit())
			got, err := imported.Digest(ctx)
			require.NoError(t, err)
			require.Equal(t, want, got, "readable at Commit")
			imported.Settle()
			// A write makes the second side the active one.
			p := ps[3]
			p.Version++
			p.Status = "Withdrawn"
			b := readmodel.Batch{Permits: []readmodel.Permit{p}}
			_, err = imported.Apply(ctx, b)
			require.NoError(t, err)
			again := newStore(t)
			apply(t, again, readmodel.Batch{Permits: ps})
			apply(t, again, b)
			sameDigest(t, again, imported, "the second side")
		})
	}
}

// sameDigest requires got to hold what want holds.
func sameDigest(t *testing.T, want, got *memory.Store, msg string) {
	t.Helper()
	w, err := want.Digest(context.Background())
	require.NoError(t, err)
	g, err := got.Digest(context.Background())
	require.NoError(t, err)
	require.Equal(t, w, g, msg)
}

// Reserve makes the tables in the background: an Import that gets no
// batch after it (an empty snapshot) commits or aborts only once they
// are made (the race detector watches), and commits an empty state.
func TestImportReserveWithoutBatches(t *testing.T) {
	ctx := context.Background()
	want, err := memory.New(memory.Params{}).Digest(ctx)
	require.NoError(t, err)
	counts := map[readmodel.Kind]int64{readmodel.KindPermit: 100_000, readmodel.KindProperty: 50_000}
	s := memory.New(memory.Params{})
	im := s.NewImport()
	im.Reserve(counts)
	im.Abort()
	im = s.NewImport()
	im.Reserve(counts)
	require.NoError(t, im.Commit())
	s.Settle()
	got, err := s.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got)
	apply(t, s, readmodel.Batch{Locations: lrLocations()}) // both sides are whole
	c, err := s.Counts(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(len(lrLocations())), c[readmodel.KindLocation])
}

// TestImportAsWriter: an Import's Apply (an Import as an indexer's
// Writer) copies the batch, so a caller that reuses its batch's slices
// after Apply, as the indexer does, changes nothing imported; the store
// then holds what Apply builds from the same batches.
func TestImportAsWriter(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	ps, props := permitsOnProperties(r, 300, 30, 3)
	batches := []readmodel.Batch{{Permits: ps[:150]}, {Permits: ps[150:], Properties: props}}
	imported := memory.New(memory.Params{})
	im := imported.NewImport()
	require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
	var w readmodel.Writer = im
	for _, b := range batches {
		reused := readmodel.Batch{Permits: slices.Clone(b.Permits), Properties: slices.Clone(b.Properties)}
		for i := range reused.Permits {
			reused.Permits[i].GeoLinks = slices.Clone(reused.Permits[i].GeoLinks)
		}
		res, err := w.Apply(ctx, reused)
		require.NoError(t, err)
		require.Equal(t, reused.Len(), res.Applied)
		for i := range reused.Permits { // the caller's next batch overwrites its slices
			reused.Permits[i].PermitID, reused.Permits[i].GeoLinks[0].GeoID = "x:reused", "zip:reused"
		}
		for i := range reused.Properties {
			reused.Properties[i].PropertyID = "prop_reused"
		}
	}
	require.NoError(t, im.Commit())
	applied := newStore(t)
	for _, b := range batches {
		apply(t, applied, b)
	}
	require.Equal(t, sortedExport(t, applied), sortedExport(t, imported))
}

// After an Import's Commit (a snapshot's load takes the same path),
// the readers' side builds the keys of its anchors of leadBuildMin
// records or more in the background before the second side's build
// starts (lead_bulk.go's buildLarge), so that the first read of a large
// anchor does not build them; smaller anchors' keys wait for their
// readers, and the second side builds the large ones too.
func TestImportBuildsLargeLeadKeysFirst(t *testing.T) {
	for _, lent := range []bool{false, true} { // Add, or AddLent as a snapshot's load
		t.Run(fmt.Sprint("lent ", lent), func(t *testing.T) {
			defer memory.SetLeadBuildMin(100)()
			release := make(chan struct{})
			defer memory.HoldStandby(func() { <-release })()
			// state:WA holds 300 records in three keys, city:a and city:b
			// 150 each, zip:98101 60 (testLead).
			batch := func() readmodel.Batch {
				b := readmodel.Batch{Locations: leadLocations()}
				for i := range 300 {
					b.Leads = append(b.Leads, testLead(i, 1, 0))
				}
				return b
			}
			applied := memory.New(memory.Params{})
			applied.BuildLeadKeysEagerly()
			apply(t, applied, batch())
			imported := memory.New(memory.Params{})
			im := imported.NewImport()
			if lent {
				require.NoError(t, im.AddLent(batch(), nil, func() {}))
			} else {
				require.NoError(t, im.Add(batch()))
			}
			require.NoError(t, im.Commit())
			require.Eventually(t, func() bool { left, _ := imported.LeadKeysLeft(); return left == 3 }, 10*time.Second, time.Millisecond,
				"the large anchors' keys, built on the readers' side before the second side's build")
			require.True(t, imported.SecondSideBuilding())
			sameLeads(t, applied, imported, "the first side", leadGeos[:3]...) // zip:98101's keys left unread
			close(release)
			imported.Settle()
			active, standby := imported.LeadKeysLeft()
			require.Equal(t, 3, active, "zip:98101's keys, unread")
			require.Equal(t, 3, standby, "the second side built the large keys (buildLike), not the ZIP's")
			sameLeads(t, applied, imported, "settled", leadGeos...)
		})
	}
}
