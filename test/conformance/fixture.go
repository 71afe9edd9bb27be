package conformance

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
)

// Geographies of the fixture.
var (
	WA        = events.GeoID("state", "WA")
	OR        = events.GeoID("state", "OR")
	King      = events.GeoID("county", "53033")
	Skagit    = events.GeoID("county", "53057")
	Seattle   = events.GeoID("city", "1840021117")
	SeaJur    = events.GeoID("jurisdiction", "city:1840021117")
	Bellevue  = events.GeoID("city", "1840018417")
	BelJur    = events.GeoID("jurisdiction", "city:1840018417")
	MtVernon  = events.GeoID("city", "1840019786")
	Portland  = events.GeoID("city", "1840019941")
	Zip98101  = events.GeoID("zip", "98101")
	Zip98104  = events.GeoID("zip", "98104")
	Zip98004  = events.GeoID("zip", "98004")
	Unknown   = events.GeoID("zip", "00000")
	PropUniv  = events.PropertyID("addr:600 UNIVERSITY ST|SEATTLE|WA")
	PropSecnd = events.PropertyID("addr:1301 2ND AVE|SEATTLE|WA")
	PropBel   = events.PropertyID("addr:500 108TH AVE NE|BELLEVUE|WA")
)

// Today is the fixture's service date.
const Today = "2026-06-30"

var t0 = time.Date(2026, 6, 30, 0, 0, 0, 0, time.UTC)

func mustEnv(t testing.TB, typ events.Type, id string, v int64, data any) events.Envelope {
	t.Helper()
	env, err := events.New(typ, id, v, t0, "conformance", data)
	require.NoError(t, err)
	return env
}

// placeEnv is the version 1 upsert of a place; a place below a state
// without a StateGeoID gets its state's.
func placeEnv(t testing.TB, id string, l events.Location) events.Envelope {
	t.Helper()
	if l.StateGeoID == "" && l.GeoType != "state" {
		l.StateGeoID = events.GeoID("state", l.State)
	}
	return mustEnv(t, events.LocationUpserted, id, 1, l)
}

// LocationEvents are the fixture's gazetteer, parents first.
func LocationEvents(t testing.TB) []events.Envelope {
	wa := events.Location{State: "WA", StateName: "Washington"}
	loc := func(id string, l events.Location) events.Envelope {
		if l.State == "" {
			l.State, l.StateName = wa.State, wa.StateName
		}
		return placeEnv(t, id, l)
	}
	return []events.Envelope{
		loc(WA, events.Location{GeoType: "state", Name: "Washington", DisplayName: "Washington", Lat: 47.4, Lon: -120.5, Population: 7700000}),
		loc(OR, events.Location{GeoType: "state", Name: "Oregon", DisplayName: "Oregon", State: "OR", StateName: "Oregon", Lat: 44, Lon: -120.5, Population: 4200000}),
		loc(King, events.Location{GeoType: "county", Name: "King County", DisplayName: "King County, WA", FullAddress: "King County, WA", County: "King County", Lat: 47.49, Lon: -121.83, Population: 2250000}),
		loc(Skagit, events.Location{GeoType: "county", Name: "Skagit County", DisplayName: "Skagit County, WA", County: "Skagit County", Lat: 48.48, Lon: -121.8, Population: 130000}),
		loc(Seattle, events.Location{GeoType: "city", Name: "Seattle", DisplayName: "Seattle, WA", FullAddress: "Seattle, King County, WA", County: "King County", City: "Seattle",
			Jurisdiction: "City of Seattle", CountyGeoID: King, JurisdictionGeoID: SeaJur, Lat: 47.6062, Lon: -122.3321, Population: 737015, Incorporated: true}),
		loc(SeaJur, events.Location{GeoType: "jurisdiction", Name: "City of Seattle", DisplayName: "City of Seattle, WA", County: "King County", City: "Seattle",
			Jurisdiction: "City of Seattle", CountyGeoID: King, CityGeoID: Seattle, Lat: 47.6062, Lon: -122.3321, Population: 737015}),
		loc(Bellevue, events.Location{GeoType: "city", Name: "Bellevue", DisplayName: "Bellevue, WA", County: "King County", City: "Bellevue",
			Jurisdiction: "City of Bellevue", CountyGeoID: King, JurisdictionGeoID: BelJur, Lat: 47.61, Lon: -122.2, Population: 151854, Incorporated: true}),
		loc(BelJur, events.Location{GeoType: "jurisdiction", Name: "City of Bellevue", DisplayName: "City of Bellevue, WA", County: "King County", City: "Bellevue",
			Jurisdiction: "City of Bellevue", CountyGeoID: King, CityGeoID: Bellevue, Lat: 47.61, Lon: -122.2, Population: 151854}),
		loc(MtVernon, events.Location{GeoType: "city", Name: "Mt Vernon", DisplayName: "Mt Vernon, WA", County: "Skagit County", City: "Mt Vernon",
			Aliases: []string{"Mount Vernon"}, CountyGeoID: Skagit, Lat: 48.42, Lon: -122.33, Population: 35219, Incorporated: true}),
		loc(Portland, events.Location{GeoType: "city", Name: "Portland", DisplayName: "Portland, OR", State: "OR", StateName: "Oregon", County: "Multnomah County", City: "Portland",
			Lat: 45.5, Lon: -122.65, Population: 652503, Incorporated: true}),
		loc(Zip98101, zip("98101", "Seattle", Seattle, SeaJur, "City of Seattle")),
		loc(Zip98104, zip("98104", "Seattle", Seattle, SeaJur, "City of Seattle")),
		loc(Zip98004, zip("98004", "Bellevue", Bellevue, BelJur, "City of Bellevue")),
	}
}

