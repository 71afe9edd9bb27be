package indexer_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

// recordWriter keeps the newest version of every document it is given,
// applying the version rule like a backend.
type recordWriter struct {
	mu       sync.Mutex
	permits  map[string]readmodel.Permit
	props    map[string]readmodel.Property
	leads    map[string]readmodel.Lead
	signals  map[string]readmodel.GeoSignal
	deleted  map[string]int64
	applied  int
	batchLen []int
}

func newRecordWriter() *recordWriter {
	return &recordWriter{permits: map[string]readmodel.Permit{}, props: map[string]readmodel.Property{},
		leads: map[string]readmodel.Lead{}, signals: map[string]readmodel.GeoSignal{}, deleted: map[string]int64{}}
}

func (w *recordWriter) Apply(_ context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var res readmodel.ApplyResult
	for _, p := range b.Permits {
		if old, ok := w.permits[p.PermitID]; ok && old.Version >= p.Version {
			res.Stale++
			continue
		}
		w.permits[p.PermitID] = p
		res.Applied++
	}
	for _, p := range b.Properties {
		w.props[p.PropertyID] = p
		res.Applied++
	}
	for _, l := range b.Leads {
		w.leads[l.LeadID] = l
		res.Applied++
	}
	for _, g := range b.GeoSignals {
		w.signals[g.ID()] = g
		res.Applied++
	}
	for _, d := range b.Deletes {
		w.deleted[d.ID] = d.Version
		delete(w.permits, d.ID)
		res.Applied++
	}
	w.applied += b.Len()
	w.batchLen = append(w.batchLen, b.Len())
	return res, nil
}

func msgOf(t testing.TB, topic string, env events.Envelope) indexer.Message {
	t.Helper()
	raw, err := json.Marshal(env)
	require.NoError(t, err)
	return indexer.Message{Topic: topic, Key: []byte(env.EntityID), Value: raw}
}

// zipLocationMsg is ZIP 98101's location event, with its hierarchy.
func zipLocationMsg(t testing.TB, version int64) indexer.Message {
	d := events.Location{
		GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)", State: "WA", StateName: "Washington",
		County: "King County", City: "Seattle", Zipcode: "98101", Jurisdiction: "City of Seattle",
		StateGeoID: waState, CountyGeoID: king, CountyGeoIDs: []string{king}, CityGeoID: seaCity,
		JurisdictionGeoID: seaJur, Lat: 47.61, Lon: -122.33,
	}
	return msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, zip98101, version, d))
}

func stateLocationMsg(t testing.TB) indexer.Message {
	d := events.Location{GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120}
	return msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, waState, 1, d))
}

func newTestIndexer(t *testing.T, w readmodel.Writer) (*indexer.Indexer, *[]error) {
	t.Helper()
	var dead []error
	ix, err := indexer.New(indexer.Params{Writer: w, DeadLetter: func(_ context.Context, _ indexer.Message, reason error) error {
		dead = append(dead, reason)
		return nil
	}})
	require.NoError(t, err)
	return ix, &dead
}

// The exact links a permit in 98101 gets when its ZIP is known.
var want98101Links = []readmodel.GeoLink{
	{GeoID: propID, GeoType: readmodel.GeoProperty, Confidence: 1, Method: indexer.MethodAddress},
	{GeoID: zip98101, GeoType: readmodel.GeoZip, Confidence: 1, Method: indexer.MethodSourceZip},
	{GeoID: seaCity, GeoType: readmodel.GeoCity, Confidence: 1, Method: indexer.MethodZipCity},
	{GeoID: seaJur, GeoType: readmodel.GeoJurisdiction, Confidence: 1, Method: indexer.MethodZipJurisdiction},
	{GeoID: king, GeoType: readmodel.GeoCounty, Confidence: 1, Method: indexer.MethodZipCounty},
	{GeoID: waState, GeoType: readmodel.GeoState, Confidence: 1, Method: indexer.MethodSourceState},
}

// The projection links permits from the indexer's own location table,
// whichever comes first: a permit that arrives before its ZIP waits and
// is written, fully linked and at its own version, in the batch that
// brings the ZIP. Both orders give the same document.
func TestPermitLinksInEitherOrder(t *testing.T) {
	ctx := context.Background()
	permit := msgOf(t, "permitd.permits.v1", permitEnv(t, nil))

	first := newRecordWriter()
	ix, dead := newTestIndexer(t, first)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{zipLocationMsg(t, 1)}))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{permit}))
	require.Empty(t, *dead)
	locFirst, ok := first.permits[string(permit.Key)]
	require.True(t, ok)
	require.Equal(t, want98101Links, locFirst.GeoLinks)
	require.Equal(t, "King County", locFirst.Address.County)
	require.Equal(t, int64(3), locFirst.Version)

	second := newRecordWriter()
	ix, dead = newTestIndexer(t, second)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{permit}))
	require.Empty(t, second.permits, "a permit whose ZIP is unknown waits for it")
	require.Equal(t, int64(1), ix.Progress().Parked)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{zipLocationMsg(t, 1)}))
	require.Empty(t, *dead)
	require.Equal(t, int64(0), ix.Progress().Parked)
	require.Equal(t, locFirst, second.permits[string(permit.Key)])

	// Settling later finds nothing waiting and writes nothing more.
	n := second.applied
	require.NoError(t, ix.Settle(ctx))
	require.Equal(t, n, second.applied)
}

