package conformance

// Issue 17's resolve scenarios (filler words, typing, focus point and
// coordinates), kept apart from the first resolve scenario in
// scenarios.go. They load the fixture's gazetteer and a few more places
// whose names exercise the rules.

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/resolve"
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
	loc := func(id string, l events.Location) events.Envelope { return placeEnv(t, id, l) }
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

// Places of the joined-name scenario (issue 13 item 6): names whose
// joined reading ("De Kalb" -> "dekalb", "Sedrowoolley") must reach the
// jurisdictions named "City of ..." and the counties that have the word,
// as the memory backend's index does.
var (
	DeKalbCity       = events.GeoID("city", "1840007803")
	DeKalbJur        = events.GeoID("jurisdiction", "1718823")
	DeKalbCounty     = events.GeoID("county", "17037")
	SedroWoolley     = events.GeoID("city", "1840021077")
	SedroWoolleyJur  = events.GeoID("jurisdiction", "5363210")
	TownOfDeKalbNY   = events.GeoID("jurisdiction", "3620214")
	SedroWoolleyLake = events.GeoID("city", "1840099999")
)

// CompactEvents are the places of the joined-name scenario.
func CompactEvents(t *testing.T) []events.Envelope {
	loc := func(id string, l events.Location) events.Envelope { return placeEnv(t, id, l) }
	return []events.Envelope{
		loc(DeKalbCity, events.Location{GeoType: "city", Name: "DeKalb", DisplayName: "DeKalb, IL", State: "IL", StateName: "Illinois",
			City: "DeKalb", County: "DeKalb County", Lat: 41.93, Lon: -88.75, Population: 40000, Incorporated: true}),
		loc(DeKalbJur, events.Location{GeoType: "jurisdiction", Name: "City of DeKalb", DisplayName: "City of DeKalb, IL", State: "IL",
			StateName: "Illinois", City: "DeKalb", Jurisdiction: "City of DeKalb", Lat: 41.93, Lon: -88.75, Population: 40000, Incorporated: true}),
		loc(DeKalbCounty, events.Location{GeoType: "county", Name: "DeKalb County", DisplayName: "DeKalb County, IL", State: "IL",
			StateName: "Illinois", County: "DeKalb County", Lat: 41.89, Lon: -88.77, Population: 100000}),
		loc(TownOfDeKalbNY, events.Location{GeoType: "jurisdiction", Name: "Town of De Kalb", DisplayName: "Town of De Kalb, NY", State: "NY",
			StateName: "New York", Jurisdiction: "Town of De Kalb", Lat: 44.48, Lon: -75.38, Population: 2400, Incorporated: true}),
		loc(SedroWoolley, events.Location{GeoType: "city", Name: "Sedro-Woolley", DisplayName: "Sedro-Woolley, WA", State: "WA", StateName: "Washington",
			City: "Sedro-Woolley", County: "Skagit County", Lat: 48.50, Lon: -122.24, Population: 12000, Incorporated: true}),
		loc(SedroWoolleyJur, events.Location{GeoType: "jurisdiction", Name: "City of Sedro-Woolley", DisplayName: "City of Sedro-Woolley, WA",
			State: "WA", StateName: "Washington", City: "Sedro-Woolley", Jurisdiction: "City of Sedro-Woolley", Lat: 48.50, Lon: -122.24,
			Population: 12000, Incorporated: true}),
		loc(SedroWoolleyLake, events.Location{GeoType: "city", Name: "Sedro Woolley Lake", DisplayName: "Sedro Woolley Lake, WA", State: "WA",
			StateName: "Washington", City: "Sedro Woolley Lake", Lat: 48.52, Lon: -122.20, Population: 300, Incorporated: true}),
	}
}

// resolveCompact: for each joined or split spelling, a backend answers
// the candidates the reference index (package resolve, the memory
// backend's) answers over the same locations: the same places, scores,
// methods and decisions, in the same order.
func resolveCompact(t *testing.T, e *Env) {
	e.Require(t, CapResolve)
	e.Load(t, LocationEvents(t)...)
	e.Load(t, CompactEvents(t)...)
	ref := resolve.New()
	for _, l := range e.Locations {
		ref.Upsert(l)
	}
	for _, tc := range []struct {
		q    readmodel.ResolveQuery
		must []string // places the answer must hold (the case's point)
	}{
		{readmodel.ResolveQuery{Text: "De Kalb"}, []string{DeKalbCity, DeKalbJur}},
		{readmodel.ResolveQuery{Text: "De Kalb, IL"}, []string{DeKalbCity, DeKalbJur}},
		{readmodel.ResolveQuery{Text: "De Kalb", GeoType: readmodel.GeoJurisdiction}, []string{DeKalbJur}},
		{readmodel.ResolveQuery{Text: "Dekalb"}, []string{DeKalbCity, DeKalbJur}},
		{readmodel.ResolveQuery{Text: "Dekalb County"}, []string{DeKalbCounty}},
		{readmodel.ResolveQuery{Text: "Sedrowoolley"}, []string{SedroWoolley, SedroWoolleyJur}},
		{readmodel.ResolveQuery{Text: "Sedrowoolley", GeoType: readmodel.GeoJurisdiction}, []string{SedroWoolleyJur}},
		{readmodel.ResolveQuery{Text: "Sedro Woolley, WA"}, []string{SedroWoolley}},
		{readmodel.ResolveQuery{Text: "City of Sedro-Woolley"}, []string{SedroWoolleyJur}},
		{readmodel.ResolveQuery{Text: "Sedro Wool"}, []string{SedroWoolley}},
	} {
		tc.q.Limit = 10
		want := ref.Search(tc.q)
		got := resolveTop(t, e, tc.q)
		require.Equal(t, candidateKeys(want), candidateKeys(got), "resolve %q (%s)", tc.q.Text, tc.q.GeoType)
		for _, id := range tc.must {
			require.Contains(t, candidateKeys(got), id, "resolve %q (%s) answers %s", tc.q.Text, tc.q.GeoType, id)
		}
	}
}

// candidateKeys are the geo ids of cs, with score, method and decision
// after each.
func candidateKeys(cs []readmodel.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Location.GeoID, fmt.Sprintf("%.6f %s %s", c.Score, c.MatchMethod, c.Decision))
	}
	return out
}
