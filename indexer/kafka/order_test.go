package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestLocationsBeforeDependentTopics: a permit published before the
// locations it links to still ends fully linked after a replay. Replay
// mode holds the permits until the locations topic reached its start
// watermark, settles the indexer, and only then reports caught up.
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

	store := memory.New(memory.Params{})
	ix := newIndexer(t, store, nil)
	p := parserParams(b, "", ix)
	p.Settle = ix.Settle
	c := start(t, p)
	eventually(t, 20*time.Second, "caught up", c.CaughtUp)
	require.True(t, ix.Settled())
	require.Zero(t, ix.Progress().Parked)
	counts, err := store.Counts(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(2), counts[readmodel.KindPermit])

	page, err := store.SearchPermits(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zip), Desc: true, Limit: 5})
	require.NoError(t, err)
	require.Len(t, page.Permits, 1, "the permit is linked to the ZIP that arrived after it")
	require.Equal(t, zip, page.Permits[0].Match.GeoID)
}

// TestLocationsPublishedWhileRunning: locations and permits published
// while the consumer runs, after it has settled (the locations topic was
// empty at start). The permit is published after its ZIP but read first
// (the locations partitions are slow here); it still ends linked to the
// ZIP, because the batch waits for the locations published before it
// (AwaitLocations). A permit whose ZIP no location names is linked to
// its state (it is written, under no ZIP). Replay and group mode.
func TestLocationsPublishedWhileRunning(t *testing.T) {
	for _, group := range []string{"", "late-locations"} {
		name := "replay"
		if group != "" {
			name = "group"
		}
		t.Run(name, func(t *testing.T) {
			b := newBroker(t, 2)
			store := memory.New(memory.Params{})
			ix := newIndexer(t, store, nil)
			p := fastParams(b, group, func(ctx context.Context, msgs []indexer.Message) error {
				if msgs[0].Topic == locTopic {
					time.Sleep(20 * time.Millisecond) // the permit overtakes its ZIP
				}
				return ix.HandleBatch(ctx, msgs)
			})
			p.Settle = ix.Settle
			c := start(t, p, func(c *kafka.Consumer) { ix.SetLocationSource(c.AwaitLocations) })
			eventually(t, 20*time.Second, "caught up", c.CaughtUp)

			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			zip := events.GeoID("zip", "98101")
			zipLoc, err := events.New(events.LocationUpserted, zip, 1, at, "test", events.Location{
				GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)", State: "WA", StateName: "Washington",
				City: "Seattle", Zipcode: "98101", StateGeoID: events.GeoID("state", "WA"), Lat: 47.61, Lon: -122.33,
			})
			require.NoError(t, err)
			b.publish(append(locations(t, "filler", 2000, 1), zipLoc)...)
			orphan, err := events.New(events.PermitUpserted, events.PermitDocID("test", "P2"), 1, at, "test", events.Permit{
				PermitNumber: "P2", PermitType: "Building", IssueDate: "2025-01-02", Source: "test",
				Address: events.PermitAddress{Line: "1 MAIN ST", City: "NOWHERE", State: "WA", Zipcode: "99999", ZipSource: "source"},
			})
			require.NoError(t, err)
			b.publish(permit(t, "P1", 1), orphan)

			ctx := context.Background()
			eventually(t, 30*time.Second, "both permits and every location written", func() bool {
				counts, err := store.Counts(ctx)
				require.NoError(t, err)
				return counts[readmodel.KindPermit] == 2 && counts[readmodel.KindLocation] == 2001
			})
			page, err := store.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zip), Desc: true, Limit: 5})
			require.NoError(t, err)
			require.Len(t, page.Permits, 1, "the permit is linked to the ZIP published before it")
			require.Equal(t, zip, page.Permits[0].Match.GeoID)
			require.True(t, ix.Settled())
			require.Positive(t, ix.Progress().Awaited, "the permits waited for the locations topic")
			require.Zero(t, ix.Progress().Parked)
		})
	}
}

// TestReplayFetchesDependentTopicsAfterLocations: in replay mode a
// partition of a dependent topic is not fetched before the locations
// topic reached its start watermark. Its messages could not be handled
// before then, and a broker that serves requests in turn (or a client's
// fetch quota) would spend on them what the locations need first. While
// the locations are held, no fetch request names the permits topic, and
// the lag still counts the permits waiting; once released, everything is
// handled.
func TestReplayFetchesDependentTopicsAfterLocations(t *testing.T) {
	b := newBroker(t, 1)
	locs := locations(t, "l", 20, 1)
	b.publish(locs...)
	var permits []events.Envelope
	for i := range 30 {
		permits = append(permits, permit(t, fmt.Sprintf("P%d", i), 1))
	}
	b.publish(permits...)
	var mu sync.Mutex
	fetched := map[string]int{}
	b.cluster.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, tp := range req.(*kmsg.FetchRequest).Topics {
			fetched[tp.Topic]++
		}
		return nil, nil, false
	})
	fetches := func(topic string) int {
		mu.Lock()
		defer mu.Unlock()
		return fetched[topic]
	}
	var h handled
	x := newHolding(&h, locTopic)
	c := start(t, fastParams(b, "", x.handle))
	eventually(t, 10*time.Second, "a batch of locations held", x.held.Load)
	// The permits' readers would have fetched within milliseconds of the
	// start; give them ten times that.
	time.Sleep(300 * time.Millisecond)
	require.Zero(t, fetches(permitTopic), "the permits topic fetched while the locations are held")
	require.Positive(t, fetches(locTopic))
	require.Equal(t, int64(len(permits)+len(locs)), c.Lag(), "the lag counts every message waiting, the permits' included")
	close(x.release)
	eventually(t, 10*time.Second, "caught up", c.CaughtUp)
	require.Positive(t, fetches(permitTopic))
	require.Equal(t, len(permits), count(h.snapshot(), permitTopic))
}