// Within one batch a permit before its ZIP is linked too.
func TestPermitBeforeItsZipInOneBatch(t *testing.T) {
	w := newRecordWriter()
	ix, _ := newTestIndexer(t, w)
	permit := msgOf(t, "permitd.permits.v1", permitEnv(t, nil))
	require.NoError(t, ix.HandleBatch(context.Background(), []indexer.Message{permit, zipLocationMsg(t, 1)}))
	require.Equal(t, want98101Links, w.permits[string(permit.Key)].GeoLinks)
	require.Equal(t, []int{2}, w.batchLen, "the permit is written with its ZIP, in one batch")
}

// Settling writes what still waits with what is known (the state and
// the property); afterwards an unknown ZIP no longer waits.
func TestSettleReleasesWaitingPermits(t *testing.T) {
	ctx := context.Background()
	w := newRecordWriter()
	ix, dead := newTestIndexer(t, w)
	p1 := msgOf(t, "permitd.permits.v1", permitEnv(t, nil))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{p1}))
	require.Empty(t, w.permits)
	require.NoError(t, ix.Settle(ctx))
	require.True(t, ix.Settled())
	stateOnly := []readmodel.GeoLink{want98101Links[0], want98101Links[5]}
	require.Equal(t, stateOnly, w.permits[string(p1.Key)].GeoLinks)

	p2 := msgOf(t, "permitd.permits.v1", permitEnv(t, func(p *events.Permit) { p.PermitNumber = "2" }))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{p2}))
	require.Equal(t, stateOnly, w.permits[string(p2.Key)].GeoLinks)
	require.Equal(t, int64(0), ix.Progress().Parked)
	require.Empty(t, *dead)
}

// Only the newest version of a waiting entity is written; a delete drops
// what waits at its version or older.
func TestWaitingVersions(t *testing.T) {
	ctx := context.Background()
	w := newRecordWriter()
	ix, _ := newTestIndexer(t, w)
	v3 := permitEnv(t, nil)
	v5 := permitEnv(t, func(p *events.Permit) { p.Status = "Final" })
	v5.EntityVersion = 5
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{msgOf(t, "permitd.permits.v1", v5)}))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{msgOf(t, "permitd.permits.v1", v3)}))
	require.Equal(t, int64(1), ix.Progress().Parked)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{zipLocationMsg(t, 1)}))
	got := w.permits[v3.EntityID]
	require.Equal(t, int64(5), got.Version)
	require.Equal(t, "Final", got.Status)
	require.Len(t, w.batchLen, 1, "the older version is never written")

	other := permitEnv(t, func(p *events.Permit) { p.PermitNumber = "9"; p.Address.Zipcode = "98102" })
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{msgOf(t, "permitd.permits.v1", other)}))
	del, err := events.New(events.PermitDeleted, other.EntityID, 4, time.Now(), "test", nil)
	require.NoError(t, err)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{msgOf(t, "permitd.permits.v1", del)}))
	require.Equal(t, int64(0), ix.Progress().Parked)
	require.NoError(t, ix.Settle(ctx))
	_, written := w.permits[other.EntityID]
	require.False(t, written, "a deleted permit is not written when the table settles")
}

// Leads and geo signals wait for their anchor too; a geo signal for a
// geography still unknown once settled is a dead letter.
func TestSignalsWaitForTheirLocation(t *testing.T) {
	ctx := context.Background()
	w := newRecordWriter()
	ix, dead := newTestIndexer(t, w)
	conf := 0.8
	lead := events.Lead{
		SignalKey: "framing_window_late", PermitID: "src:1", PermitNumber: "1", EventDateUsed: "2025-12-01",
		SignalBasis: events.BasisInferredTiming, Confidence: &conf,
		Address:     events.LeadAddress{FullAddress: "600 PINE ST", City: "SEATTLE", State: "WA", Zipcode: "98101"},
		AnchorGeoID: zip98101, SignalVersion: "1.0.0",
	}
	leadID := events.LeadID("src:1", "framing_window_late")
	sig := events.GeoSignal{GeoID: zip98101, SignalKey: "permit_velocity", SignalVersion: "1", Score: 0.5, Confidence: 0.5,
		Decision: events.DecisionNeutral, Value: json.RawMessage(`{}`), ComputedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	orphan := sig
	orphan.GeoID = events.GeoID("zip", "00000")
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{
		msgOf(t, "permitd.permit-leads.v1", mustEnv(t, events.LeadUpserted, leadID, 2, lead)),
		msgOf(t, "permitd.geo-signals.v1", mustEnv(t, events.GeoSignalUpserted, events.GeoSignalID(sig.GeoID, sig.SignalKey), 1, sig)),
		msgOf(t, "permitd.geo-signals.v1", mustEnv(t, events.GeoSignalUpserted, events.GeoSignalID(orphan.GeoID, orphan.SignalKey), 1, orphan)),
	}))
	require.Empty(t, w.leads)
	require.Empty(t, w.signals)
	require.Equal(t, int64(3), ix.Progress().Parked)

	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{zipLocationMsg(t, 1), stateLocationMsg(t)}))
	require.Equal(t, []string{zip98101, seaJur, seaCity, king, waState}, w.leads[leadID].GeoIDs)
	require.Equal(t, "98101 (Seattle, WA)", w.signals[events.GeoSignalID(zip98101, "permit_velocity")].DisplayName)
	require.Empty(t, *dead)

	require.NoError(t, ix.Settle(ctx))
	require.Len(t, *dead, 1)
	require.ErrorIs(t, (*dead)[0], events.ErrInvalid)
	require.Len(t, w.signals, 1)
}
