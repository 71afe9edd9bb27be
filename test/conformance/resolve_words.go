package conformance

// Issue 17's resolve scenarios (filler words, typing, focus point and
// coordinates), kept apart from the first resolve scenario in
// scenarios.go. They load the fixture's gazetteer and a few more places
// whose names exercise the rules.

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// Places of the issue 17 scenarios.
var (
	UT             = events.GeoID("state", "UT")
	MT             = events.GeoID("state", "MT")
	SaltLakeCity   = events.GeoID("city", "1840021383")
	SaltLakeCounty = events.GeoID("county", "49035")
	LakeForestPark = events.GeoID("city", "1840019832")
	LakeForest     = events.GeoID("city", "1840008086")
	StateCollege   = events.GeoID("city", "1840000830")
	MountPleasant  = events.GeoID("city", "1840016886")
	SpringfieldIL  = events.GeoID("city", "1840009517")
	SpringfieldMA  = events.GeoID("city", "1840000466")
	SpringfieldMO  = events.GeoID("city", "1840008600")
)

// WordEvents are the places of the issue 17 scenarios.
func WordEvents(t *testing.T) []events.Envelope {
	loc := func(id string, l events.Location) events.Envelope {
		if l.StateGeoID == "" && l.GeoType != "state" {
			l.StateGeoID = events.GeoID("state", l.State)
		}
		return mustEnv(t, events.LocationUpserted, id, 1, l)
	}
	city := func(id, name, state, stateName string, lat, lon float64, pop int64) events.Envelope {
		return loc(id, events.Location{GeoType: "city", Name: name, DisplayName: name + ", " + state, State: state, StateName: stateName,
			City: name, Lat: lat, Lon: lon, Population: pop, Incorporated: true})
	}
	return []events.Envelope{
		loc(UT, events.Location{GeoType: "state", Name: "Utah", DisplayName: "Utah", State: "UT", StateName: "Utah", Lat: 39.3, Lon: -111.7, Population: 3300000}),
		loc(MT, events.Location{GeoType: "state", Name: "Montana", DisplayName: "Montana", State: "MT", StateName: "Montana",
			Aliases: []string{"MT"}, Lat: 47, Lon: -109.6, Population: 1100000}),
		city(SaltLakeCity, "Salt Lake City", "UT", "Utah", 40.7608, -111.891, 200000),
		loc(SaltLakeCounty, events.Location{GeoType: "county", Name: "Salt Lake County", DisplayName: "Salt Lake County, UT", State: "UT",
			StateName: "Utah", County: "Salt Lake County", Lat: 40.67, Lon: -111.92, Population: 1180000}),
		city(LakeForestPark, "Lake Forest Park", "WA", "Washington", 47.7568, -122.2802, 13000),
		city(LakeForest, "Lake Forest", "IL", "Illinois", 42.2586, -87.8407, 19000),
		city(StateCollege, "State College", "PA", "Pennsylvania", 40.7934, -77.86, 42000),
		city(MountPleasant, "Mount Pleasant", "SC", "South Carolina", 32.8323, -79.8284, 90000),
		city(SpringfieldIL, "Springfield", "IL", "Illinois", 39.7817, -89.6501, 114000),
		city(SpringfieldMA, "Springfield", "MA", "Massachusetts", 42.1015, -72.5898, 155000),
		city(SpringfieldMO, "Springfield", "MO", "Missouri", 37.2089, -93.2923, 169000),
	}
}

// resolveTop resolves q and returns its candidates, checked for order
// and limit.
func resolveTop(t *testing.T, e *Env, q readmodel.ResolveQuery) []readmodel.Candidate {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 5
	}
	cs, err := e.B.ResolveCandidates(e.Ctx(), q)
	e.Check(t, CapResolve, err)
	require.NotNil(t, cs, "resolve %q", q.Text)
	require.LessOrEqual(t, len(cs), q.Limit)
	return cs
}

