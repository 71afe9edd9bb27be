package conformance

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
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
	ctx := e.Ctx()
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
			var got []string
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(tc.geo), Desc: tc.desc, FromDate: tc.from, ToDate: tc.to, Limit: 7}
			for pages := 0; ; pages++ {
				require.Less(t, pages, 100, "walk does not end")
				page, err := e.B.SearchPermits(ctx, q)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page.Permits), 7)
				for _, h := range page.Permits {
					got = append(got, h.Permit.PermitID)
					require.Equal(t, e.Permits[h.Permit.PermitID], h.Permit, "permit document round trip")
					require.Equal(t, tc.geo, h.Match.GeoID)
				}
				if page.Next == nil {
					break
				}
				require.Len(t, page.Permits, 7, "a page with Next is full")
				q.After = page.Next
			}
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

// leadPasses applies a LeadFilter by its documented contract.
func leadPasses(l readmodel.Lead, f readmodel.LeadFilter) bool {
	if !slices.Contains(l.GeoIDs, f.Geo.ID()) || len(f.SignalKeys) > 0 && !slices.Contains(f.SignalKeys, l.SignalKey) {
		return false
	}
	d := l.EventDateUsed
	for _, lo := range []string{f.FromDate, f.FreshSince} {
		if lo != "" && (d == "" || d < lo) {
			return false
		}
	}
	if f.ToDate != "" && (d == "" || d > f.ToDate) {
		return false
	}
	return f.MinConfidence == nil || l.Confidence != nil && *l.Confidence >= *f.MinConfidence
}

func leadCompare(sort readmodel.LeadSort) func(a, b readmodel.Lead) int {
	date := func(a, b readmodel.Lead) int { // desc, null last
		switch {
		case a.EventDateUsed == b.EventDateUsed:
			return 0
		case a.EventDateUsed == "":
			return 1
		case b.EventDateUsed == "":
			return -1
		}
		return -cmp.Compare(a.EventDateUsed, b.EventDateUsed)
	}
	conf := func(a, b readmodel.Lead) int {
		switch {
		case a.Confidence == nil && b.Confidence == nil:
			return 0
		case a.Confidence == nil:
			return 1
		case b.Confidence == nil:
			return -1
		}
		return -cmp.Compare(*a.Confidence, *b.Confidence)
	}
	return func(a, b readmodel.Lead) int {
		first, second := date, conf
		if sort == readmodel.SortConfidenceDesc {
			first, second = conf, date
		}
		if c := first(a, b); c != 0 {
			return c
		}
		if c := second(a, b); c != 0 {
			return c
		}
		return cmp.Compare(a.LeadID, b.LeadID)
	}
}

func leadsStats(t *testing.T, e *Env) {
	e.Require(t, CapLeads)
	e.Load(t, AllEvents(t)...)
	ctx := e.Ctx()
	minConf := 0.5
	for _, tc := range []struct {
		name string
		f    readmodel.LeadFilter
	}{
		{"zip all", readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(Zip98101)}},
		{"city keys", readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(Seattle), SignalKeys: []string{"framing_nowcast_early", "rough_in_window_late"}}},
		{"county window", readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(King), FromDate: "2026-06-01", ToDate: "2026-06-30"}},
		{"state min confidence", readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(WA), MinConfidence: &minConf}},
		{"fresh", readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(WA), FreshSince: "2026-06-16"}},
		{"empty", readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(Portland)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var match []readmodel.Lead
			for _, l := range e.Leads {
				if leadPasses(l, tc.f) {
					match = append(match, l)
				}
			}
			for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
				want := slices.Clone(match)
				slices.SortFunc(want, leadCompare(sort))
				var got []readmodel.Lead
				q := readmodel.LeadQuery{Filter: tc.f, Sort: sort, Limit: 7}
				for pages := 0; ; pages++ {
					require.Less(t, pages, 100)
					page, err := e.B.PermitLeads(ctx, q)
					e.Check(t, CapLeads, err)
					require.Equal(t, e.Locations[tc.f.Geo.ID()].GeoType, page.GeoType, "the anchor's geo type")
					got = append(got, page.Leads...)
					if page.Next == nil {
						break
					}
					q.After = page.Next
				}
				if want == nil {
					want = []readmodel.Lead{}
				}
				if got == nil {
					got = []readmodel.Lead{}
				}
				require.Equal(t, want, got, "%s walk", sort)
			}

			e.Require(t, CapStats)
			st, err := e.B.PermitStats(ctx, readmodel.StatsQuery{Filter: tc.f, Today: Today, TopN: 2})
			e.Check(t, CapStats, err)
			require.Equal(t, e.Locations[tc.f.Geo.ID()].GeoType, st.GeoType, "the anchor's geo type")
			st.GeoType = ""
			want := expectStats(match, 2)
			if _, ok := e.h.Lacks[CapStatsNames]; !ok {
				want = e.spellStats(match, 2)
			}
			require.Equal(t, want, normStats(st))
		})
	}
}

