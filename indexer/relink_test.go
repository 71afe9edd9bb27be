package indexer_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// relinkFixture is a permit with a derived ZIP of its own confidence (so
// the re-link must reproduce the exact link confidences and methods, not
// defaults), its property, and a permit whose ZIP is in no gazetteer.
type relinkFixture struct {
	zip, state, permit, property, noZip, lead indexer.Message
}

func newRelinkFixture(t *testing.T) relinkFixture {
	return relinkFixture{
		zip:   zipLocationMsg(t, 1),
		state: stateLocationMsg(t),
		permit: msgOf(t, "permitd.permits.v1", permitEnv(t, func(p *events.Permit) {
			p.Address.ZipSource, p.Address.ZipConfidence, p.Address.City = "nearest_zip", 0.7, "Tukwila"
		})),
		property: msgOf(t, "permitd.properties.v1", propertyEnv(t, nil)),
		noZip: msgOf(t, "permitd.permits.v1", permitEnv(t, func(p *events.Permit) {
			p.PermitNumber, p.Address.Zipcode = "1", "99999"
		})),
		lead: msgOf(t, "permitd.permit-leads.v1", mustEnv(t, events.LeadUpserted, events.LeadID("src:1", "framing_window_late"), 2, events.Lead{
			SignalKey: "framing_window_late", PermitID: "src:1", PermitNumber: "1", EventDateUsed: "2025-12-01",
			SignalBasis: events.BasisInferredTiming, ReasonCodes: []string{"NEW_CONSTRUCTION"},
			Address:     events.LeadAddress{FullAddress: "600 PINE ST", City: "SEATTLE", State: "WA", Zipcode: "98101"},
			AnchorGeoID: zip98101, SignalVersion: "1.0.0",
		})),
	}
}

// storeIndexer is an indexer over a fresh memory store; await, when
// set, is its location source's wait.
func storeIndexer(t testing.TB, await func(context.Context) error) (*indexer.Indexer, *memory.Store) {
	t.Helper()
	s := memory.New(memory.Params{})
	ix, err := indexer.New(indexer.Params{Writer: s, DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
		t.Errorf("dead letter %s: %v", m.Key, reason)
		return nil
	}})
	require.NoError(t, err)
	if await != nil {
		ix.SetLocationSource(await)
	}
	return ix, s
}

// contents is the store's whole state: the digest and every document,
// in a stable order.
func contents(t testing.TB, s *memory.Store) (string, readmodel.Batch) {
	t.Helper()
	ctx := context.Background()
	d, err := s.Digest(ctx)
	require.NoError(t, err)
	var all readmodel.Batch
	require.NoError(t, s.Export(ctx, 0, func(b readmodel.Batch) error { all.Append(b); return nil }))
	slices.SortFunc(all.Permits, func(a, b readmodel.Permit) int { return strings.Compare(a.PermitID, b.PermitID) })
	slices.SortFunc(all.Locations, func(a, b readmodel.Location) int { return strings.Compare(a.GeoID, b.GeoID) })
	slices.SortFunc(all.Deletes, func(a, b readmodel.Delete) int {
		return cmp.Or(strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.ID, b.ID))
	})
	return d, all
}

