package indexer_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/memstore"
	"github.com/permitd/permitd/pipeline/mix"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestDocumentsKeepNoMessageBytes: the read model keeps nothing of a
// message's bytes. The decoding lends the envelope with its Data and
// event id aliasing the message, and a source may reuse its buffers once
// a batch is handled: here every byte of each batch's messages is
// overwritten right after it, and the documents equal those written
// from messages left alone, for every kind of the real mix.
func TestDocumentsKeepNoMessageBytes(t *testing.T) {
	if raceDetector {
		// It writes the whole mix twice from one goroutine: no race to
		// find, and ten times as long (make test runs it without -race).
		t.Skip("not a concurrency test; run without -race")
	}
	var msgs []indexer.Message
	require.NoError(t, mix.Events(t.Context(), mix.Params{Permits: 1500, Seed: 3, AsOf: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)},
		indexer.Envelopes(func(topic string, key, value []byte) error {
			msgs = append(msgs, indexer.Message{Topic: topic, Offset: int64(len(msgs)), Key: key, Value: value})
			return nil
		})))
	byTopic := map[string][]indexer.Message{}
	for _, m := range msgs {
		byTopic[m.Topic] = append(byTopic[m.Topic], m)
	}
	write := func(scribble bool) *memory.Store {
		store := memstore.New()
		ix, err := indexer.New(indexer.Params{Writer: store, DeadLetter: func(_ context.Context, _ indexer.Message, err error) error { return err }})
		require.NoError(t, err)
		for _, s := range events.TopicSpecs { // the locations first
			all := byTopic[s.Name]
			for lo := 0; lo < len(all); lo += 500 {
				batch := make([]indexer.Message, 0, 500)
				for _, m := range all[lo:min(lo+500, len(all))] {
					m.Key, m.Value = append([]byte(nil), m.Key...), append([]byte(nil), m.Value...)
					batch = append(batch, m)
				}
				require.NoError(t, ix.HandleBatch(t.Context(), batch))
				if scribble {
					for _, m := range batch {
						for i := range m.Key {
							m.Key[i] = '#'
						}
						for i := range m.Value {
							m.Value[i] = '#'
						}
					}
				}
			}
			if s.Name == events.TopicSpecs[0].Name {
				require.NoError(t, ix.Settle(t.Context()))
			}
		}
		return store
	}
	want, got := export(t, write(false)), export(t, write(true))
	for k, docs := range want {
		require.NotEmpty(t, docs, "kind %v", k)
	}
	require.Len(t, got, len(want))
	for k := range want {
		require.Len(t, got[k], len(want[k]), "kind %v", k)
		for i := range want[k] {
			if want[k][i] != got[k][i] {
				t.Errorf("kind %v, document %d of %d differs:\n got %s\nwant %s", k, i, len(want[k]), got[k][i], want[k][i])
				break
			}
		}
	}
}

// export is every document of s by kind, each as JSON, sorted.
func export(t *testing.T, s *memory.Store) map[readmodel.Kind][]string {
	out := map[readmodel.Kind][]string{}
	require.NoError(t, s.Export(t.Context(), 1000, func(b readmodel.Batch) error {
		addJSON(t, out, readmodel.KindLocation, b.Locations)
		addJSON(t, out, readmodel.KindPermit, b.Permits)
		addJSON(t, out, readmodel.KindProperty, b.Properties)
		addJSON(t, out, readmodel.KindGeoSignal, b.GeoSignals)
		addJSON(t, out, readmodel.KindLead, b.Leads)
		addJSON(t, out, readmodel.KindCatalog, b.Catalog)
		return nil
	}))
	for _, docs := range out {
		slices.Sort(docs)
	}
	return out
}

// addJSON appends docs to out[k], each as JSON.
func addJSON[T any](t *testing.T, out map[readmodel.Kind][]string, k readmodel.Kind, docs []T) {
	for _, d := range docs {
		raw, err := json.Marshal(d)
		require.NoError(t, err)
		out[k] = append(out[k], string(raw))
	}
}
