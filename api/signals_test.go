package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/signals"
	"github.com/stretchr/testify/require"
)

var sigNow = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// sigGeo are the fixture's geo_ids.
var sigGeo = struct{ state, county, jur, city, zipA, zipB, zipC, other string }{
	state:  events.GeoID("state", "WA"),
	county: events.GeoID("county", "53033"),
	jur:    events.GeoID("jurisdiction", "city:1840021117"),
	city:   events.GeoID("city", "1840021117"),
	zipA:   events.GeoID("zip", "98101"),
	zipB:   events.GeoID("zip", "98102"),
	zipC:   events.GeoID("zip", "98052"),
	other:  events.GeoID("county", "53061"),
}

func sigLocations() []events.Envelope {
	g := sigGeo
	base := events.Location{State: "WA", StateName: "Washington", StateGeoID: g.state, Lat: 47.6, Lon: -122.3}
	loc := func(t, id string, mod func(*events.Location)) events.Envelope {
		d := base
		mod(&d)
		return apitest.Location(t, id, d, 1)
	}
	return []events.Envelope{
		loc("state", "WA", func(l *events.Location) { l.Name, l.DisplayName, l.StateGeoID = "Washington", "Washington", "" }),
		loc("county", "53033", func(l *events.Location) {
			l.Name, l.DisplayName, l.County, l.Jurisdiction = "King County", "King County, WA", "King County", "King County"
		}),
		loc("county", "53061", func(l *events.Location) {
			l.Name, l.DisplayName, l.County, l.Jurisdiction = "Snohomish County", "Snohomish County, WA", "Snohomish County", "Snohomish County"
		}),
		loc("jurisdiction", "city:1840021117", func(l *events.Location) {
			l.Name, l.DisplayName, l.County, l.City, l.Jurisdiction, l.CountyGeoID = "City of Seattle", "City of Seattle, WA", "King County", "Seattle", "City of Seattle", g.county
		}),
		loc("city", "1840021117", func(l *events.Location) {
			l.Name, l.DisplayName, l.County, l.City, l.Jurisdiction = "Seattle", "Seattle, WA", "King County", "Seattle", "City of Seattle"
			l.CountyGeoID, l.JurisdictionGeoID = g.county, g.jur
		}),
		loc("zip", "98101", func(l *events.Location) {
			l.Name, l.DisplayName, l.County, l.City, l.Zipcode, l.Jurisdiction = "98101", "98101 (Seattle, WA)", "King County", "Seattle", "98101", "City of Seattle"
			l.CountyGeoID, l.CityGeoID, l.JurisdictionGeoID = g.county, g.city, g.jur
		}),
		loc("zip", "98102", func(l *events.Location) {
			l.Name, l.DisplayName, l.County, l.City, l.Zipcode, l.Jurisdiction = "98102", "98102 (Seattle, WA)", "King County", "Seattle", "98102", "City of Seattle"
			l.CountyGeoID, l.CityGeoID, l.JurisdictionGeoID = g.county, g.city, g.jur
		}),
		loc("zip", "98052", func(l *events.Location) {
			l.Name, l.DisplayName, l.County, l.City, l.Zipcode, l.Jurisdiction = "98052", "98052 (Redmond, WA)", "King County", "Redmond", "98052", "King County"
			l.CountyGeoID = g.county
		}),
	}
}

// sigPermits makes n random permits over the fixture's ZIPs, issued over
// the three years before sigNow.
func sigPermits(n int, seed uint64) []events.Envelope {
	r := rand.New(rand.NewPCG(seed, 7))
	works := []struct{ work, desc string }{
		{"New Construction", "Construct new single family residence"},
		{"Addition/Alteration", "Alterations to existing building"},
		{"Demolition", "Demolish existing structure"},
		{"Grading/Site Prep", "Grading and excavation"},
		{"Mechanical/Electrical/Plumbing", "Replace furnace"},
		{"", "Construction of a new 4-story apartment building"},
	}
	zips := []struct{ zip, city string }{{"98101", "Seattle"}, {"98102", "SEATTLE"}, {"98052", "Redmond"}, {"", "Seattle"}, {"99999", ""}}
	var out []events.Envelope
	for i := range n {
		w := works[r.IntN(len(works))]
		z := zips[r.IntN(len(zips))]
		p := events.Permit{
			PermitNumber: fmt.Sprintf("T%05d", i),
			PermitType:   "Building",
			WorkType:     w.work,
			Description:  w.desc,
			Status:       []string{"Issued", "Completed", "Expired", "Issued"}[r.IntN(4)],
			Address:      events.PermitAddress{Line: fmt.Sprintf("%d PINE ST", 100+i), City: z.city, State: "WA", Zipcode: z.zip},
			Source:       "test",
		}
		if r.IntN(20) > 0 {
			p.IssueDate = sigNow.AddDate(0, 0, -r.IntN(3*365)).Format(time.DateOnly)
		}
		if r.IntN(4) > 0 {
			v := float64(10_000 + r.IntN(3_000_000))
			p.Valuation = &v
		}
		if r.IntN(2) == 0 {
			lat, lon := 47.6+r.Float64()/10, -122.3-r.Float64()/10
			p.Lat, p.Lon = &lat, &lon
		}
		env, err := events.New(events.PermitUpserted, events.PermitDocID("test", p.PermitNumber), 1, sigNow, "test", p)
		if err != nil {
			panic(err)
		}
		out = append(out, env)
	}
	return out
}

