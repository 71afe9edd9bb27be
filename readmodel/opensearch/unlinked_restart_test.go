package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// The restart fixture: ZIP 98101 with its hierarchy, and documents that
// name it, on two partitions of each topic.
var (
	zipGeo   = events.GeoID("zip", "98101")
	cityGeo  = events.GeoID("city", "1840021117")
	jurGeo   = events.GeoID("jurisdiction", "city:1840021117")
	kingGeo  = events.GeoID("county", "53033")
	stateGeo = events.GeoID("state", "WA")
)

const (
	permitsTopic    = "permitd.permits.v1"
	propertiesTopic = "permitd.properties.v1"
	leadsTopic      = "permitd.permit-leads.v1"
	locationsTopic  = "permitd.locations.v1"
)

func eventMsg(t *testing.T, topic string, partition int, typ events.Type, id string, version int64, data any) indexer.Message {
	t.Helper()
	env, err := events.New(typ, id, version, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", data)
	require.NoError(t, err)
	raw, err := json.Marshal(env)
	require.NoError(t, err)
	return indexer.Message{Topic: topic, Partition: partition, Offset: version, Key: []byte(id), Value: raw}
}

func stateMsg(t *testing.T) indexer.Message {
	return eventMsg(t, locationsTopic, 1, events.LocationUpserted, stateGeo, 1, events.Location{
		GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120})
}

func zipMsg(t *testing.T) indexer.Message {
	return eventMsg(t, locationsTopic, 0, events.LocationUpserted, zipGeo, 1, events.Location{
		GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)", State: "WA", StateName: "Washington",
		County: "King County", City: "Seattle", Zipcode: "98101", Jurisdiction: "City of Seattle",
		StateGeoID: stateGeo, CountyGeoID: kingGeo, CountyGeoIDs: []string{kingGeo, "gOTHER"}, CityGeoID: cityGeo,
		JurisdictionGeoID: jurGeo, Lat: 47.61, Lon: -122.33,
	})
}

// waitingMsgs are n permits (a derived ZIP of their own confidence, so
// the re-link must reproduce the event's link confidences), a property
// and a lead anchored to the ZIP, on partitions 0 and 1.
func waitingMsgs(t *testing.T, n int) []indexer.Message {
	var out []indexer.Message
	prop := events.PropertyID("addr:600 UNIVERSITY ST|SEATTLE|WA")
	for i := range n {
		d := events.Permit{PermitNumber: fmt.Sprint(100 + i), PermitType: "Commercial", WorkType: "New", Status: "Issued",
			IssueDate: fmt.Sprintf("2025-03-%02d", 1+i%28), Source: "seattle",
			Address:    events.PermitAddress{Line: "600 University St", City: "Tukwila", State: "WA", Zipcode: "98101", ZipSource: "nearest_zip", ZipConfidence: 0.7},
			PropertyID: prop}
		out = append(out, eventMsg(t, permitsTopic, i%2, events.PermitUpserted, events.PermitDocID(d.Source, d.PermitNumber), int64(3+i), d))
	}
	out = append(out, eventMsg(t, propertiesTopic, 1, events.PropertyUpserted, prop, 2, events.Property{
		CanonicalAddress: "600 UNIVERSITY ST, SEATTLE, WA 98101", NormalizedAddress: "600 UNIVERSITY ST", City: "SEATTLE", State: "WA", Zipcode: "98101"}))
	out = append(out, eventMsg(t, leadsTopic, 0, events.LeadUpserted, events.LeadID("seattle:100", "framing_window_late"), 4, events.Lead{
		SignalKey: "framing_window_late", PermitID: "seattle:100", PermitNumber: "100", EventDateUsed: "2025-12-01",
		SignalBasis: events.BasisInferredTiming, ReasonCodes: []string{"NEW_CONSTRUCTION"},
		Address:     events.LeadAddress{FullAddress: "600 UNIVERSITY ST", City: "SEATTLE", State: "WA", Zipcode: "98101"},
		AnchorGeoID: zipGeo, SignalVersion: "1.0.0"}))
	return out
}

