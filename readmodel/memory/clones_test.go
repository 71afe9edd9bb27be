package memory

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestPageClonesMatchClone: the page copies equal the documents' Clone,
// share no memory with them, and appending to one copied slice never
// writes into the next document's.
func TestPageClonesMatchClone(t *testing.T) {
	c1, c2 := 0.5, 0.75
	leads := []readmodel.Lead{
		{LeadID: "a", Confidence: &c1, ReasonCodes: []string{"r1", "r2"}, GeoIDs: []string{"g1"}},
		{LeadID: "b", ReasonCodes: []string{}, GeoIDs: nil},
		{LeadID: "c", Confidence: &c2, ReasonCodes: []string{"r3"}, GeoIDs: []string{"g2", "g3"}},
	}
	recs := make([]*leadRec, len(leads))
	for i := range leads {
		recs[i] = &leadRec{lead: leads[i]}
	}
	got := cloneLeadRecs(recs)
	require.Len(t, got, len(leads))
	for i := range leads {
		require.Equal(t, leads[i].Clone(), got[i])
	}
	got[0].ReasonCodes = append(got[0].ReasonCodes, "X")
	require.Equal(t, []string{"g1"}, got[0].GeoIDs)
	got[0].GeoIDs[0] = "Y"
	*got[0].Confidence = -1
	require.Equal(t, "a", got[0].LeadID)
	require.Equal(t, []string{"r3"}, got[2].ReasonCodes)
	require.Equal(t, []string{"g1"}, leads[0].GeoIDs)
	require.Equal(t, 0.5, c1)
	require.Equal(t, 0.75, *got[2].Confidence)
	require.NotNil(t, cloneLeadRecs(nil))

	gs := []*readmodel.GeoSignal{
		{GeoID: "x", Value: json.RawMessage(`{"a":1}`), Reasons: []string{"p", "q"}},
		{GeoID: "y", Value: json.RawMessage{}, Reasons: []string{}},
		{GeoID: "z", Value: json.RawMessage(`{}`), Reasons: []string{"s"}},
	}
	gc := cloneGeoSignals(gs)
	for i := range gs {
		require.Equal(t, gs[i].Clone(), gc[i])
	}
	gc[0].Value = append(gc[0].Value, '!')
	gc[0].Reasons = append(gc[0].Reasons, "X")
	require.Equal(t, json.RawMessage(`{}`), gc[2].Value)
	require.Equal(t, []string{"s"}, gc[2].Reasons)
	require.Equal(t, json.RawMessage(`{"a":1}`), gs[0].Value)
	require.NotNil(t, cloneGeoSignals(nil))

	for _, loc := range []readmodel.Location{
		{GeoID: "a", CountyGeoIDs: []string{"c1", "c2"}, Aliases: []string{"x"}},
		{GeoID: "b", CountyGeoIDs: []string{}, Aliases: nil},
	} {
		lc := cloneLocation(loc)
		require.Equal(t, loc.Clone(), lc)
		if len(lc.CountyGeoIDs) > 0 {
			lc.CountyGeoIDs = append(lc.CountyGeoIDs, "X")
			require.Equal(t, []string{"x"}, lc.Aliases)
			lc.CountyGeoIDs[0] = "Y"
			require.Equal(t, "c1", loc.CountyGeoIDs[0])
		}
	}
}