func expectStats(leads []readmodel.Lead, topN int) readmodel.PermitStats {
	st := readmodel.PermitStats{Total: int64(len(leads))}
	today, _ := time.Parse(time.DateOnly, Today)
	by, counties, cities, zips := map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, l := range leads {
		by[l.SignalKey]++
		if v := l.Location.CountyNorm; v != "" {
			counties[v]++
		}
		if v := l.Location.CityNorm; v != "" {
			cities[v]++
		}
		if v := l.Location.ZipcodeNorm; v != "" {
			zips[v]++
		}
		switch {
		case l.Confidence != nil && *l.Confidence >= 0.75:
			st.ConfidenceHigh++
		case l.Confidence != nil && *l.Confidence >= 0.5:
			st.ConfidenceMedium++
		default:
			st.ConfidenceLow++
		}
		if l.EventDateUsed == "" {
			st.Fresh31Plus++
			continue
		}
		d, _ := time.Parse(time.DateOnly, l.EventDateUsed)
		lag := max(int(today.Sub(d).Hours()/24), 0)
		switch {
		case lag <= 7:
			st.Fresh0to7++
		case lag <= 14:
			st.Fresh8to14++
		case lag <= 30:
			st.Fresh15to30++
		default:
			st.Fresh31Plus++
		}
	}
	list := func(m map[string]int64, n int) []readmodel.ValueCount {
		out := []readmodel.ValueCount{}
		for k, v := range m {
			out = append(out, readmodel.ValueCount{Value: k, Count: v})
		}
		slices.SortFunc(out, func(a, b readmodel.ValueCount) int {
			if a.Count != b.Count {
				return cmp.Compare(b.Count, a.Count)
			}
			return cmp.Compare(a.Value, b.Value)
		})
		if n >= 0 && len(out) > n {
			out = out[:n]
		}
		return out
	}
	st.BySignal = list(by, -1)
	st.TopCounties, st.TopCities, st.TopZips = list(counties, topN), list(cities, topN), list(zips, topN)
	return st
}

// spellStats is expectStats with cities and counties named as their
// locations spell them: the Name of the city or county location whose
// normalised name is the key, else the key.
func (e *Env) spellStats(leads []readmodel.Lead, topN int) readmodel.PermitStats {
	names := map[readmodel.GeoType]map[string]string{readmodel.GeoCity: {}, readmodel.GeoCounty: {}}
	for _, l := range e.Locations {
		if m := names[l.GeoType]; m != nil {
			m[readmodel.NormName(l.Name)] = l.Name
		}
	}
	spelled := make([]readmodel.Lead, len(leads))
	for i, l := range leads {
		l.Location.CityNorm = spellKey(names[readmodel.GeoCity], l.Location.CityNorm)
		l.Location.CountyNorm = spellKey(names[readmodel.GeoCounty], l.Location.CountyNorm)
		spelled[i] = l
	}
	return expectStats(spelled, topN)
}

