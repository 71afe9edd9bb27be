package conformance

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/stretchr/testify/require"
)

// Scenarios is the one list every backend runs.
var Scenarios = []Scenario{
	{"locations/detail", locationDetail},
	{"locations/not_found", locationNotFound},
	{"locations/versions_and_deletes", locationVersions},
	{"resolve/basics", resolveBasics},
	{"permits/paging_exact", permitsPaging},
	{"properties/search_and_permits", properties},
	{"properties/large_city_pool", largeCityPool},
	{"resolve/large_pool", largeResolvePool},
	{"leads/stats_agree", leadsStats},
	{"geo_signals/ordering", geoSignalsOrdering},
	{"catalog", catalog},
	{"inspector/counts_digest_after_replay", countsDigest},
	// Issue 17 (resolve_words.go): filler words, typing, focus point.
	{"resolve/filler_words", resolveFillerWords},
	{"resolve/typing", resolveTyping},
	{"resolve/focus_and_coordinates", resolveFocus},
	// Issue 13 item 6 (resolve_words.go): joined names and "City of".
	{"resolve/compact_city_of", resolveCompact},
	// Issue 13 item 4 (counts.go): counts kept as pre-aggregates.
	{"locations/counts_follow_moves_and_replays", locationCountsFollow},
	{"leads/stats_follow_moves_and_replays", leadStatsFollow},
	{"relink/after_a_restart", relinkAfterRestart},
	{"versions/delete_outranks_its_version", deleteOutranksItsVersion},
}

func locationDetail(t *testing.T, e *Env) {
	e.Load(t, AllEvents(t)...)
	for _, id := range []string{Zip98101, Seattle, King, WA, MtVernon} {
		got, err := e.B.Location(e.Ctx(), readmodel.ParseGeoRef(id))
		require.NoError(t, err, id)
		want := e.Locations[id].Clone()
		want.PermitCount, want.LatestPermitDate = permitStats(e, id)
		require.Equal(t, want, got, "location %s", id)
	}
	// A location without permits.
	got, err := e.B.Location(e.Ctx(), readmodel.ParseGeoRef(Portland))
	require.NoError(t, err)
	require.Zero(t, got.PermitCount)
	require.Empty(t, got.LatestPermitDate)
}

// permitStats is a location's permit_count and latest_permit_date.
func permitStats(e *Env, geoID string) (int64, string) {
	ps := permitsUnder(e, geoID)
	latest := ""
	for _, p := range ps {
		if p.IssueDate > latest {
			latest = p.IssueDate
		}
	}
	return int64(len(ps)), latest
}

func locationNotFound(t *testing.T, e *Env) {
	e.Load(t, LocationEvents(t)...)
	ctx := e.Ctx()
	_, err := e.B.Location(ctx, readmodel.ParseGeoRef(Unknown))
	require.ErrorIs(t, err, readmodel.ErrNotFound)
	_, err = e.B.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(Unknown), Desc: true, Limit: 5})
	require.ErrorIs(t, err, readmodel.ErrNotFound)
	page, err := e.B.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(Seattle), Desc: true, Limit: 5})
	require.NoError(t, err)
	require.Empty(t, page.Permits, "a known geo without permits is an empty page")
	require.Nil(t, page.Next)
	if _, ok := e.h.Lacks[CapGeoSignals]; !ok {
		_, err = e.B.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef(Unknown), nil)
		require.ErrorIs(t, err, readmodel.ErrNotFound)
	}
	if _, ok := e.h.Lacks[CapLeads]; !ok {
		_, err = e.B.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(Unknown)}, Sort: readmodel.SortEventDateDesc, Limit: 5})
		require.ErrorIs(t, err, readmodel.ErrNotFound)
	}
	if _, ok := e.h.Lacks[CapStats]; !ok {
		_, err = e.B.PermitStats(ctx, readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(Unknown)}, Today: Today, TopN: 5})
		require.ErrorIs(t, err, readmodel.ErrNotFound)
	}
	if _, ok := e.h.Lacks[CapPropertyPermits]; !ok {
		_, err = e.B.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(PropUniv), Desc: true, Limit: 5})
		require.ErrorIs(t, err, readmodel.ErrNotFound)
	}
}

