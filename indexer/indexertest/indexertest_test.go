package indexertest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer/indexertest"
)

// Rejects names what the contract refuses and what the indexer
// dead-letters, and passes what it projects.
func TestRejects(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env := func(typ events.Type, id string, data any) events.Envelope {
		e, err := events.New(typ, id, 1, at, "test", data)
		require.NoError(t, err)
		return e
	}
	permit := events.Permit{PermitNumber: "1", PermitType: "Construction", Source: "test", IssueDate: "2025-01-02",
		Address: events.PermitAddress{Line: "1 MAIN ST", City: "Seattle", State: "WA", Zipcode: "98101"}}
	good := env(events.PermitUpserted, events.PermitDocID("test", "1"), permit)
	lead := events.Lead{
		SignalKey: "framing_window_late", PermitID: events.PermitDocID("test", "1"), PermitNumber: "1", EventDateUsed: "2025-12-01",
		SignalBasis: events.BasisInferredTiming, ReasonCodes: []string{"NEW_CONSTRUCTION"},
		Address:     events.LeadAddress{FullAddress: "1 MAIN ST", City: "SEATTLE", State: "WA", Zipcode: "98101"},
		AnchorGeoID: events.GeoID("zip", "98101"), SignalVersion: "1.0.0",
	}
	goodLead := env(events.LeadUpserted, events.LeadID(lead.PermitID, lead.SignalKey), lead)
	wa := env(events.LocationUpserted, events.GeoID("state", "WA"), events.Location{
		GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120,
	})
	require.Empty(t, indexertest.Rejects(t, []events.Envelope{good, goodLead, wa}))

	noNumber := permit
	noNumber.PermitNumber = " "
	blank := env(events.PermitUpserted, events.PermitDocID("test", " "), noNumber)
	// A lead id that is not its permit's and key's hash passes the
	// schema; indexer.Check refuses it.
	wrongID := env(events.LeadUpserted, events.LeadID(lead.PermitID, "framing_window_early"), lead)

	// Without its state's location, the good lead is what only the
	// indexer refuses: a dead letter.
	rejects := indexertest.Rejects(t, []events.Envelope{good, blank, goodLead, wrongID})
	require.Len(t, rejects, 3, "%+v", rejects)
	byIndex := map[int]indexertest.Reject{}
	for _, r := range rejects {
		byIndex[r.Index] = r
	}
	require.Contains(t, byIndex[1].Reason, "permit_number")
	require.Contains(t, byIndex[3].Reason, "LeadID")
	require.True(t, strings.HasPrefix(byIndex[2].Reason, "dead letter: "), byIndex[2].Reason)
	require.Contains(t, byIndex[2].Reason, `state "WA" are unknown`)
	require.Contains(t, byIndex[2].Event, events.LeadID(lead.PermitID, lead.SignalKey))
}