// TestRelinkEqualsACleanReplay: a permit and a property that arrive
// after the indexer settled and before their ZIP are written linked to
// their state (and property) only, then re-linked when the ZIP arrives;
// the read model equals a replay with the locations first, document for
// document, and with the ZIP before them nothing waits at all. Both
// orders, with and without a location source's wait.
func TestRelinkEqualsACleanReplay(t *testing.T) {
	ctx := context.Background()
	f := newRelinkFixture(t)

	clean, cleanStore := storeIndexer(t, nil)
	require.NoError(t, clean.HandleBatch(ctx, []indexer.Message{f.state, f.zip}))
	require.NoError(t, clean.Settle(ctx))
	require.NoError(t, clean.HandleBatch(ctx, []indexer.Message{f.permit, f.noZip}))
	require.NoError(t, clean.HandleBatch(ctx, []indexer.Message{f.property, f.lead}))
	wantDigest, want := contents(t, cleanStore)
	require.Len(t, want.Leads, 1)
	require.True(t, want.Leads[0].Linked(), "fixture: the lead is anchored to its ZIP in a clean replay")
	require.Len(t, want.Permits, 2)
	require.True(t, want.Permits[1].Linked(), "fixture: the permit is linked in a clean replay")
	require.False(t, want.Permits[0].Linked(), "fixture: a ZIP outside the gazetteer is never linked")
	require.Equal(t, int64(1), clean.Progress().Unlinked, "the permit outside the gazetteer waits for its ZIP")

	noWait := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name    string
		await   func(context.Context) error
		batches [][]indexer.Message
		relinks bool // the permit and the property were written unlinked first
		settle  int  // the batches handed before Settle (1 unless set)
	}{
		{"location before permit", nil, [][]indexer.Message{{f.state}, {f.zip}, {f.permit, f.noZip}, {f.property, f.lead}}, false, 0},
		{"permit before location, after settling", nil, [][]indexer.Message{{f.state}, {f.permit, f.noZip}, {f.property, f.lead}, {f.zip}}, true, 0},
		{"permit before location, after the source's wait", noWait, [][]indexer.Message{{f.state}, {f.permit, f.noZip}, {f.property, f.lead}, {f.zip}}, true, 0},
		{"location in the permits' batch", nil, [][]indexer.Message{{f.state}, {f.permit, f.noZip, f.zip}, {f.property, f.lead}}, false, 0},
		// Parked before Settle (their ZIP unknown), written unlinked at
		// Settle, and re-linked when the ZIP arrives after it.
		{"permit before location, before settling", nil, [][]indexer.Message{{f.state}, {f.permit, f.noZip}, {f.property, f.lead}, {f.zip}}, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix, s := storeIndexer(t, tc.await)
			settle := max(tc.settle, 1)
			for _, b := range tc.batches[:settle] {
				require.NoError(t, ix.HandleBatch(ctx, b))
			}
			require.Equal(t, settle > 1, ix.Progress().Parked > 0, "handed before Settle without their ZIP: they wait")
			require.NoError(t, ix.Settle(ctx))
			for i, b := range tc.batches[settle:] {
				if tc.relinks && i == len(tc.batches)-settle-1 {
					_, before := contents(t, s)
					require.Len(t, before.Permits, 2)
					require.False(t, before.Permits[1].Linked(), "written before its ZIP: state level")
					require.False(t, before.Properties[0].Linked())
					require.Equal(t, []string{waState}, before.Leads[0].GeoIDs, "the lead is anchored to its state")
					require.Equal(t, int64(4), ix.Progress().Unlinked, "the permit, the property, the lead and the permit outside the gazetteer wait")
				}
				require.NoError(t, ix.HandleBatch(ctx, b))
			}
			gotDigest, got := contents(t, s)
			require.Equal(t, want, got, "the same documents as a replay with the locations first")
			require.Equal(t, wantDigest, gotDigest)
			require.Equal(t, int64(1), ix.Progress().Unlinked, "only the permit outside the gazetteer still waits")
			zip, err := s.Location(ctx, readmodel.ParseGeoRef(zip98101))
			require.NoError(t, err)
			require.Equal(t, int64(1), zip.PermitCount, "the ZIP counts the re-linked permit")
		})
	}
}

// TestRelinkIsIdempotent: replaying every message again, in any order,
// into the re-linked store changes nothing, and an indexer that does
// not know the ZIP (a restart against a durable store) writes a
// state-level copy that cannot undo the re-link.
func TestRelinkIsIdempotent(t *testing.T) {
	ctx := context.Background()
	f := newRelinkFixture(t)
	ix, s := storeIndexer(t, nil)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.state}))
	require.NoError(t, ix.Settle(ctx))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.permit, f.property, f.lead}))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.zip}))
	wantDigest, want := contents(t, s)
	require.True(t, want.Permits[0].Linked())
	require.True(t, want.Leads[0].Linked())
	applied := ix.Progress().Applied

	for _, order := range [][]indexer.Message{{f.zip, f.permit, f.property, f.lead}, {f.permit, f.lead, f.property, f.zip}, {f.state}} {
		require.NoError(t, ix.HandleBatch(ctx, order))
	}
	require.Equal(t, applied, ix.Progress().Applied, "every replayed document is stale")

	// A second indexer on the same store, without the ZIP in its table.
	other, err := indexer.New(indexer.Params{Writer: s, DeadLetter: func(context.Context, indexer.Message, error) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, other.Settle(ctx))
	require.NoError(t, other.HandleBatch(ctx, []indexer.Message{f.state}))
	require.NoError(t, other.HandleBatch(ctx, []indexer.Message{f.permit, f.property, f.lead}))
	require.Equal(t, int64(0), other.Progress().Applied, "the state-level copies are stale against the re-linked documents")
	require.Equal(t, int64(3), other.Progress().Unlinked)

	gotDigest, got := contents(t, s)
	require.Equal(t, want, got)
	require.Equal(t, wantDigest, gotDigest)
}

