package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

type lookupMap map[string]readmodel.Location

func (m lookupMap) Location(_ context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	l, ok := m[geo.ID()]
	if !ok {
		return l, readmodel.ErrNotFound
	}
	return l, nil
}

func signalLookup() lookupMap {
	zip := readmodel.Location{
		GeoID: events.GeoID("zip", "98101"), GeoType: readmodel.GeoZip, DisplayName: "98101 (Seattle, WA)",
		State: "WA", County: "King County", City: "Seattle", Zipcode: "98101", Jurisdiction: "City of Seattle",
		StateGeoID: "gstate", CountyGeoID: "gcounty", CityGeoID: "gcity", JurisdictionGeoID: "gjur",
	}
	state := readmodel.Location{GeoID: events.GeoID("state", "WA"), GeoType: readmodel.GeoState, DisplayName: "Washington", State: "WA"}
	return lookupMap{zip.GeoID: zip, state.GeoID: state}
}

func mustEnv(t testing.TB, typ events.Type, id string, v int64, data any) events.Envelope {
	env, err := events.New(typ, id, v, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", data)
	require.NoError(t, err)
	return env
}

func TestProjectLead(t *testing.T) {
	conf := 0.8
	lat, lon := 47.61, -122.33
	lead := events.Lead{
		SignalKey: "framing_window_late", PermitID: "src:1", PermitNumber: "1", EventDateUsed: "2025-12-01",
		SignalBasis: events.BasisInferredTiming, Confidence: &conf, ReasonCodes: []string{"NEW_CONSTRUCTION"},
		Address: events.LeadAddress{FullAddress: "600 PINE ST", City: "SEATTLE", State: "WA", Zipcode: "98101-1234"},
		Lat:     &lat, Lon: &lon, AnchorGeoID: events.GeoID("zip", "98101"), SignalVersion: "1.0.0",
	}
	id := events.LeadID("src:1", "framing_window_late")
	b, err := indexer.Project(context.Background(), mustEnv(t, events.LeadUpserted, id, 7, lead), signalLookup())
	require.NoError(t, err)
	require.Len(t, b.Leads, 1)
	got := b.Leads[0]
	require.Equal(t, []string{events.GeoID("zip", "98101"), "gjur", "gcity", "gcounty", "gstate"}, got.GeoIDs)
	require.Equal(t, readmodel.LeadLocation{
		FullAddress: "600 PINE ST", City: "SEATTLE", State: "WA", Zipcode: "98101-1234", County: "King County",
		CityNorm: "seattle", ZipcodeNorm: "98101", CountyNorm: "king county",
	}, got.Location)
	require.Equal(t, "City of Seattle", got.Jurisdiction)
	require.Equal(t, int64(7), got.Version)
	require.Contains(t, got.MapsURL, "47.610000%2C-122.330000")

	// An unknown ZIP falls back to the state.
	lead.AnchorGeoID = events.GeoID("zip", "00000")
	b, err = indexer.Project(context.Background(), mustEnv(t, events.LeadUpserted, id, 8, lead), signalLookup())
	require.NoError(t, err)
	require.Equal(t, []string{events.GeoID("state", "WA")}, b.Leads[0].GeoIDs)

	bad := []struct {
		name string
		mod  func(l *events.Lead) string
	}{
		{"wrong id", func(l *events.Lead) string { return "lead_x" }},
		{"unknown key", func(l *events.Lead) string { l.SignalKey = "x"; return events.LeadID(l.PermitID, "x") }},
		{"basis", func(l *events.Lead) string { l.SignalBasis = "guess"; return id }},
		{"confidence", func(l *events.Lead) string { c := 1.5; l.Confidence = &c; return id }},
		{"reason case", func(l *events.Lead) string { l.ReasonCodes = []string{"lower"}; return id }},
		{"date", func(l *events.Lead) string { l.EventDateUsed = "2025-13-01"; return id }},
		{"no state", func(l *events.Lead) string { l.Address.State = ""; return id }},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			l := lead
			eid := c.mod(&l)
			_, err := indexer.Project(context.Background(), mustEnv(t, events.LeadUpserted, eid, 1, l), signalLookup())
			require.True(t, errors.Is(err, events.ErrInvalid), "%v", err)
		})
	}
}

func TestProjectGeoSignalAndCatalog(t *testing.T) {
	zip := events.GeoID("zip", "98101")
	g := events.GeoSignal{
		GeoID: zip, SignalKey: "permit_velocity", Value: json.RawMessage(`{"ratio":1.5}`), Score: 0.6, Confidence: 0.7,
		Decision: "positive", Reasons: []string{"VELOCITY_ABOVE_BASELINE"}, ComputedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), SignalVersion: "1.0.0",
	}
	b, err := indexer.Project(context.Background(), mustEnv(t, events.GeoSignalUpserted, events.GeoSignalID(zip, g.SignalKey), 9, g), signalLookup())
	require.NoError(t, err)
	require.Equal(t, readmodel.GeoZip, b.GeoSignals[0].GeoType)
	require.Equal(t, "98101 (Seattle, WA)", b.GeoSignals[0].DisplayName)
	require.Equal(t, "WA", b.GeoSignals[0].State)

	g.GeoID = "gunknown"
	_, err = indexer.Project(context.Background(), mustEnv(t, events.GeoSignalUpserted, events.GeoSignalID("gunknown", g.SignalKey), 9, g), signalLookup())
	require.ErrorIs(t, err, events.ErrInvalid)
	g.GeoID, g.Value = zip, json.RawMessage(`[1]`)
	_, err = indexer.Project(context.Background(), mustEnv(t, events.GeoSignalUpserted, events.GeoSignalID(zip, g.SignalKey), 9, g), signalLookup())
	require.ErrorIs(t, err, events.ErrInvalid)

	c := events.CatalogEntry{State: "WA", SignalKey: "permit_velocity", Family: "geo", ActiveSignalVersion: "1.0.0",
		ActiveWeightsProfileID: "w", Status: "active", Spec: json.RawMessage(`{"family":"geo"}`)}
	b, err = indexer.Project(context.Background(), mustEnv(t, events.CatalogUpserted, events.CatalogID("WA", c.SignalKey), 1, c), nil)
	require.NoError(t, err)
	require.Equal(t, "geo", b.Catalog[0].Family)
	c.Family = "other"
	_, err = indexer.Project(context.Background(), mustEnv(t, events.CatalogUpserted, events.CatalogID("WA", c.SignalKey), 1, c), nil)
	require.ErrorIs(t, err, events.ErrInvalid)
}
