package indexer_test

import (
	"context"
	"encoding/json"
	"testing"

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

	store := memory.New(memory.Options{})
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
	raw, err := json.Marshal(permitEnv(b, nil))
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]indexer.Message, 2000)
	for i := range msgs {
		msgs[i] = indexer.Message{Topic: "permitd.permits.v1", Offset: int64(i), Value: raw}
	}
	ix, err := indexer.New(indexer.Params{Writer: discardWriter{}, Lookup: lookup98101(), DeadLetter: func(context.Context, indexer.Message, error) error {
		b.Fatal("unexpected dead letter")
		return nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Settle(context.Background()); err != nil { // ZIP 98101 from the Lookup, into the table
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := ix.HandleBatch(context.Background(), msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/event")
}
