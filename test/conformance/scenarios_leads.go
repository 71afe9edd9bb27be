// Conformance scenarios of leads, stats, geo signals and the catalog.

package conformance

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/stretchr/testify/require"
)

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