func spellKey(m map[string]string, k string) string {
	if s, ok := m[k]; ok {
		return s
	}
	return k
}

// normStats treats nil and empty lists alike.
func normStats(s readmodel.PermitStats) readmodel.PermitStats {
	for _, l := range []*[]readmodel.ValueCount{&s.BySignal, &s.TopCounties, &s.TopCities, &s.TopZips} {
		if *l == nil {
			*l = []readmodel.ValueCount{}
		}
	}
	return s
}

func geoSignalsOrdering(t *testing.T, e *Env) {
	e.Require(t, CapGeoSignals)
	e.Load(t, AllEvents(t)...)
	ctx := e.Ctx()
	minScore := 0.4
	for _, tc := range []struct {
		name string
		q    readmodel.GeoSignalQuery
	}{
		{"state", readmodel.GeoSignalQuery{State: "WA"}},
		{"key and type", readmodel.GeoSignalQuery{State: "WA", SignalKeys: []string{"permit_velocity"}, GeoType: readmodel.GeoZip}},
		{"decision", readmodel.GeoSignalQuery{State: "WA", Decision: events.DecisionNeutral}},
		{"min score", readmodel.GeoSignalQuery{State: "WA", MinScore: &minScore}},
		{"other state", readmodel.GeoSignalQuery{State: "OR"}},
		{"no rows", readmodel.GeoSignalQuery{State: "TX"}},
		// construction_momentum is inactive in WA and has no entry in OR:
		// its rows are never served.
		{"inactive key", readmodel.GeoSignalQuery{State: "WA", SignalKeys: []string{"construction_momentum"}}},
		{"key without entry", readmodel.GeoSignalQuery{State: "OR", SignalKeys: []string{"construction_momentum"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			want := []readmodel.GeoSignal{}
			for _, g := range e.GeoSignals {
				if !activeSignal(e, g) || g.State != q.State || len(q.SignalKeys) > 0 && !slices.Contains(q.SignalKeys, g.SignalKey) ||
					q.GeoType != "" && g.GeoType != q.GeoType || q.Decision != "" && g.Decision != q.Decision ||
					q.MinScore != nil && g.Score < *q.MinScore {
					continue
				}
				want = append(want, g)
			}
			slices.SortFunc(want, func(a, b readmodel.GeoSignal) int {
				if a.Score != b.Score {
					return cmp.Compare(b.Score, a.Score)
				}
				if c := cmp.Compare(a.SignalKey, b.SignalKey); c != 0 {
					return c
				}
				return cmp.Compare(a.GeoID, b.GeoID)
			})
			got := []readmodel.GeoSignal{}
			q.Limit = 2
			for {
				page, err := e.B.SearchGeoSignals(ctx, q)
				e.Check(t, CapGeoSignals, err)
				got = append(got, page.Signals...)
				if page.Next == nil {
					break
				}
				q.After = page.Next
			}
			require.Equal(t, len(want), len(got))
			for i := range want {
				requireSignal(t, want[i], got[i])
			}
		})
	}
	// Seattle has rows of both keys; only permit_velocity is active in WA.
	// The geo's type and state come with the rows.
	signalsOf := func(geoID string, keys []string) []readmodel.GeoSignal {
		t.Helper()
		got, err := e.B.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef(geoID), keys)
		e.Check(t, CapGeoSignals, err)
		loc := e.Locations[geoID]
		require.Equal(t, loc.GeoType, got.GeoType)
		require.Equal(t, loc.State, got.State)
		require.NotNil(t, got.Signals)
		return got.Signals
	}
	rows := signalsOf(Seattle, nil)
	require.Len(t, rows, 1)
	requireSignal(t, e.GeoSignals[events.GeoSignalID(Seattle, "permit_velocity")], rows[0])
	rows = signalsOf(Seattle, []string{"permit_velocity"})
	require.Len(t, rows, 1)
	requireSignal(t, e.GeoSignals[events.GeoSignalID(Seattle, "permit_velocity")], rows[0])
	require.Empty(t, signalsOf(Seattle, []string{"construction_momentum"}), "an inactive key's row")
	rows = signalsOf(Portland, nil)
	require.Len(t, rows, 1, "OR lists permit_velocity only")
	require.Equal(t, "permit_velocity", rows[0].SignalKey)
	require.Empty(t, signalsOf(WA, nil), "a known geo without rows")
	for id := range e.Properties {
		_, err := e.B.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef(id), nil)
		require.ErrorIs(t, err, readmodel.ErrNotFound, "a property has no geo signal rows")
		break
	}
}