func zip(code, city, cityID, jurID, jur string) events.Location {
	return events.Location{GeoType: "zip", Name: code, DisplayName: code + " (" + city + ", WA)", County: "King County", City: city, Zipcode: code,
		Jurisdiction: jur, CountyGeoID: King, CountyGeoIDs: []string{King}, CityGeoID: cityID, JurisdictionGeoID: jurID, Lat: 47.6, Lon: -122.3}
}

// PropertyEvents are three properties.
func PropertyEvents(t testing.TB) []events.Envelope {
	lat, lon := 47.6097, -122.3331
	p := func(id, norm, city, zip string) events.Envelope {
		return mustEnv(t, events.PropertyUpserted, id, 1, events.Property{
			CanonicalAddress: fmt.Sprintf("%s, %s, WA %s", norm, city, zip), NormalizedAddress: norm,
			City: city, State: "WA", Zipcode: zip, Lat: &lat, Lon: &lon,
		})
	}
	return []events.Envelope{
		p(PropUniv, "600 UNIVERSITY ST", "SEATTLE", "98101"),
		p(PropSecnd, "1301 2ND AVE", "SEATTLE", "98101"),
		p(PropBel, "500 108TH AVE NE", "BELLEVUE", "98004"),
	}
}

// PermitEvents are 40 permits over three ZIPs: issue dates from a dozen
// days (ties within a day), five undated, some on the properties.
func PermitEvents(t testing.TB) []events.Envelope {
	r := rand.New(rand.NewPCG(7, 7))
	days := []string{"2024-01-05", "2024-01-05", "2024-02-10", "2024-03-15", "2024-03-15", "2024-03-15", "2024-06-01", "2024-12-31", "2025-01-01", "2025-05-05", "2025-07-07", "2026-01-02"}
	zips := []string{"98101", "98104", "98004"}
	var out []events.Envelope
	for i := range 40 {
		z := zips[r.IntN(len(zips))]
		issue := days[r.IntN(len(days))]
		if i%8 == 3 {
			issue = ""
		}
		city, prop := "Seattle", ""
		if z == "98004" {
			city = "Bellevue"
			if i%3 == 0 {
				prop = PropBel
			}
		} else if i%4 == 0 {
			prop = PropUniv
		} else if i%5 == 0 {
			prop = PropSecnd
		}
		v := float64(1000 * (i + 1))
		num := fmt.Sprintf("P%03d", i)
		d := events.Permit{
			PermitNumber: num, PermitType: "Building", WorkType: "New", Status: "Issued", IssueDate: issue,
			Description: "Permit " + num, Valuation: &v, Source: "conformance", PropertyID: prop,
			Address: events.PermitAddress{Line: fmt.Sprintf("%d Main St", 100+i), City: city, State: "WA", Zipcode: z, ZipSource: "source"},
		}
		out = append(out, mustEnv(t, events.PermitUpserted, events.PermitDocID("conformance", num), 1, d))
	}
	return out
}