// readModelLookup is the read model's locations as a group member
// reads them: what another member has written.
type readModelLookup map[string]readmodel.Location

func (l readModelLookup) Location(_ context.Context, g readmodel.GeoRef) (readmodel.Location, error) {
	if loc, ok := l[g.ID()]; ok {
		return loc, nil
	}
	return readmodel.Location{}, readmodel.ErrNotFound
}

func newMember(t *testing.T, s *Store, look indexer.Lookup, maxBytes int64, page int) *indexer.Indexer {
	t.Helper()
	p := indexer.Params{Writer: s, DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
		t.Errorf("dead letter %s: %v", m.Key, reason)
		return nil
	}, MaxUnlinkedBytes: maxBytes, UnlinkedPageSize: page}
	if look != nil {
		p.Lookup = look
	}
	ix, err := indexer.New(p)
	require.NoError(t, err)
	return ix
}

// stored is the fake's documents of one kind as JSON maps, without the
// Writer's clock (indexed_at), with their _version.
func (f *fakeDocs) stored(t *testing.T, k readmodel.Kind) map[string]jdoc {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]jdoc{}
	for id, d := range f.docs[mappings.DefaultPrefix+"-"+mappings.Base(k)] {
		var doc jdoc
		require.NoError(t, json.Unmarshal(d.src, &doc))
		delete(doc, "indexed_at")
		doc["_version"] = d.version
		out[id] = doc
	}
	return out
}

// cleanReplay is the fake cluster after a replay with the ZIP first.
func cleanReplay(t *testing.T, msgs []indexer.Message) *fakeDocs {
	ctx := context.Background()
	s, f := newFakeDocs(t)
	ix := newMember(t, s, nil, 0, 0)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{stateMsg(t), zipMsg(t)}))
	require.NoError(t, ix.Settle(ctx))
	require.NoError(t, ix.HandleBatch(ctx, msgs))
	require.Zero(t, ix.Progress().Unlinked)
	return f
}

// requireSameAs: f holds the documents and cells of want.
func requireSameAs(t *testing.T, want, f *fakeDocs) {
	for _, k := range unlinkedKinds {
		require.Equal(t, want.stored(t, k), f.stored(t, k), "%s: the documents of a clean replay", k)
	}
	require.Equal(t, want.cellCounts(t), f.cellCounts(t), "the permit cells of a clean replay")
	require.Equal(t, want.leadCellCounts(t), f.leadCellCounts(t), "the lead cells of a clean replay")
}

// beforeRestart is a member that wrote msgs before their ZIP existed
// anywhere: every document is stored unlinked with what it waits for.
func beforeRestart(t *testing.T, msgs []indexer.Message) (*Store, *fakeDocs) {
	ctx := context.Background()
	s, f := newFakeDocs(t)
	ix := newMember(t, s, nil, 0, 0)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{stateMsg(t)}))
	require.NoError(t, ix.Settle(ctx))
	require.NoError(t, ix.HandleBatch(ctx, msgs))
	require.Equal(t, int64(len(msgs)), ix.Progress().Unlinked)
	for _, k := range unlinkedKinds {
		for id, d := range f.stored(t, k) {
			aw, ok := d["awaits"].(jdoc)
			require.True(t, ok, "%s %s is stored with what it waits for", k, id)
			require.Equal(t, zipGeo, aw["geo_id"])
		}
	}
	return s, f
}

