package conformance

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

// CapUnlinkedListing: the backend keeps what a document written before
// its location waits for, and lists it (readmodel.UnlinkedLister), so a
// restarted consumer group member re-links it (docs/kafka.md, Re-links).
const CapUnlinkedListing Capability = "unlinked_listing"

// relinkAfterRestart: an indexer writes the permits of a ZIP the read
// model does not know yet; the backend lists them (once each, with their
// message) for the partition they came from and for no other. An
// indexer that starts afterwards (a restarted member, its memory empty)
// recovers them; when the ZIP arrives they are linked to it, and nothing
// waits any more.
func relinkAfterRestart(t *testing.T, e *Env) {
	lister, ok := e.B.(readmodel.UnlinkedLister)
	if !ok {
		e.Require(t, CapUnlinkedListing)
		t.Fatalf("%s provider does not list waiting documents but does not declare %s in its capabilities list", e.h.Name, CapUnlinkedListing)
	}
	ctx := context.Background()
	const topic = "permitd.permits.v1"
	var wa, zip indexer.Message
	for _, env := range LocationEvents(t) {
		switch env.EntityID {
		case WA:
			wa = e.message(t, "permitd.locations.v1", 0, env)
		case Zip98101:
			zip = e.message(t, "permitd.locations.v1", 0, env)
		}
	}
	var permits []indexer.Message
	for _, env := range PermitEvents(t) {
		if d, err := events.Payload[events.Permit](env); err == nil && d.Address.Zipcode == "98101" {
			permits = append(permits, e.message(t, topic, 3, env))
		}
	}
	require.NotEmpty(t, permits)

	first := e.indexer(t)
	require.NoError(t, first.HandleBatch(ctx, []indexer.Message{wa}))
	require.NoError(t, first.Settle(ctx))
	require.NoError(t, first.HandleBatch(ctx, permits))
	e.refresh(t)

	listed := func(parts map[string][]int) map[string]string {
		out := map[string]string{}
		require.NoError(t, lister.ScanUnlinked(ctx, readmodel.UnlinkedScan{Partitions: parts, PageSize: 3}, func(page []readmodel.Awaiting) error {
			for _, a := range page {
				require.Equal(t, readmodel.KindPermit, a.Kind)
				require.Equal(t, Zip98101, a.GeoID)
				require.Equal(t, topic, a.Topic)
				require.NotContains(t, out, a.ID, "listed once")
				out[a.ID] = string(a.Value)
			}
			return nil
		}))
		return out
	}
	want := map[string]string{}
	for _, m := range permits {
		want[string(m.Key)] = string(m.Value)
	}
	require.Equal(t, want, listed(nil), "every permit waits for the ZIP, with its message")
	require.Equal(t, want, listed(map[string][]int{topic: {3}}))
	require.Empty(t, listed(map[string][]int{topic: {0, 1}}), "a partition they did not come from")

	restarted := e.indexer(t)
	r, err := restarted.RecoverUnlinked(ctx, map[string][]int{topic: {3}})
	require.NoError(t, err)
	require.Equal(t, indexer.Recovered{Listed: len(permits), Remembered: len(permits)}, r)
	require.NoError(t, restarted.Settle(ctx))
	require.NoError(t, restarted.HandleBatch(ctx, []indexer.Message{zip}))
	e.refresh(t)
	require.Empty(t, listed(nil), "re-linked: nothing waits")
	loc, err := e.B.Location(ctx, readmodel.ParseGeoRef(Zip98101))
	require.NoError(t, err)
	require.Equal(t, int64(len(permits)), loc.PermitCount, "the ZIP counts its re-linked permits")
}

// message is env as the Kafka source hands it to the indexer.
func (e *Env) message(t *testing.T, topic string, partition int, env events.Envelope) indexer.Message {
	raw, err := json.Marshal(env)
	require.NoError(t, err)
	return indexer.Message{Topic: topic, Partition: partition, Offset: env.EntityVersion, Key: []byte(env.EntityID), Value: raw}
}

// indexer is an indexer over the backend, as a consumer group member
// runs it (the backend is its Lookup).
func (e *Env) indexer(t *testing.T) *indexer.Indexer {
	ix, err := indexer.New(indexer.Params{Writer: e.B, Lookup: e.B, DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
		t.Errorf("dead letter %s: %v", m.Key, reason)
		return nil
	}})
	require.NoError(t, err)
	return ix
}