// signalHarness publishes the fixture's locations and the signal events
// the reference pipeline derives from n random permits.
func signalHarness(t testing.TB, n int) *apitest.Harness {
	t.Helper()
	h := apitest.New(t, apitest.Params{Now: sigNow})
	locs := sigLocations()
	h.Publish(locs...)
	var out []events.Envelope
	pl, err := signals.New(signals.Params{AsOf: sigNow}, func(e events.Envelope) error { out = append(out, e); return nil })
	require.NoError(t, err)
	for _, e := range append(locs, sigPermits(n, 1)...) {
		require.NoError(t, pl.Add(e))
	}
	_, err = pl.Finish(t.Context())
	require.NoError(t, err)
	for i := 0; i < len(out); i += 500 {
		h.Publish(out[i:min(i+500, len(out))]...)
	}
	return h
}

type leadsBody struct {
	GeoID            string            `json:"geo_id"`
	GeoType          *string           `json:"geo_type"`
	SignalKeys       []string          `json:"signal_keys"`
	MaxFreshnessDays *int              `json:"max_freshness_days"`
	Count            int               `json:"count"`
	NextCursor       *string           `json:"next_cursor"`
	Leads            []json.RawMessage `json:"leads"`
	Groups           []struct {
		Key   string            `json:"key"`
		Count int               `json:"count"`
		Leads []json.RawMessage `json:"leads"`
	} `json:"groups"`
}

type leadBody struct {
	LeadID           string   `json:"lead_id"`
	SignalKey        string   `json:"signal_key"`
	EventDateUsed    *string  `json:"event_date_used"`
	Confidence       *float64 `json:"confidence"`
	FreshnessLagDays *int     `json:"freshness_lag_days"`
	Location         struct {
		CityNorm    *string `json:"city_norm"`
		ZipcodeNorm *string `json:"zipcode_norm"`
	} `json:"location"`
}

type statsBody struct {
	TotalActiveLeads int64 `json:"total_active_leads"`
	MaxFreshnessDays *int  `json:"max_freshness_days"`
	SignalsBreakdown []struct {
		SignalKey string `json:"signal_key"`
		Count     int64  `json:"count"`
	} `json:"signals_breakdown"`
	TopCities []struct {
		Value string `json:"value"`
		Count int64  `json:"count"`
	} `json:"top_cities"`
	Confidence map[string]int64 `json:"confidence_distribution"`
	Freshness  map[string]int64 `json:"freshness_distribution"`
}

func leadOrdered(a, b leadBody, sortBy string) bool {
	date := func(l leadBody) string {
		if l.EventDateUsed == nil {
			return ""
		}
		return *l.EventDateUsed
	}
	conf := func(l leadBody) float64 {
		if l.Confidence == nil {
			return -1
		}
		return *l.Confidence
	}
	if sortBy == "confidence_desc" {
		if conf(a) != conf(b) {
			return conf(a) > conf(b)
		}
		if date(a) != date(b) {
			return date(a) > date(b)
		}
		return a.LeadID < b.LeadID
	}
	if date(a) != date(b) {
		return date(a) > date(b)
	}
	if conf(a) != conf(b) {
		return conf(a) > conf(b)
	}
	return a.LeadID < b.LeadID
}

func TestPermitLeadsDefaultsAndGroups(t *testing.T) {
	h := signalHarness(t, 600)
	res := h.Get("/v1/signals/permit/leads?geo_id=" + sigGeo.city)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var b leadsBody
	res.JSON(t, &b)
	require.Equal(t, 60, *b.MaxFreshnessDays)
	require.Equal(t, events.PermitSignalKeys, b.SignalKeys)
	require.Equal(t, "city", *b.GeoType)
	require.NotZero(t, b.Count, "the fixture has fresh leads in Seattle")
	for _, raw := range b.Leads {
		var l leadBody
		require.NoError(t, json.Unmarshal(raw, &l))
		require.LessOrEqual(t, *l.FreshnessLagDays, 60)
	}

	res = h.Get("/v1/signals/permit/leads?include_stale=true&geo_id=" + sigGeo.county)
	res.JSON(t, &b)
	require.Nil(t, b.MaxFreshnessDays)
	res = h.Get("/v1/signals/permit/leads?include_stale=true&max_freshness_days=90&geo_id=" + sigGeo.county)
	b = leadsBody{}
	res.JSON(t, &b)
	require.Equal(t, 90, *b.MaxFreshnessDays)

	for _, by := range []string{"city", "zip"} {
		ungrouped := h.Get("/v1/signals/permit/leads?include_stale=true&limit=50&geo_id=" + sigGeo.county)
		var u leadsBody
		ungrouped.JSON(t, &u)
		res := h.Get("/v1/signals/permit/leads?include_stale=true&limit=50&group_by=" + by + "&geo_id=" + sigGeo.county)
		require.Equal(t, http.StatusOK, res.Status)
		var g leadsBody
		res.JSON(t, &g)
		require.Nil(t, g.Leads)
		require.Equal(t, u.Count, g.Count)
		require.Equal(t, *u.NextCursor, *g.NextCursor)
		n := 0
		for i, grp := range g.Groups {
			require.Equal(t, len(grp.Leads), grp.Count)
			n += grp.Count
			if i > 0 {
				prev := g.Groups[i-1]
				require.True(t, prev.Count > grp.Count || prev.Count == grp.Count && prev.Key < grp.Key)
			}
			for _, raw := range grp.Leads {
				var l leadBody
				require.NoError(t, json.Unmarshal(raw, &l))
				key := l.Location.CityNorm
				if by == "zip" {
					key = l.Location.ZipcodeNorm
				}
				want := "unknown"
				if key != nil {
					want = *key
				}
				require.Equal(t, want, grp.Key)
			}
		}
		require.Equal(t, g.Count, n)
	}
}

