package indexer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// A projection that fails for a reason a retry can fix (the lookup backend
// is down) fails the batch for the source to retry; only events that can
// never be projected go to the dead-letter sink.
func TestHandleBatchRetriesTransientProjectionErrors(t *testing.T) {
	raw, err := json.Marshal(permitEnv(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	msg := indexer.Message{Topic: "permitd.permits.v1", Value: raw}
	var dead int
	dlq := func(context.Context, indexer.Message, error) error { dead++; return nil }

	store := memory.New(memory.Params{})
	ix, err := indexer.New(indexer.Params{Writer: store, Lookup: fakeLookup{err: readmodel.ErrUnavailable}, DeadLetter: dlq})
	if err != nil {
		t.Fatal(err)
	}
	// Settled: a location the table lacks is read from the Lookup (before,
	// the message would wait without reading).
	if err := ix.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ix.HandleBatch(context.Background(), []indexer.Message{msg}); err == nil {
		t.Fatal("a transient lookup failure must fail the batch")
	}
	if dead != 0 {
		t.Fatalf("transient failure dead-lettered %d messages", dead)
	}

	ix, err = indexer.New(indexer.Params{Writer: store, Lookup: lookup98101(), DeadLetter: dlq})
	if err != nil {
		t.Fatal(err)
	}
	bad := indexer.Message{Topic: "permitd.permits.v1", Value: []byte(`{"schema_version":1`)}
	if err := ix.HandleBatch(context.Background(), []indexer.Message{msg, bad}); err != nil {
		t.Fatal(err)
	}
	if dead != 1 || ix.Progress().DeadLetters != 1 {
		t.Fatalf("dead letters: sink %d, progress %d; want 1", dead, ix.Progress().DeadLetters)
	}
}

// discardWriter accepts every batch without storing it, so a benchmark
// measures decoding and projection alone.
type discardWriter struct{}

func (discardWriter) Apply(_ context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	return readmodel.ApplyResult{Applied: b.Len()}, nil
}

// BenchmarkHandleBatch measures HandleBatch's decode and projection of a
// batch of permits (the write is discarded), per event.
func BenchmarkHandleBatch(b *testing.B) {
	ix, msgs := discardIndexer(b), permitMsgs(b, 2000)
	b.ReportAllocs()
	for b.Loop() {
		if err := ix.HandleBatch(context.Background(), msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/event")
}

// discardIndexer is a settled indexer (ZIP 98101 from the Lookup, into
// its table) writing to discardWriter; a dead letter fails tb (Errorf: a
// hook may run off tb's goroutine).
func discardIndexer(tb testing.TB) *indexer.Indexer {
	tb.Helper()
	ix, err := indexer.New(indexer.Params{Writer: discardWriter{}, Lookup: lookup98101(), DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
		tb.Errorf("unexpected dead letter %s: %v", m.Key, reason)
		return nil
	}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := ix.Settle(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return ix
}

// permitMsgs is n copies of permitEnv's permit on the permits topic, at
// offsets 0 to n-1.
func permitMsgs(tb testing.TB, n int) []indexer.Message {
	tb.Helper()
	raw, err := json.Marshal(permitEnv(tb, nil))
	if err != nil {
		tb.Fatal(err)
	}
	msgs := make([]indexer.Message, n)
	for i := range msgs {
		msgs[i] = indexer.Message{Topic: "permitd.permits.v1", Offset: int64(i), Value: raw}
	}
	return msgs
}

// refusingWriter applies every batch but refuses for good the permits
// whose id is in refuse, as a backend answers a mapping rejection.
type refusingWriter struct {
	refuse map[string]bool
	calls  int
}

func (w *refusingWriter) Apply(_ context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	w.calls++
	var res readmodel.ApplyResult
	var refused readmodel.ItemErrors
	for _, p := range b.Permits {
		if w.refuse[p.PermitID] {
			refused.Items = append(refused.Items, readmodel.ItemError{Kind: readmodel.KindPermit, ID: p.PermitID, Version: p.Version,
				Reason: "400 mapper_parsing_exception: failed to parse field [contractor]"})
			continue
		}
		res.Applied++
	}
	if len(refused.Items) > 0 {
		return res, &refused
	}
	return res, nil
}

// A document the read model refuses for good dead-letters the message
// that produced it with the reason, once, and the batch goes on: no retry.
func TestHandleBatchDeadLettersRefusedDocuments(t *testing.T) {
	var msgs []indexer.Message
	for i, num := range []string{"1", "2", "3"} {
		env := permitEnv(t, func(p *events.Permit) { p.PermitNumber = num })
		raw, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, indexer.Message{Topic: "permitd.permits.v1", Offset: int64(i), Key: []byte(env.EntityID), Value: raw})
	}
	w := &refusingWriter{refuse: map[string]bool{string(msgs[1].Key): true}}
	var dead []indexer.Message
	var reasons []string
	ix, err := indexer.New(indexer.Params{Writer: w, Lookup: lookup98101(), DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
		dead = append(dead, m)
		reasons = append(reasons, reason.Error())
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Settled: ZIP 98101 comes from the Lookup, so no permit waits.
	if err := ix.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ix.HandleBatch(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if w.calls != 1 {
		t.Fatalf("Apply called %d times; a refused document is not retried", w.calls)
	}
	if len(dead) != 1 || dead[0].Offset != 1 {
		t.Fatalf("dead letters %v; want the message at offset 1", dead)
	}
	if !strings.Contains(reasons[0], "mapper_parsing_exception") || !strings.Contains(reasons[0], string(msgs[1].Key)) {
		t.Fatalf("reason %q names neither the item nor the backend's reason", reasons[0])
	}
	if p := ix.Progress(); p.DeadLetters != 1 || p.Applied != 2 || p.Batches != 1 {
		t.Fatalf("progress %+v", p)
	}
}

// keepingWriter keeps the last batch it was given (its slices, not
// copies), so a test can see what the indexer does to them afterwards.
type keepingWriter struct{ last readmodel.Batch }

func (w *keepingWriter) Apply(_ context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	w.last = b
	return readmodel.ApplyResult{Applied: b.Len()}, nil
}

// A batch's slices go back to the pool with every document cleared,
// including the documents merged into it from the parallel decoders'
// parts: the pool must not keep a finished batch's documents alive.
func TestHandleBatchReleasesEveryDocument(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // decoding fans out: the batch is merged from parts
	w := &keepingWriter{}
	ix, err := indexer.New(indexer.Params{Writer: w, DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
		t.Errorf("unexpected dead letter %s: %v", m.Key, reason) // Errorf: a hook may run off the test's goroutine
		return nil
	}})
	require.NoError(t, err)
	msgs := make([]indexer.Message, 300)
	for i := range msgs {
		id := events.GeoID("city", fmt.Sprintf("C%03d", i))
		msgs[i] = msgOf(t, "permitd.locations.v1", mustEnv(t, events.LocationUpserted, id, 1, events.Location{
			GeoType: "city", Name: "City", DisplayName: "City, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		}))
	}
	require.NoError(t, ix.HandleBatch(context.Background(), msgs))
	require.Len(t, w.last.Locations, len(msgs), "one write of the whole batch")
	for i, l := range w.last.Locations {
		require.Empty(t, l.GeoID, "document %d of the released batch still held", i)
	}
}
