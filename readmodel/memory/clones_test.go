package memory

import (
	"encoding/json"
	"testing"
	"unsafe"

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

// TestCloneBatchMatchesClone: cloneBatch's arena copies equal the
// documents' Clone, share no memory with the caller's batch, and an
// append to one copied slice never writes into the next document's.
func TestCloneBatchMatchesClone(t *testing.T) {
	v, la, lo := 1000.0, 47.6, -122.3
	link := func(id string) readmodel.GeoLink {
		return readmodel.GeoLink{GeoID: id, GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "source_zip"}
	}
	b := readmodel.Batch{
		Permits: []readmodel.Permit{
			{PermitID: "s:1", Valuation: &v, Lat: &la, Lon: &lo, GeoLinks: []readmodel.GeoLink{link("z1"), link("c1")}},
			{PermitID: "s:2", GeoLinks: []readmodel.GeoLink{}},
			{PermitID: "s:3", Lon: &lo, GeoLinks: []readmodel.GeoLink{link("z2")}},
		},
		Properties: []readmodel.Property{
			{PropertyID: "p1", Lat: &la, GeoLinks: []readmodel.GeoLink{link("z3")}},
			{PropertyID: "p2", Lat: &la, Lon: &lo},
		},
		Locations: []readmodel.Location{
			{GeoID: "a", CountyGeoIDs: []string{"c1", "c2"}, Aliases: []string{"x"}},
			{GeoID: "b", CountyGeoIDs: []string{}},
			{GeoID: "c", Aliases: []string{"y", "z"}},
		},
		Leads: []readmodel.Lead{
			{LeadID: "l1", Confidence: &v, ReasonCodes: []string{"r1"}, GeoIDs: []string{"g1", "g2"}},
			{LeadID: "l2", ReasonCodes: []string{}},
			{LeadID: "l3", Confidence: &la, GeoIDs: []string{"g3"}},
		},
	}
	got := cloneBatch(&b)
	for i := range b.Leads {
		require.Equal(t, b.Leads[i].Clone(), got.Leads[i])
	}
	// The leads' confidences in the batch's arena, after the properties'
	// numbers: no allocation of their own.
	next := func(f *float64) *float64 { return (*float64)(unsafe.Add(unsafe.Pointer(f), 8)) }
	require.Same(t, next(got.Properties[1].Lon), got.Leads[0].Confidence)
	require.Same(t, next(got.Leads[0].Confidence), got.Leads[2].Confidence)
	*got.Leads[0].Confidence = -2
	require.Equal(t, 1000.0, v)
	require.Equal(t, la, *got.Leads[2].Confidence)
	for i := range b.Permits {
		require.Equal(t, b.Permits[i].Clone(), got.Permits[i])
	}
	for i := range b.Properties {
		require.Equal(t, b.Properties[i].Clone(), got.Properties[i])
	}
	for i := range b.Locations {
		require.Equal(t, b.Locations[i].Clone(), got.Locations[i])
	}
	*got.Permits[0].Valuation = -1
	got.Permits[0].GeoLinks[0].GeoID = "X"
	require.Equal(t, 1000.0, v)
	require.Equal(t, "z1", b.Permits[0].GeoLinks[0].GeoID)
	require.Equal(t, lo, *got.Permits[2].Lon)
	got.Permits[0].GeoLinks = append(got.Permits[0].GeoLinks, link("Y"))
	require.Equal(t, "z2", got.Permits[2].GeoLinks[0].GeoID)
	got.Properties[0].GeoLinks = append(got.Properties[0].GeoLinks, link("Y"))
	require.Equal(t, la, *got.Properties[1].Lat)
	got.Locations[0].Aliases = append(got.Locations[0].Aliases, "Y")
	require.Equal(t, []string{"y", "z"}, got.Locations[2].Aliases)
	got.Locations[0].CountyGeoIDs[0] = "Y"
	require.Equal(t, "c1", b.Locations[0].CountyGeoIDs[0])
}

// TestLocationsSharedBySides: both sides' location rows point at one
// document, and what a read hands out changes neither.
func TestLocationsSharedBySides(t *testing.T) {
	s := New(Params{})
	loc := readmodel.Location{GeoID: "zip:98101", GeoType: readmodel.GeoZip, Name: "98101", State: "WA", CountyGeoIDs: []string{"county:1"}, Version: 1}
	for v := int64(1); v <= 3; v++ { // each Apply brings the standby side up to date first
		loc.Version = v
		if v == 3 {
			loc.GeoID = "zip:98102"
		}
		_, err := s.Apply(t.Context(), readmodel.Batch{Locations: []readmodel.Location{loc}})
		require.NoError(t, err)
	}
	r0, ok0 := s.sides[0].locations.table.rows["zip:98101"]
	r1, ok1 := s.sides[1].locations.table.rows["zip:98101"]
	require.True(t, ok0 && ok1)
	require.Same(t, r0.doc, r1.doc)
	got, err := s.Location(t.Context(), readmodel.ParseGeoRef("zip:98101"))
	require.NoError(t, err)
	require.Equal(t, int64(2), got.Version)
	got.CountyGeoIDs[0] = "X"
	got.Name = "Y"
	again, err := s.Location(t.Context(), readmodel.ParseGeoRef("zip:98101"))
	require.NoError(t, err)
	require.Equal(t, "98101", again.Name)
	require.Equal(t, []string{"county:1"}, again.CountyGeoIDs)
}