// TestRestartedMemberRelinks: a group member wrote permits, a property
// and a lead before their ZIP existed, then restarted (its memory gone).
// The new member recovers them from the read model, page by page, and
// when the ZIP arrives they are re-linked: the documents and the cells
// equal a clean replay's.
func TestRestartedMemberRelinks(t *testing.T) {
	ctx := context.Background()
	msgs := waitingMsgs(t, 7)
	want := cleanReplay(t, msgs)

	t.Run("location after the restart", func(t *testing.T) {
		s, f := beforeRestart(t, msgs)
		before := f.searches()
		ix := newMember(t, s, readModelLookup{}, 0, 2)
		r, err := ix.RecoverUnlinked(ctx, map[string][]int{permitsTopic: {0, 1}, propertiesTopic: {0, 1}, leadsTopic: {0, 1}, locationsTopic: {0}})
		require.NoError(t, err)
		require.Equal(t, indexer.Recovered{Listed: 9, Remembered: 9}, r)
		require.Equal(t, int64(9), ix.Progress().Unlinked)
		// 7 permits in pages of 2 (4 pages), the property and the lead
		// (a short page each).
		require.Equal(t, 6, f.searches()-before, "paged by 2 inside a point in time")
		require.NoError(t, ix.Settle(ctx))
		require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{zipMsg(t)}))
		require.Zero(t, ix.Progress().Unlinked)
		requireSameAs(t, want, f)
	})

	t.Run("location known at the restart", func(t *testing.T) {
		s, f := beforeRestart(t, msgs)
		// Another member wrote the ZIP meanwhile: the read model has it.
		zip, err := indexer.ProjectLocation(decodeEnv(t, zipMsg(t)))
		require.NoError(t, err)
		_, err = s.Apply(ctx, readmodel.Batch{Locations: []readmodel.Location{zip}})
		require.NoError(t, err)
		ix := newMember(t, s, readModelLookup{zipGeo: zip}, 0, 4)
		r, err := ix.RecoverUnlinked(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, indexer.Recovered{Listed: 9, Relinked: 9}, r)
		require.Zero(t, ix.Progress().Unlinked)
		wantWithZip := cleanReplay(t, msgs)
		requireSameAs(t, wantWithZip, f)
	})

	t.Run("partitions owned", func(t *testing.T) {
		s, _ := beforeRestart(t, msgs)
		ix := newMember(t, s, readModelLookup{}, 0, 0)
		r, err := ix.RecoverUnlinked(ctx, map[string][]int{permitsTopic: {1}, leadsTopic: {0}})
		require.NoError(t, err)
		require.Equal(t, indexer.Recovered{Listed: 4, Remembered: 4}, r, "permits of partition 1 (3) and the lead")
		// A rebalance: the member now owns partition 0 of the permits
		// only; what it remembered of the others is left to their owner.
		r, err = ix.RecoverUnlinked(ctx, map[string][]int{permitsTopic: {0}})
		require.NoError(t, err)
		require.Equal(t, indexer.Recovered{Listed: 4, Remembered: 4}, r)
		require.Equal(t, int64(4), ix.Progress().Unlinked)
	})

	t.Run("bound", func(t *testing.T) {
		s, f := beforeRestart(t, msgs)
		ix := newMember(t, s, readModelLookup{}, 2600, 3)
		r, err := ix.RecoverUnlinked(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, 9, r.Listed)
		require.Positive(t, r.Remembered)
		require.Positive(t, r.Dropped)
		require.Equal(t, 9, r.Remembered+r.Dropped)
		p := ix.Progress()
		require.Equal(t, int64(r.Remembered), p.Unlinked)
		require.Equal(t, int64(r.Dropped), p.UnlinkedDropped, "what is not remembered is counted")
		require.NoError(t, ix.Settle(ctx))
		require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{zipMsg(t)}))
		waiting := 0
		for _, k := range unlinkedKinds {
			for _, d := range f.stored(t, k) {
				if d["awaits"] != nil {
					waiting++
				}
			}
		}
		require.Equal(t, r.Dropped, waiting, "the documents not remembered still wait in the read model")
		// The next restart (the ZIP now in the read model) re-links them.
		zip, err := indexer.ProjectLocation(decodeEnv(t, zipMsg(t)))
		require.NoError(t, err)
		next := newMember(t, s, readModelLookup{zipGeo: zip}, 0, 0)
		r2, err := next.RecoverUnlinked(ctx, nil)
		require.NoError(t, err)
		require.Equal(t, indexer.Recovered{Listed: r.Dropped, Relinked: r.Dropped}, r2)
		requireSameAs(t, want, f)
	})
}

func decodeEnv(t *testing.T, m indexer.Message) events.Envelope {
	env, err := events.DecodeEvent(m.Value)
	require.NoError(t, err)
	return env
}
