package indexer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
)

// orderPool is a small log: the locations the others link to (a state
// and two ZIPs), permits of several versions that move between the ZIPs,
// one in a ZIP no location names, one that moves out of it, one without
// a ZIP, a property of two versions and its delete, leads anchored to
// either ZIP or to the ZIP that never comes, and deletes of a permit and
// a lead, and a permit and a lead deleted at their own version. Every
// location has one version, so the state a log ends in does
// not depend on when each was read (a location's new version is not
// projected into what was written before it: the contract's).
func orderPool(t testing.TB) []indexer.Message {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env := func(typ events.Type, id string, v int64, data any) events.Envelope {
		e, err := events.New(typ, id, v, at, "test", data)
		require.NoError(t, err)
		return e
	}
	zip98104 := events.GeoID("zip", "98104")
	zipB := events.Location{
		GeoType: "zip", Name: "98104", DisplayName: "98104 (Seattle, WA)", State: "WA", StateName: "Washington",
		County: "King County", City: "Seattle", Zipcode: "98104", StateGeoID: waState, CountyGeoID: king,
		CountyGeoIDs: []string{king}, CityGeoID: seaCity, Lat: 47.60, Lon: -122.33,
	}
	permitMsg := func(number string, v int64, zip string, mut func(*events.Permit)) indexer.Message {
		e := permitEnv(t, func(p *events.Permit) {
			p.Source, p.PermitNumber, p.Address.Zipcode = "fz", number, zip
			p.IssueDate = time.Date(2024, 1, int(v)*3, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
			if mut != nil {
				mut(p)
			}
		})
		e.EntityVersion = v
		return msgOf(t, "permitd.permits.v1", e)
	}
	leadMsg := func(permit string, v int64, anchor string) indexer.Message {
		return msgOf(t, "permitd.permit-leads.v1", env(events.LeadUpserted, events.LeadID(permit, "framing_window_late"), v, events.Lead{
			SignalKey: "framing_window_late", PermitID: permit, PermitNumber: permit[len("fz:"):], EventDateUsed: "2025-12-01",
			SignalBasis: events.BasisInferredTiming, ReasonCodes: []string{"NEW_CONSTRUCTION"},
			Address:     events.LeadAddress{FullAddress: "600 PINE ST", City: "SEATTLE", State: "WA", Zipcode: "98101"},
			AnchorGeoID: anchor, SignalVersion: "1.0.0",
		}))
	}
	deleted := func(topic string, typ events.Type, id string, v int64) indexer.Message {
		return msgOf(t, topic, env(typ, id, v, nil))
	}
	return []indexer.Message{
		stateLocationMsg(t),
		zipLocationMsg(t, 1),
		msgOf(t, "permitd.locations.v1", env(events.LocationUpserted, zip98104, 1, zipB)),
		permitMsg("1", 1, "98101", nil),
		permitMsg("1", 2, "98104", nil),
		deleted("permitd.permits.v1", events.PermitDeleted, events.PermitDocID("fz", "1"), 4),
		permitMsg("2", 1, "98104", func(p *events.Permit) { p.PropertyID = "" }),
		permitMsg("3", 1, "99999", nil),
		permitMsg("4", 1, "98104", nil),
		permitMsg("4", 2, "98101", func(p *events.Permit) { p.Address.ZipSource, p.Address.ZipConfidence = "nearest_zip", 0.7 }),
		permitMsg("5", 1, "", func(p *events.Permit) { p.Address.Zipcode = "" }),
		msgOf(t, "permitd.properties.v1", propertyEnv(t, nil)),
		msgOf(t, "permitd.properties.v1", func() events.Envelope {
			e := propertyEnv(t, func(p *events.Property) { p.ParcelID = "0001" })
			e.EntityVersion = 2
			return e
		}()),
		leadMsg("fz:1", 1, zip98101),
		leadMsg("fz:1", 2, zip98104),
		leadMsg("fz:2", 1, zip98104),
		leadMsg("fz:4", 3, zip98101),
		deleted("permitd.permit-leads.v1", events.LeadDeleted, events.LeadID("fz:2", "framing_window_late"), 2),
		permitMsg("6", 1, "99999", nil),
		permitMsg("6", 2, "98101", nil), // out of a ZIP that never comes: its wait ends
		leadMsg("fz:6", 1, events.GeoID("zip", "99999")),
		deleted("permitd.properties.v1", events.PropertyDeleted, propID, 3),
		// Deletes of the version they delete: the tombstone outranks the
		// unlinked copy and the re-link alike (readmodel.Writer).
		permitMsg("7", 1, "98101", nil),
		deleted("permitd.permits.v1", events.PermitDeleted, events.PermitDocID("fz", "7"), 1),
		leadMsg("fz:7", 1, zip98101),
		deleted("permitd.permit-leads.v1", events.LeadDeleted, events.LeadID("fz:7", "framing_window_late"), 1),
	}
}

// FuzzProjectionOrder hands orderPool's messages to an indexer in the
// order the fuzzer chooses, in the batches it cuts, some of them twice
// (a redelivery), and settles the indexer where it says (before that a
// message whose ZIP is unknown waits; after, it is written linked to
// what is known and re-linked when its ZIP arrives). The read model
// must end as a replay with the locations first ends, document for
// document, and nothing is dead-lettered (storeIndexer fails the test
// on a dead letter). The state's location comes first, in the first
// batch: a lead whose anchor and state are both unknown at Settle is a
// dead letter by design (nothing to anchor it to; re-published from the
// dead-letter topic), which no order of the rest may cause.
//
// The input is one byte per step: its low five bits pick the next
// message among those not handed yet, bit 5 ends the batch after it,
// bit 6 settles the indexer after it, and bit 7 hands it again in the
// next batch. Low bits 31, when the indexer is settled and nothing
// waits (when serve writes a snapshot), restart it from a snapshot
// instead: the store exported into a new one, a new indexer preloaded
// with its locations and handed the re-link file's messages; it
// settles where the input says next.
func FuzzProjectionOrder(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x40, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0x20, 1, 2})
	f.Add([]byte{3, 0x23, 0x40, 0x80, 5, 0x21, 7, 7, 0x20, 1, 0xe0, 2, 2, 2})
	f.Add([]byte{0x60, 0x0e, 0x0d, 0x2d, 0x81, 0x20, 0xc3, 0x00, 0x20})
	f.Add([]byte{0x60, 0x03, 0x24, 0x1f, 0x2c, 0x01, 0x1f, 0x40, 0x20, 0x1f, 0x21})
	pool := orderPool(f)
	ctx := context.Background()
	clean, cleanStore := storeIndexer(f, nil)
	require.NoError(f, clean.HandleBatch(ctx, pool[:3]))
	require.NoError(f, clean.Settle(ctx))
	require.NoError(f, clean.HandleBatch(ctx, pool[3:]))
	wantDigest, want := contents(f, cleanStore)
	f.Fuzz(func(t *testing.T, in []byte) {
		ix, s := storeIndexer(t, nil)
		left := make([]int, len(pool)-1) // the state's location is handed first
		for i := range left {
			left[i] = i + 1
		}
		batch, again := []indexer.Message{pool[0]}, []indexer.Message(nil)
		flush := func() {
			if len(batch) > 0 {
				require.NoError(t, ix.HandleBatch(ctx, batch))
			}
			batch, again = again, nil
		}
		for i := 0; len(left) > 0; i++ {
			step := byte(0x20) // past the input: one message a batch, in the order left
			if i < len(in) {
				step = in[i]
			}
			if step&0x1f == 0x1f && ix.Settled() && ix.Progress().Parked == 0 {
				flush() // the redeliveries wait for the restarted indexer
				ix, s = restartFromSnapshot(t, ix, s)
				continue
			}
			k := int(step&0x1f) % len(left)
			m := pool[left[k]]
			left = append(left[:k], left[k+1:]...)
			batch = append(batch, m)
			if step&0x80 != 0 {
				again = append(again, m)
			}
			if step&0x20 != 0 {
				flush()
			}
			if step&0x40 != 0 {
				flush()
				require.NoError(t, ix.Settle(ctx))
			}
		}
		flush()
		flush() // the redeliveries
		require.NoError(t, ix.Settle(ctx))
		gotDigest, got := contents(t, s)
		require.Equal(t, want, got, "the documents a replay with the locations first writes")
		require.Equal(t, wantDigest, gotDigest)
	})
}
