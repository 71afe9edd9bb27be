package signals

import (
	"context"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/indexertest"
)

// FuzzDerivedEventsAccepted runs the pipeline over Seattle's locations
// (and the permit's state's, as the gazetteer publishes every state) and
// a permit of any fields the indexer takes (indexer.Check: `permitd
// publish --dry-run`'s check), then a newer snapshot of it with
// other dates and work type, and checks that every event the pipeline
// writes (leads, their deletes, geo signals, the catalog) is one the
// indexer projects, never one it sends to the dead-letter topic
// (indexertest.Rejects). A permit the indexer refuses is outside what
// the pipeline reads, and passes.
//
//	go test -run '^$' -fuzz '^FuzzDerivedEventsAccepted$' -fuzztime 4m ./pipeline/signals/
func FuzzDerivedEventsAccepted(f *testing.F) {
	f.Add("SEA-1", "Construction", "New Construction", "New", "Issued", "2024-12-01", "2025-01-02", "", "2026-07-01",
		"Construct a building", 2_000_000.0, 4, "600 UNIVERSITY ST", "Seattle", "WA", "98101", 47.61, -122.33, int64(1),
		"Addition/Alteration", "2025-06-01", "2025-12-20")
	f.Add("2", "Demolition", "Demolition", "", "Completed", "", "2026-01-10", "2026-01-14", "",
		"", 0.0, 0, "1 MAIN ST", "", "wa", "98101-1234", 0.0, 0.0, int64(7),
		"New Construction", "2025-01-02", "")
	f.Add("x", "Mechanical", "Mechanical/Electrical/Plumbing", "", "", "", "2025-11-30", "", "",
		"rough-in", -1.0, -3, "", "SEATTLE", "OR", "", 91.0, 181.0, int64(1<<40),
		"", "", "2026-01-15")
	f.Add("9", "Construction", "New Construction", "", "Issued", "", "2025-01-02", "", "",
		"", 2_000_000.0, 0, "1 MAIN ST", "Portland", "OR", "97201", 45.5, -122.7, int64(1),
		"", "", "2026-01-15")
	f.Add("10", "Construction", "New Construction", "", "Issued", "", "2025-01-02", "", "",
		"", 2_000_000.0, 0, "1 MAIN ST", "Seattle", "WA", "98101", 47.61, -122.33, int64(1_700_000_000_000_000_000),
		"New Construction", "2025-01-02", "")
	locs := seattleLocations(f)
	f.Fuzz(func(t *testing.T, number, permitType, workType, actionType, status, applied, issued, completed, expires,
		description string, valuation float64, units int, line, city, state, zip string, lat, lon float64, version int64,
		workType2, issued2, completed2 string) {
		p := events.Permit{
			PermitNumber: number, PermitType: permitType, WorkType: workType, ActionType: actionType, Status: status,
			ApplicationDate: applied, IssueDate: issued, CompletionDate: completed, ExpirationDate: expires,
			Description: description, Address: events.PermitAddress{Line: line, City: city, State: state, Zipcode: zip},
			Source: "fuzz",
		}
		if valuation != 0 {
			p.Valuation = &valuation
		}
		if units != 0 {
			p.HousingUnits = &units
		}
		if lat != 0 || lon != 0 {
			p.Lat, p.Lon = &lat, &lon
		}
		first, ok := validPermit(p, version)
		if !ok {
			return
		}
		p.WorkType, p.IssueDate, p.CompletionDate = workType2, issued2, completed2
		second, ok := validPermit(p, version+1)
		in := append([]events.Envelope(nil), locs...)
		if state := p.Address.State; state != "WA" {
			// The gazetteer publishes every state before the rest, and
			// a lead falls back to its state's location: one whose
			// state is none of the gazetteer's is a dead letter by the
			// contract (docs/kafka.md, "Re-links").
			loc, err := events.New(events.LocationUpserted, events.GeoID("state", state), 1, asOf, "fuzz",
				events.Location{GeoType: "state", Name: state, DisplayName: state, State: state, StateName: state, Lat: 40, Lon: -100})
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, loc)
		}
		in = append(in, first)
		if ok && version+1 > version {
			in = append(in, second)
		}
		var out []events.Envelope
		pl, err := New(Params{AsOf: asOf}, func(e events.Envelope) error { out = append(out, e); return nil })
		if err != nil {
			t.Fatal(err)
		}
		for _, env := range in {
			if err := pl.Add(env); err != nil {
				t.Fatalf("a valid %s: %v", env.Type, err)
			}
		}
		if _, err := pl.Finish(context.Background()); err != nil {
			t.Fatal(err)
		}
		indexertest.Check(t, append(in, out...))
	})
}

// validPermit is p's event at version, and whether the indexer takes it.
func validPermit(p events.Permit, version int64) (events.Envelope, bool) {
	env, err := events.New(events.PermitUpserted, events.PermitDocID(p.Source, p.PermitNumber), version, asOf, p.Source, p)
	if err != nil {
		return env, false
	}
	raw, err := env.AppendJSON(nil)
	if err != nil {
		return env, false
	}
	return env, indexer.Check(raw) == nil
}

// seattleLocations is ZIP 98101's hierarchy: its state, county,
// jurisdiction, city and itself.
func seattleLocations(tb testing.TB) []events.Envelope {
	tb.Helper()
	state, county := events.GeoID("state", "WA"), events.GeoID("county", "53033")
	city, jur, zip := events.GeoID("city", "1840021117"), events.GeoID("jurisdiction", "city:1840021117"), events.GeoID("zip", "98101")
	hier := events.Location{State: "WA", StateName: "Washington", StateGeoID: state}
	with := func(l events.Location) events.Location {
		l.State, l.StateName, l.StateGeoID = hier.State, hier.StateName, hier.StateGeoID
		return l
	}
	locs := []struct {
		id  string
		loc events.Location
	}{
		{state, events.Location{GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120}},
		{county, with(events.Location{GeoType: "county", Name: "King County", DisplayName: "King County, WA", County: "King County", CountyGeoID: county, CountyGeoIDs: []string{county}, Lat: 47.49, Lon: -121.83})},
		{jur, with(events.Location{GeoType: "jurisdiction", Name: "City of Seattle", DisplayName: "City of Seattle, WA", County: "King County", CountyGeoID: county, CountyGeoIDs: []string{county}, City: "Seattle", CityGeoID: city, Jurisdiction: "City of Seattle", Lat: 47.62, Lon: -122.32})},
		{city, with(events.Location{GeoType: "city", Name: "Seattle", DisplayName: "Seattle, WA", County: "King County", CountyGeoID: county, CountyGeoIDs: []string{county}, City: "Seattle", Jurisdiction: "City of Seattle", JurisdictionGeoID: jur, Lat: 47.62, Lon: -122.32})},
		{zip, with(events.Location{GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)", County: "King County", CountyGeoID: county, CountyGeoIDs: []string{county}, City: "Seattle", CityGeoID: city, Zipcode: "98101", Jurisdiction: "City of Seattle", JurisdictionGeoID: jur, Lat: 47.61, Lon: -122.33})},
	}
	var out []events.Envelope
	for _, l := range locs {
		env, err := events.New(events.LocationUpserted, l.id, 1, asOf, "fuzz", l.loc)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}