func locationVersions(t *testing.T, e *Env) {
	e.Load(t, LocationEvents(t)...)
	ctx := e.Ctx()
	v := func(version int64, name string) events.Envelope {
		return mustEnv(t, events.LocationUpserted, MtVernon, version, events.Location{GeoType: "city", Name: name, DisplayName: name + ", WA", State: "WA", StateName: "Washington", Lat: 48.42, Lon: -122.33})
	}
	del := func(version int64) events.Envelope { return mustEnv(t, events.LocationDeleted, MtVernon, version, nil) }

	r := e.Apply(t, v(3, "Mount Vernon"))
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, r)
	r = e.Apply(t, v(2, "Mt Vernon Old"), v(3, "Mount Vernon Again"))
	require.Equal(t, readmodel.ApplyResult{Stale: 2}, r, "older and equal versions are stale no-ops")
	got, err := e.B.Location(ctx, readmodel.ParseGeoRef(MtVernon))
	require.NoError(t, err)
	require.Equal(t, "Mount Vernon", got.Name)
	require.EqualValues(t, 3, got.Version)

	r = e.Apply(t, del(5))
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, r)
	_, err = e.B.Location(ctx, readmodel.ParseGeoRef(MtVernon))
	require.ErrorIs(t, err, readmodel.ErrNotFound)
	r = e.Apply(t, v(4, "Resurrected"), del(5))
	require.Equal(t, readmodel.ApplyResult{Stale: 2}, r, "an older upsert after a delete stays deleted")
	_, err = e.B.Location(ctx, readmodel.ParseGeoRef(MtVernon))
	require.ErrorIs(t, err, readmodel.ErrNotFound)

	r = e.Apply(t, v(6, "Mount Vernon"))
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, r, "a newer upsert revives")
	got, err = e.B.Location(ctx, readmodel.ParseGeoRef(MtVernon))
	require.NoError(t, err)
	require.EqualValues(t, 6, got.Version)

	// Deleting something never written leaves a tombstone too.
	ghost := events.GeoID("city", "ghost")
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, e.Apply(t, mustEnv(t, events.LocationDeleted, ghost, 9, nil)))
	require.Equal(t, readmodel.ApplyResult{Stale: 1}, e.Apply(t, mustEnv(t, events.LocationUpserted, ghost, 8,
		events.Location{GeoType: "city", Name: "Ghost", DisplayName: "Ghost, WA", State: "WA", StateName: "Washington"})))
	_, err = e.B.Location(ctx, readmodel.ParseGeoRef(ghost))
	require.ErrorIs(t, err, readmodel.ErrNotFound)
	h, err := e.B.Health(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(e.Locations), h.Counts[readmodel.KindLocation])
}

func resolveBasics(t *testing.T, e *Env) {
	e.Require(t, CapResolve)
	e.Load(t, LocationEvents(t)...)
	ctx := e.Ctx()
	top := func(q readmodel.ResolveQuery) readmodel.Candidate {
		t.Helper()
		if q.Limit == 0 {
			q.Limit = 5
		}
		cs, err := e.B.ResolveCandidates(ctx, q)
		e.Check(t, CapResolve, err)
		require.NotEmpty(t, cs, "resolve %q", q.Text)
		for i := 1; i < len(cs); i++ {
			a, b := cs[i-1], cs[i]
			ordered := a.Score > b.Score || a.Score == b.Score && (a.Location.Population > b.Location.Population ||
				a.Location.Population == b.Location.Population && a.Location.GeoID < b.Location.GeoID)
			require.True(t, ordered, "resolve %q: candidates out of order at %d", q.Text, i)
		}
		require.LessOrEqual(t, len(cs), q.Limit)
		return cs[0]
	}
	require.Equal(t, Seattle, top(readmodel.ResolveQuery{Text: "Seattle"}).Location.GeoID)
	require.Equal(t, Seattle, top(readmodel.ResolveQuery{Text: "Seatle"}).Location.GeoID, "one typo")
	require.Equal(t, Bellevue, top(readmodel.ResolveQuery{Text: "bellev"}).Location.GeoID, "prefix")
	require.Equal(t, MtVernon, top(readmodel.ResolveQuery{Text: "Mount Vernon, WA"}).Location.GeoID, "alias and abbreviation")
	require.Equal(t, Zip98101, top(readmodel.ResolveQuery{Text: "98101"}).Location.GeoID, "ZIP")
	require.Equal(t, SeaJur, top(readmodel.ResolveQuery{Text: "Seattle", GeoType: readmodel.GeoJurisdiction}).Location.GeoID, "geo_type filter")
	require.Equal(t, King, top(readmodel.ResolveQuery{Text: "King County", State: "WA"}).Location.GeoID)

	cs, err := e.B.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "Seattle", State: "OR", Limit: 5})
	e.Check(t, CapResolve, err)
	require.Empty(t, cs, "the state filter is hard")
	cs, err = e.B.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "Zzyzxqq", Limit: 5})
	e.Check(t, CapResolve, err)
	require.NotNil(t, cs)
	require.Empty(t, cs)
}