// activeSignal reports whether g's key is active in the catalog of g's
// state: the only rows a backend serves.
func activeSignal(e *Env, g readmodel.GeoSignal) bool {
	c, ok := e.Catalog[readmodel.CatalogEntry{State: g.State, SignalKey: g.SignalKey}.ID()]
	return ok && c.Status == readmodel.CatalogActive
}

func requireSignal(t *testing.T, want, got readmodel.GeoSignal) {
	t.Helper()
	require.True(t, want.ComputedAt.Equal(got.ComputedAt), "computed_at %v != %v", want.ComputedAt, got.ComputedAt)
	want.ComputedAt, got.ComputedAt = time.Time{}, time.Time{}
	require.JSONEq(t, string(want.Value), string(got.Value))
	want.Value, got.Value = nil, nil
	require.Equal(t, want, got)
}

func catalog(t *testing.T, e *Env) {
	e.Require(t, CapCatalog)
	e.Load(t, CatalogEvents(t)...)
	ctx := e.Ctx()
	keys := func(cs []readmodel.CatalogEntry) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.SignalKey)
		}
		return out
	}
	cs, err := e.B.Catalog(ctx, readmodel.CatalogQuery{State: "WA"})
	e.Check(t, CapCatalog, err)
	require.Equal(t, []string{"framing_nowcast_early", "permit_velocity"}, keys(cs))
	require.JSONEq(t, `{"unit":"score"}`, string(cs[0].Spec))
	cs, err = e.B.Catalog(ctx, readmodel.CatalogQuery{State: "WA", IncludeInactive: true})
	e.Check(t, CapCatalog, err)
	require.Equal(t, []string{"construction_momentum", "framing_nowcast_early", "permit_velocity"}, keys(cs))
	cs, err = e.B.Catalog(ctx, readmodel.CatalogQuery{State: "WA", SignalKeys: []string{"permit_velocity", "nope"}})
	e.Check(t, CapCatalog, err)
	require.Equal(t, []string{"permit_velocity"}, keys(cs))
	cs, err = e.B.Catalog(ctx, readmodel.CatalogQuery{State: "TX"})
	e.Check(t, CapCatalog, err)
	require.Empty(t, cs)
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

func expectDigest(e *Env) string {
	var lines []string
	add := func(k readmodel.Kind, id string, v int64) {
		lines = append(lines, string(k)+" "+id+" "+strconv.FormatInt(v, 10))
	}
	for id, d := range e.Locations {
		add(readmodel.KindLocation, id, d.Version)
	}
	for id, d := range e.Permits {
		add(readmodel.KindPermit, id, d.Version)
	}
	for id, d := range e.Properties {
		add(readmodel.KindProperty, id, d.Version)
	}
	for id, d := range e.GeoSignals {
		add(readmodel.KindGeoSignal, id, d.Version)
	}
	for id, d := range e.Leads {
		add(readmodel.KindLead, id, d.Version)
	}
	for id, d := range e.Catalog {
		add(readmodel.KindCatalog, id, d.Version)
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

var _ = errors.Is