func TestPermitLeadsValidation(t *testing.T) {
	h := signalHarness(t, 50)
	first := h.Get("/v1/signals/permit/leads?include_stale=true&limit=1&geo_id=" + sigGeo.state)
	var b leadsBody
	first.JSON(t, &b)
	require.NotNil(t, b.NextCursor)
	cases := []struct {
		name, path string
		status     int
		param      string
	}{
		{"missing geo_id", "/v1/signals/permit/leads", 422, "geo_id"},
		{"unknown geo_id", "/v1/signals/permit/leads?geo_id=gnothere", 404, ""},
		{"freshness zero", "/v1/signals/permit/leads?max_freshness_days=0&geo_id=" + sigGeo.city, 422, "max_freshness_days"},
		{"freshness too big", "/v1/signals/permit/leads?max_freshness_days=3651&geo_id=" + sigGeo.city, 422, "max_freshness_days"},
		{"freshness text", "/v1/signals/permit/leads?max_freshness_days=abc&geo_id=" + sigGeo.city, 422, "max_freshness_days"},
		{"stale bad", "/v1/signals/permit/leads?include_stale=maybe&geo_id=" + sigGeo.city, 422, "include_stale"},
		{"unknown key", "/v1/signals/permit/leads?signal_keys=foo&geo_id=" + sigGeo.city, 422, "signal_keys"},
		{"bad sort", "/v1/signals/permit/leads?sort=asc&geo_id=" + sigGeo.city, 422, "sort"},
		{"bad group", "/v1/signals/permit/leads?group_by=county&geo_id=" + sigGeo.city, 422, "group_by"},
		{"bad date", "/v1/signals/permit/leads?from_date=2024-13-40&geo_id=" + sigGeo.city, 422, "from_date"},
		{"dates reversed", "/v1/signals/permit/leads?from_date=2025-02-01&to_date=2025-01-01&geo_id=" + sigGeo.city, 422, "from_date"},
		{"min_confidence", "/v1/signals/permit/leads?min_confidence=1.5&geo_id=" + sigGeo.city, 422, "min_confidence"},
		{"limit", "/v1/signals/permit/leads?limit=101&geo_id=" + sigGeo.city, 422, "limit"},
		{"tampered cursor", "/v1/signals/permit/leads?include_stale=true&geo_id=" + sigGeo.state + "&cursor=" + url.QueryEscape(*b.NextCursor+"x"), 422, "cursor"},
		{"foreign cursor", "/v1/signals/permit/leads?geo_id=" + sigGeo.state + "&cursor=" + url.QueryEscape(*b.NextCursor), 422, "cursor"},
		{"garbage cursor", "/v1/signals/permit/leads?geo_id=" + sigGeo.state + "&cursor=abc", 422, "cursor"},
		{"stats freshness", "/v1/signals/permit/stats?max_freshness_days=-1&geo_id=" + sigGeo.city, 422, "max_freshness_days"},
		{"stats unknown", "/v1/signals/permit/stats?geo_id=gnothere", 404, ""},
		{"twice", "/v1/signals/permit/stats?geo_id=" + sigGeo.city + "&geo_id=" + sigGeo.city, 422, "geo_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := h.Get(c.path)
			require.Equal(t, c.status, res.Status, "%s", res.Body)
			require.Contains(t, string(res.Body), c.param)
		})
	}
}

// TestEmptyUngroupedLeadsPageHasLeads: decisions.md says an ungrouped page
// has `leads` present; an empty page is no exception.
func TestEmptyUngroupedLeadsPageHasLeads(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	loc := apitest.Location("city", "1840021117", events.Location{
		Name: "Seattle", DisplayName: "Seattle, WA", State: "WA", StateName: "Washington",
		County: "King County", City: "Seattle", Lat: 47.6, Lon: -122.3,
	}, 1)
	h.Publish(loc)
	res := h.Get("/v1/signals/permit/leads?geo_id=" + loc.EntityID)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var body map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(res.Body, &body))
	require.Equal(t, "[]", string(body["leads"]), "%s", res.Body)
	_, grouped := body["groups"]
	require.False(t, grouped)
}