// permitsUnder lists the live permits of a geo_id (every link but the
// permit's own property link) or of a property_id.
func permitsUnder(e *Env, geoID string) []readmodel.Permit {
	var out []readmodel.Permit
	for _, p := range e.Permits {
		if p.PropertyID == geoID && geoID != "" {
			out = append(out, p)
			continue
		}
		for _, l := range p.GeoLinks {
			self := p.PropertyID != "" && l.GeoType == readmodel.GeoProperty && l.GeoID == p.PropertyID
			if l.GeoID == geoID && !self {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// sortPermits orders by the SearchPermits contract.
func sortPermits(ps []readmodel.Permit, desc bool) {
	slices.SortFunc(ps, func(a, b readmodel.Permit) int {
		if (a.IssueDate == "") != (b.IssueDate == "") {
			if a.IssueDate == "" {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(a.IssueDate, b.IssueDate); c != 0 {
			if desc {
				return -c
			}
			return c
		}
		return cmp.Compare(a.PermitID, b.PermitID)
	})
}

func permitsPaging(t *testing.T, e *Env) {
	e.Load(t, AllEvents(t)...)
	for _, tc := range []struct {
		name     string
		geo      string
		desc     bool
		from, to string
	}{
		{"city desc", Seattle, true, "", ""},
		{"city asc", Seattle, false, "", ""},
		{"zip desc", Zip98101, true, "", ""},
		{"county asc", King, false, "", ""},
		{"state bounded desc", WA, true, "2024-03-15", "2025-05-05"},
		{"state bounded asc", WA, false, "2024-03-15", "2025-05-05"},
		{"from only", King, false, "2025-01-01", ""},
		{"to only", King, true, "", "2024-03-15"},
		{"property", PropUniv, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			ps := permitsUnder(e, tc.geo)
			sortPermits(ps, tc.desc)
			for _, p := range ps {
				if tc.from != "" && (p.IssueDate == "" || p.IssueDate < tc.from) || tc.to != "" && (p.IssueDate == "" || p.IssueDate > tc.to) {
					continue
				}
				want = append(want, p.PermitID)
			}
			require.NotEmpty(t, want, "fixture gives every case permits")
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(tc.geo), Desc: tc.desc, FromDate: tc.from, ToDate: tc.to, Limit: 7}
			got := e.walkPermits(t, q, func(page readmodel.PermitPage) {
				require.LessOrEqual(t, len(page.Permits), 7)
				for _, h := range page.Permits {
					require.Equal(t, e.Permits[h.Permit.PermitID], h.Permit, "permit document round trip")
					require.Equal(t, tc.geo, h.Match.GeoID)
				}
				if page.Next != nil {
					require.Len(t, page.Permits, 7, "a page with Next is full")
				}
			})
			require.Equal(t, want, got, "limit 7 walks every permit exactly once in contract order")
		})
	}
}

func properties(t *testing.T, e *Env) {
	e.Require(t, CapPropertySearch)
	e.Load(t, AllEvents(t)...)
	ctx := e.Ctx()
	ms, err := e.B.SearchProperties(ctx, readmodel.PropertyQuery{Address: "600 University Street, Seattle, WA 98101", Limit: 5})
	e.Check(t, CapPropertySearch, err)
	require.Len(t, ms, 1)
	require.Equal(t, PropUniv, ms[0].Property.PropertyID)
	require.Equal(t, "normalized", ms[0].MatchType)
	require.Equal(t, e.Properties[PropUniv], ms[0].Property)

	ms, err = e.B.SearchProperties(ctx, readmodel.PropertyQuery{Address: "600 UNIVERSITY ST", Limit: 5})
	e.Check(t, CapPropertySearch, err)
	require.Len(t, ms, 1)
	require.Equal(t, "exact", ms[0].MatchType)
	require.InDelta(t, 1.0, ms[0].MatchConfidence, 1e-9)

	ms, err = e.B.SearchProperties(ctx, readmodel.PropertyQuery{Address: "600 Univrsity St", City: "Seattle", Limit: 5})
	e.Check(t, CapPropertySearch, err)
	require.Len(t, ms, 1, "fuzzy street within the city")
	require.Equal(t, "fuzzy", ms[0].MatchType)

	ms, err = e.B.SearchProperties(ctx, readmodel.PropertyQuery{Address: "600 University St", City: "Bellevue", Limit: 5})
	e.Check(t, CapPropertySearch, err)
	require.Empty(t, ms, "the city hint is a filter")

	e.Require(t, CapPropertyPermits)
	want := permitsUnder(e, PropUniv)
	sortPermits(want, true)
	var got []readmodel.Permit
	q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(PropUniv), Desc: true, Limit: 2}
	for {
		page, err := e.B.SearchPermits(ctx, q)
		e.Check(t, CapPropertyPermits, err)
		for _, h := range page.Permits {
			got = append(got, h.Permit)
		}
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
	require.Equal(t, want, got)

	e.Require(t, CapPropertyLocation)
	loc, err := e.B.Location(ctx, readmodel.ParseGeoRef(PropUniv))
	e.Check(t, CapPropertyLocation, err)
	require.Equal(t, readmodel.GeoProperty, loc.GeoType)
	require.Equal(t, Seattle, loc.CityGeoID)
	require.Equal(t, SeaJur, loc.JurisdictionGeoID)
	require.Equal(t, "City of Seattle", loc.Jurisdiction)
	require.Equal(t, "King County", loc.County)
	n, latest := permitStats(e, PropUniv)
	require.Equal(t, n, loc.PermitCount)
	require.Equal(t, latest, loc.LatestPermitDate)
}

func countsDigest(t *testing.T, e *Env) {
	all := AllEvents(t)
	first := e.Load(t, all...)
	require.Equal(t, len(all), first.Applied)
	ctx := e.Ctx()
	h, err := e.B.Health(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, h.Backend)
	counts := h.Counts
	want := map[readmodel.Kind]int64{
		readmodel.KindLocation: int64(len(e.Locations)), readmodel.KindPermit: int64(len(e.Permits)),
		readmodel.KindProperty: int64(len(e.Properties)), readmodel.KindGeoSignal: int64(len(e.GeoSignals)),
		readmodel.KindLead: int64(len(e.Leads)), readmodel.KindCatalog: int64(len(e.Catalog)),
	}
	require.Equal(t, want, counts)
	digest, err := e.B.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, expectDigest(e), digest, "digest over kind, id and version of live documents")

	// A replay (reversed, so older never beats newer) changes nothing.
	rev := slices.Clone(all)
	slices.Reverse(rev[len(LocationEvents(t)):])
	again := e.Load(t, rev...)
	require.Equal(t, readmodel.ApplyResult{Stale: len(all)}, again)
	d2, err := e.B.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, digest, d2)

	// Deletes are reflected in both.
	lead := LeadEvents(t)[0].EntityID
	e.Apply(t, mustEnv(t, events.LeadDeleted, lead, 5000, nil), mustEnv(t, events.PermitDeleted, events.PermitDocID("conformance", "P000"), 2, nil))
	h, err = e.B.Health(ctx)
	require.NoError(t, err)
	counts = h.Counts
	require.Equal(t, want[readmodel.KindLead]-1, counts[readmodel.KindLead])
	require.Equal(t, want[readmodel.KindPermit]-1, counts[readmodel.KindPermit])
	d3, err := e.B.Digest(ctx)
	require.NoError(t, err)
	require.Equal(t, expectDigest(e), d3)
}

// addDocs calls add for every document of one kind of the oracle.
func addDocs[D any](add func(readmodel.Kind, string, int64), kind readmodel.Kind, docs map[string]D, version func(D) int64) {
	for id, d := range docs {
		add(kind, id, version(d))
	}
}

func expectDigest(e *Env) string {
	var lines []string
	add := func(k readmodel.Kind, id string, v int64) {
		lines = append(lines, string(k)+" "+id+" "+strconv.FormatInt(v, 10))
	}
	addDocs(add, readmodel.KindLocation, e.Locations, func(d readmodel.Location) int64 { return d.Version })
	addDocs(add, readmodel.KindPermit, e.Permits, func(d readmodel.Permit) int64 { return d.Version })
	addDocs(add, readmodel.KindProperty, e.Properties, func(d readmodel.Property) int64 { return d.Version })
	addDocs(add, readmodel.KindGeoSignal, e.GeoSignals, func(d readmodel.GeoSignal) int64 { return d.Version })
	addDocs(add, readmodel.KindLead, e.Leads, func(d readmodel.Lead) int64 { return d.Version })
	addDocs(add, readmodel.KindCatalog, e.Catalog, func(d readmodel.CatalogEntry) int64 { return d.Version })
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

var _ = errors.Is