// TestRelinkForgets: a newer version of the entity or a delete ends the
// wait for the older version's location; the bound on remembered bytes
// is counted, never exceeded.
func TestRelinkForgets(t *testing.T) {
	ctx := context.Background()
	f := newRelinkFixture(t)
	newer := msgOf(t, "permitd.permits.v1", func() events.Envelope {
		env := permitEnv(t, func(p *events.Permit) { p.Address.Zipcode = "" })
		env.EntityVersion = 4
		return env
	}())
	del := msgOf(t, "permitd.properties.v1", func() events.Envelope {
		env, err := events.New(events.PropertyDeleted, propID, 2, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), "test", nil)
		require.NoError(t, err)
		return env
	}())

	ix, s := storeIndexer(t, nil)
	require.NoError(t, ix.Settle(ctx))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.permit, f.property}))
	require.Equal(t, int64(2), ix.Progress().Unlinked)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{newer, del}))
	require.Equal(t, int64(0), ix.Progress().Unlinked, "a newer linked version and a delete end the wait")
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.zip}))
	_, got := contents(t, s)
	require.Len(t, got.Permits, 1)
	require.Equal(t, int64(4), got.Permits[0].Version)
	require.Empty(t, got.Properties)

	// A bound smaller than one message: nothing is remembered, and it is
	// counted.
	small, err := indexer.New(indexer.Params{Writer: memory.New(memory.Params{}), MaxUnlinkedBytes: 10,
		DeadLetter: func(context.Context, indexer.Message, error) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, small.Settle(ctx))
	require.NoError(t, small.HandleBatch(ctx, []indexer.Message{f.permit, f.property}))
	p := small.Progress()
	require.Equal(t, int64(0), p.Unlinked)
	require.Equal(t, int64(2), p.UnlinkedDropped)
}

// TestRelinkFromLookup: in a consumer group another member may project
// the location; the member that remembers the permit finds it in the
// read model (one read per geography) and re-links, as exactly as if it
// had seen the location itself.
func TestRelinkFromLookup(t *testing.T) {
	ctx := context.Background()
	f := newRelinkFixture(t)
	clean, cleanStore := storeIndexer(t, nil)
	require.NoError(t, clean.HandleBatch(ctx, []indexer.Message{f.state, f.zip}))
	require.NoError(t, clean.Settle(ctx))
	require.NoError(t, clean.HandleBatch(ctx, []indexer.Message{f.permit, f.property, f.noZip}))
	wantDigest, want := contents(t, cleanStore)

	s := memory.New(memory.Params{})
	lookups := &countingLookup{Lookup: s}
	member := func(look indexer.Lookup) *indexer.Indexer {
		ix, err := indexer.New(indexer.Params{Writer: s, Lookup: look, DeadLetter: func(context.Context, indexer.Message, error) error { return nil }})
		require.NoError(t, err)
		require.NoError(t, ix.Settle(ctx))
		return ix
	}
	permits, locations := member(lookups), member(nil)
	require.NoError(t, locations.HandleBatch(ctx, []indexer.Message{f.state}))
	require.NoError(t, permits.HandleBatch(ctx, []indexer.Message{f.permit, f.property, f.noZip}))
	require.Equal(t, int64(3), permits.Progress().Unlinked)

	n, err := permits.RelinkFromLookup(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the ZIP is not in the read model yet")
	require.NoError(t, locations.HandleBatch(ctx, []indexer.Message{f.zip}))
	lookups.n = 0
	n, err = permits.RelinkFromLookup(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, 2, lookups.n, "one read per geography waited for (98101 and 99999), not per document")
	require.Equal(t, int64(1), permits.Progress().Unlinked)

	gotDigest, got := contents(t, s)
	require.Equal(t, want, got)
	require.Equal(t, wantDigest, gotDigest)
}

type countingLookup struct {
	indexer.Lookup
	n int
}

func (c *countingLookup) Location(ctx context.Context, id readmodel.GeoRef) (readmodel.Location, error) {
	c.n++
	return c.Lookup.Location(ctx, id)
}
