package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
)

func rawOf(t testing.TB, env events.Envelope) []byte {
	t.Helper()
	raw, err := json.Marshal(env)
	require.NoError(t, err)
	return raw
}

// Check refuses what the projection refuses, each permit rule included,
// whether or not the schema says it too.
func TestCheckRefusesWhatTheProjectionRefuses(t *testing.T) {
	require.NoError(t, indexer.Check(rawOf(t, permitEnv(t, nil))))
	for name, mut := range permitRejects() {
		t.Run(name, func(t *testing.T) {
			err := indexer.Check(rawOf(t, rejectedPermit(t, name, mut)))
			require.True(t, errors.Is(err, events.ErrInvalid), "err %v, want ErrInvalid", err)
		})
	}
	t.Run("permit_type empty", func(t *testing.T) {
		err := indexer.Check(rawOf(t, rejectedPermit(t, "", func(p *events.Permit) { p.PermitType = "" })))
		require.ErrorIs(t, err, events.ErrInvalid)
		require.Contains(t, err.Error(), "permit_type")
	})
}

// Check cannot know which locations exist: a lead anchored to a ZIP and a
// state nobody published passes, one whose id is not its permit's and
// key's does not.
func TestCheckLeads(t *testing.T) {
	lead := events.Lead{
		SignalKey: "framing_window_late", PermitID: "src:1", PermitNumber: "1", EventDateUsed: "2025-12-01",
		SignalBasis: events.BasisInferredTiming, ReasonCodes: []string{"NEW_CONSTRUCTION"},
		Address:     events.LeadAddress{FullAddress: "1 MAIN ST", City: "NOWHERE", State: "ZZ", Zipcode: "00000"},
		AnchorGeoID: events.GeoID("zip", "00000"), SignalVersion: "1.0.0",
	}
	good := mustEnv(t, events.LeadUpserted, events.LeadID("src:1", lead.SignalKey), 1, lead)
	require.NoError(t, indexer.Check(rawOf(t, good)))
	err := indexer.Check(rawOf(t, mustEnv(t, events.LeadUpserted, events.LeadID("src:2", lead.SignalKey), 1, lead)))
	require.ErrorIs(t, err, events.ErrInvalid)
	require.NotErrorIs(t, err, indexer.ErrUnknownGeography)
	require.Contains(t, err.Error(), "LeadID")
	// The indexer, holding no location, refuses the good one for that
	// reason alone, and says which (ErrUnknownGeography).
	_, err = indexer.Project(context.Background(), good, lookupMap{})
	require.ErrorIs(t, err, events.ErrInvalid)
	require.ErrorIs(t, err, indexer.ErrUnknownGeography)
	require.Equal(t, `invalid event: lead anchor "`+lead.AnchorGeoID+`" and state "ZZ" are unknown`, err.Error())
}

// Check refuses what the schema refuses and what exceeds the indexer's
// message limit.
func TestCheckSchemaAndSize(t *testing.T) {
	require.ErrorIs(t, indexer.Check([]byte(`{"type":"permit.upserted"}`)), events.ErrInvalid)
	require.ErrorIs(t, indexer.Check([]byte(`not json`)), events.ErrInvalid)
	big := permitEnv(t, func(p *events.Permit) { p.Description = strings.Repeat("x", 1<<20) })
	err := indexer.Check(rawOf(t, big))
	require.ErrorIs(t, err, events.ErrInvalid)
	require.Contains(t, err.Error(), "exceeds")
}
