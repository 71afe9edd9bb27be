package indexer_test

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

// A permit's, a property's and a lead's ZIP, when it is their ZIP
// location's, is the location's own string (the memory backend finds it
// by its address), with the same value; a ZIP that differs keeps the
// event's.
func TestProjectionsTakeTheTablesZip(t *testing.T) {
	look := lookup98101()
	zip := look.locs[zip98101]
	zip.Zipcode = strings.Clone("98101")
	look.locs[zip98101] = zip
	same := func(a, b string) bool { return a == b && unsafe.StringData(a) == unsafe.StringData(b) }
	ctx := context.Background()

	b, err := indexer.Project(ctx, permitEnv(t, nil), look)
	require.NoError(t, err)
	require.Equal(t, "98101", b.Permits[0].Address.Zipcode)
	require.True(t, same(zip.Zipcode, b.Permits[0].Address.Zipcode), "the permit's ZIP is the table's")

	b, err = indexer.Project(ctx, propertyEnv(t, nil), look)
	require.NoError(t, err)
	require.True(t, same(zip.Zipcode, b.Properties[0].Zipcode), "the property's ZIP is the table's")

	lead := events.Lead{
		SignalKey: "framing_window_late", PermitID: "src:1", PermitNumber: "1", EventDateUsed: "2025-12-01",
		SignalBasis: events.BasisInferredTiming, ReasonCodes: []string{"NEW_CONSTRUCTION"},
		Address:     events.LeadAddress{FullAddress: "600 PINE ST", City: "SEATTLE", State: "WA", Zipcode: "98101-1234"},
		AnchorGeoID: zip98101, SignalVersion: "1.0.0",
	}
	b, err = indexer.Project(ctx, mustEnv(t, events.LeadUpserted, events.LeadID("src:1", "framing_window_late"), 1, lead), look)
	require.NoError(t, err)
	l := b.Leads[0].Location
	require.Equal(t, "98101-1234", l.Zipcode, "the lead keeps its own ZIP")
	require.True(t, same(zip.Zipcode, l.ZipcodeNorm), "its normalised ZIP is the table's")

	// Another ZIP than the location's stays the event's.
	b, err = indexer.Project(ctx, permitEnv(t, func(p *events.Permit) { p.Address.Zipcode = "98104" }), lookupMap{
		events.GeoID("zip", "98104"): readmodel.Location{GeoID: events.GeoID("zip", "98104"), GeoType: readmodel.GeoZip, Zipcode: "98101"},
	})
	require.NoError(t, err)
	require.Equal(t, "98104", b.Permits[0].Address.Zipcode)
}