func resolveFillerWords(t *testing.T, e *Env) {
	e.Require(t, CapResolve)
	e.Load(t, LocationEvents(t)...)
	e.Load(t, WordEvents(t)...)
	plain := resolveTop(t, e, readmodel.ResolveQuery{Text: "Seattle, WA"})
	require.Equal(t, Seattle, plain[0].Location.GeoID)
	for _, text := range []string{"Seattle, WA, USA", "Seattle, Washington, United States", "Seattle U.S.A.", "near downtown Seattle", "the Seattle area"} {
		cs := resolveTop(t, e, readmodel.ResolveQuery{Text: text})
		require.NotEmpty(t, cs, text)
		require.Equal(t, Seattle, cs[0].Location.GeoID, text)
		require.Contains(t, cs[0].Reasons, "filler_dropped", text)
	}
	cs := resolveTop(t, e, readmodel.ResolveQuery{Text: "Seattle, WA, USA"})
	require.InDelta(t, plain[0].Confidence-0.05, cs[0].Confidence, 1e-9, "filler words cost 0.05 of confidence")
	for text, want := range map[string]string{
		"Washington State": WA, "State of Washington": WA, "Oregon, USA": OR, "State College": StateCollege,
		"State College, PA": StateCollege, "County of King": King,
	} {
		cs := resolveTop(t, e, readmodel.ResolveQuery{Text: text})
		require.NotEmpty(t, cs, text)
		require.Equal(t, want, cs[0].Location.GeoID, text)
		if want == StateCollege {
			require.NotContains(t, cs[0].Reasons, "filler_dropped", "a name with a filler word matches by name")
		}
	}
	for _, text := range []string{"USA", "United States", "the", "State of", "!!! --"} {
		require.Empty(t, resolveTop(t, e, readmodel.ResolveQuery{Text: text}), text)
	}
}

func resolveTyping(t *testing.T, e *Env) {
	e.Require(t, CapResolve)
	e.Load(t, LocationEvents(t)...)
	e.Load(t, WordEvents(t)...)
	top := func(text string) string {
		t.Helper()
		cs := resolveTop(t, e, readmodel.ResolveQuery{Text: text})
		require.NotEmpty(t, cs, text)
		return cs[0].Location.GeoID
	}
	require.Equal(t, LakeForestPark, top("Lake Forest P"), "one-letter prefix")
	require.Equal(t, LakeForest, top("Lake Forest"))
	require.Equal(t, SaltLakeCity, top("Salt La"), "city before county while typing")
	require.Equal(t, SaltLakeCounty, top("Salt Lake Co"))
	require.Equal(t, SaltLakeCounty, top("Salt Lake County"))
	require.Equal(t, MountPleasant, top("Mount"), "the place named with the word before an abbreviated alias")
	require.Equal(t, MT, top("MT"))
}

func resolveFocus(t *testing.T, e *Env) {
	e.Require(t, CapResolve)
	e.Load(t, LocationEvents(t)...)
	e.Load(t, WordEvents(t)...)
	cs := resolveTop(t, e, readmodel.ResolveQuery{Text: "Springfield"})
	require.Equal(t, SpringfieldMO, cs[0].Location.GeoID, "population first without a focus")
	for _, c := range cs {
		require.NotZero(t, c.Location.Lat, c.Location.GeoID)
		require.NotZero(t, c.Location.Lon, c.Location.GeoID)
	}
	near := resolveTop(t, e, readmodel.ResolveQuery{Text: "Springfield", Focus: &readmodel.Point{Lat: 39.8, Lon: -89.6}})
	require.Equal(t, SpringfieldIL, near[0].Location.GeoID, "the focus orders same-named places")
	require.Contains(t, near[0].Reasons, "near_focus")
	require.Len(t, near, len(cs), "nothing hidden")
	conf := map[string]float64{}
	for _, c := range cs {
		conf[c.Location.GeoID] = c.Confidence
	}
	require.Equal(t, conf[SpringfieldMO], near[slices.IndexFunc(near, func(c readmodel.Candidate) bool { return c.Location.GeoID == SpringfieldMO })].Confidence,
		"a focus leaves the confidence of the text's best match alone")
	// An exact match far away stays above near partial and prefix matches.
	far := resolveTop(t, e, readmodel.ResolveQuery{Text: "Seattle", Focus: &readmodel.Point{Lat: 40.76, Lon: -111.89}})
	require.Equal(t, Seattle, far[0].Location.GeoID)
	lake := resolveTop(t, e, readmodel.ResolveQuery{Text: "Lake Forest", Focus: &readmodel.Point{Lat: 47.75, Lon: -122.28}})
	require.Equal(t, LakeForest, lake[0].Location.GeoID, "an exact name elsewhere beats a partial name at the focus")
}