// LeadEvents are 60 leads over the three ZIPs: dates around Today (some
// null, some equal), confidences with ties and nulls, three keys.
func LeadEvents(t testing.TB) []events.Envelope {
	r := rand.New(rand.NewPCG(11, 3))
	keys := []string{"site_prep_issued_nowcast", "framing_nowcast_early", "rough_in_window_late"}
	anchors := []string{Zip98101, Zip98104, Zip98004}
	cities := map[string]string{Zip98101: "Seattle", Zip98104: "Seattle", Zip98004: "Bellevue"}
	confs := []float64{0.3, 0.5, 0.5, 0.74, 0.75, 0.9, 0.9}
	var out []events.Envelope
	for i := range 60 {
		permitID := fmt.Sprintf("conformance:L%03d", i)
		key := keys[r.IntN(len(keys))]
		anchor := anchors[r.IntN(len(anchors))]
		d := events.Lead{
			SignalKey: key, PermitID: permitID, PermitNumber: fmt.Sprintf("L%03d", i), SignalBasis: events.BasisInferredTiming,
			ReasonCodes: []string{"ISSUED_RECENTLY"}, AnchorGeoID: anchor, SignalVersion: "v1",
			Address: events.LeadAddress{FullAddress: fmt.Sprintf("%d Pine St", i), City: cities[anchor], State: "WA"},
		}
		if i%9 != 4 {
			d.EventDateUsed = t0.AddDate(0, 0, -r.IntN(45)+3).Format(time.DateOnly)
		}
		if i%7 != 2 {
			c := confs[r.IntN(len(confs))]
			d.Confidence = &c
		}
		out = append(out, mustEnv(t, events.LeadUpserted, events.LeadID(permitID, key), 1000, d))
	}
	return out
}

// GeoSignalEvents are two keys over every WA city, ZIP and county, with
// score ties.
func GeoSignalEvents(t testing.TB) []events.Envelope {
	scores := []float64{0.9, 0.7, 0.7, 0.4, 0.2}
	decisions := []string{events.DecisionPositive, events.DecisionNeutral, events.DecisionNeutral, events.DecisionNegative, events.DecisionNegative}
	geos := []string{King, Skagit, Seattle, Bellevue, MtVernon, Zip98101, Zip98104, Zip98004, Portland}
	var out []events.Envelope
	for i, g := range geos {
		for j, key := range []string{"permit_velocity", "construction_momentum"} {
			k := (i + j) % len(scores)
			out = append(out, mustEnv(t, events.GeoSignalUpserted, events.GeoSignalID(g, key), t0.Unix(), events.GeoSignal{
				GeoID: g, SignalKey: key, Value: json.RawMessage(`{"n":1}`), Score: scores[k], Confidence: 0.6,
				Decision: decisions[k], Reasons: []string{"HIGH_VOLUME"}, ComputedAt: t0, SignalVersion: "v1",
			}))
		}
	}
	return out
}

// CatalogEvents are three WA entries (one inactive) and one OR entry.
func CatalogEvents(t testing.TB) []events.Envelope {
	c := func(state, key, family, status string) events.Envelope {
		return mustEnv(t, events.CatalogUpserted, events.CatalogID(state, key), 1, events.CatalogEntry{
			State: state, SignalKey: key, Family: family, ActiveSignalVersion: "v1", ActiveWeightsProfileID: "w1",
			Status: status, Spec: json.RawMessage(`{"unit":"score"}`),
		})
	}
	return []events.Envelope{
		c("WA", "permit_velocity", events.FamilyGeo, "active"),
		c("WA", "framing_nowcast_early", events.FamilyPermit, "active"),
		c("WA", "construction_momentum", events.FamilyGeo, "inactive"),
		c("OR", "permit_velocity", events.FamilyGeo, "active"),
	}
}

// AllEvents is the whole fixture in dependency order.
func AllEvents(t testing.TB) []events.Envelope {
	var out []events.Envelope
	out = append(out, LocationEvents(t)...)
	out = append(out, PropertyEvents(t)...)
	out = append(out, PermitEvents(t)...)
	out = append(out, LeadEvents(t)...)
	out = append(out, GeoSignalEvents(t)...)
	out = append(out, CatalogEvents(t)...)
	return out
}
