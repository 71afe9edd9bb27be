package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestLocationsBeforeDependentTopics: a permit published before the
// locations it links to still ends fully linked after a replay. Replay
// mode lets every topic flow at once: the permit's projection misses its
// ZIP, waits inside the indexer, and is written when the ZIP arrives;
// the consumer settles the indexer once the locations topic reached its
// start watermark and only then reports caught up.
func TestLocationsBeforeDependentTopics(t *testing.T) {
	b := newBroker(t, 3)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	zip := events.GeoID("zip", "98101")
	permit, err := events.New(events.PermitUpserted, events.PermitDocID("test", "P1"), 1, at, "test", events.Permit{
		PermitNumber: "P1", PermitType: "Building", IssueDate: "2025-01-02", Source: "test",
		Address: events.PermitAddress{Line: "600 UNIVERSITY ST", City: "SEATTLE", State: "WA", Zipcode: "98101", ZipSource: "source"},
	})
	require.NoError(t, err)
	b.publish(permit)
	// A permit whose ZIP no location names: written at state level once
	// the locations are in, before the consumer reports caught up.
	orphan, err := events.New(events.PermitUpserted, events.PermitDocID("test", "P2"), 1, at, "test", events.Permit{
		PermitNumber: "P2", PermitType: "Building", IssueDate: "2025-01-02", Source: "test",
		Address: events.PermitAddress{Line: "1 MAIN ST", City: "NOWHERE", State: "WA", Zipcode: "99999", ZipSource: "source"},
	})
	require.NoError(t, err)
	b.publish(orphan)
	// Many locations ahead of the ZIP, so that without the order the
	// permit would be projected first.
	b.publish(locations(t, "filler", 3000, 1)...)
	zipLoc, err := events.New(events.LocationUpserted, zip, 1, at, "test", events.Location{
		GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)", State: "WA", StateName: "Washington",
		City: "Seattle", Zipcode: "98101", StateGeoID: events.GeoID("state", "WA"), Lat: 47.61, Lon: -122.33,
	})
	require.NoError(t, err)
	b.publish(zipLoc)

	store := memory.New(memory.Options{})
	ix := newIndexer(t, store, nil)
	p := fastParams(b, "", ix.HandleBatch)
	p.Settle = ix.Settle
	c := start(t, p)
	eventually(t, 20*time.Second, "caught up", c.CaughtUp)
	require.True(t, ix.Settled())
	require.Zero(t, ix.Progress().Parked)
	counts, err := store.Counts(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(2), counts[readmodel.KindPermit])

	page, err := store.SearchPermits(context.Background(), readmodel.PermitQuery{GeoID: zip, Desc: true, Limit: 5})
	require.NoError(t, err)
	require.Len(t, page.Permits, 1, "the permit is linked to the ZIP that arrived after it")
	require.Equal(t, zip, page.Permits[0].Match.GeoID)
}
