package indexer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/pipeline/mix"
	"github.com/permitd/permitd/readmodel/opensearch"
)

// bulkRecorder is an OpenSearch stand-in that records every request and
// acknowledges every _bulk item as created.
type bulkRecorder struct {
	mu        sync.Mutex
	bulk      int
	mget      int
	other     []string
	bulkBytes int64
}

func (r *bulkRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	if strings.HasSuffix(req.URL.Path, "-write/_mget") {
		// The Writer's read of its own documents and cells by id (the
		// counted state of the pre-aggregates): none stored here.
		r.mget++
		r.mu.Unlock()
		var q struct {
			IDs []string `json:"ids"`
		}
		_ = json.Unmarshal(body, &q)
		docs := make([]map[string]any, len(q.IDs))
		for i, id := range q.IDs {
			docs[i] = map[string]any{"_id": id, "found": false}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"docs": docs})
		return
	}
	if !strings.HasPrefix(req.URL.Path, "/_bulk") {
		r.other = append(r.other, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		http.Error(w, `{"error":"not recorded"}`, http.StatusNotFound)
		return
	}
	r.bulk++
	r.bulkBytes += int64(len(body))
	r.mu.Unlock()
	n := bytes.Count(body, []byte{'\n'}) / 2
	var out bytes.Buffer
	out.WriteString(`{"took":1,"errors":false,"items":[`)
	for i := range n {
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString(`{"index":{"status":201}}`)
	}
	out.WriteString(`]}`)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.Bytes())
}

// BenchmarkOpenSearchWriter feeds the real event mix (gazetteer, seattle,
// 20,000 generated permits, their signals) through the indexer into the
// OpenSearch Writer against a recorded bulk transport (an HTTP server that
// acknowledges every item): it reports the rate ("events/s", the
// indexer's decode and projection plus the Writer's encoding and one HTTP
// round trip per batch on loopback), the requests per batch of 2000
// messages, and the _bulk bytes per event. The projection reads no
// location from the read model: the benchmark fails on any document read
// (_search, _msearch, _mget, _doc) but the Writer's own _mget of the
// batch's documents and cells on the write aliases (the pre-aggregates'
// counted state, answered "not found": no cell is written here), counted
// apart as are other requests (the Writer's node stats).
//
//	go test -run '^$' -bench OpenSearchWriter -benchtime 1x ./indexer/
func BenchmarkOpenSearchWriter(b *testing.B) {
	const batch = 2000
	byFamily := map[string][]indexer.Message{}
	var n int
	require.NoError(b, mix.Events(context.Background(), mix.Params{Permits: 20_000, Seed: 1}, func(env events.Envelope) error {
		raw, err := json.Marshal(env)
		if err != nil {
			return err
		}
		topic, err := events.TopicFor(env.Type)
		if err != nil {
			return err
		}
		f := env.Type.Family()
		byFamily[f] = append(byFamily[f], indexer.Message{Topic: topic, Offset: int64(n), Key: []byte(env.EntityID), Value: raw})
		n++
		return nil
	}))
	rec := &bulkRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	store, err := opensearch.New(opensearch.Params{Addresses: []string{srv.URL}})
	require.NoError(b, err)
	defer store.Close()

	var took time.Duration
	batches := 0
	b.ResetTimer()
	for range b.N {
		ix, err := indexer.New(indexer.Params{Writer: store, DeadLetter: func(_ context.Context, m indexer.Message, err error) error {
			return fmt.Errorf("dead letter at %d: %w", m.Offset, err)
		}})
		require.NoError(b, err)
		start := time.Now()
		for k, s := range events.TopicSpecs {
			msgs := byFamily[s.Family]
			for lo := 0; lo < len(msgs); lo += batch {
				require.NoError(b, ix.HandleBatch(context.Background(), msgs[lo:min(lo+batch, len(msgs))]))
				batches++
			}
			if k == 0 {
				require.NoError(b, ix.Settle(context.Background()))
			}
		}
		took += time.Since(start)
	}
	b.StopTimer()
	for _, o := range rec.other {
		for _, read := range []string{"_search", "_msearch", "_mget", "_doc"} {
			require.NotContains(b, o, read, "the projection reads nothing from the read model")
		}
	}
	events := float64(n * b.N)
	b.ReportMetric(events/took.Seconds(), "events/s")
	b.ReportMetric(float64(rec.bulk)/float64(batches), "bulk-requests/batch")
	b.ReportMetric(float64(rec.mget)/float64(batches), "writer-mget/batch")
	b.ReportMetric(float64(len(rec.other))/float64(batches), "other-requests/batch")
	b.ReportMetric(float64(rec.bulkBytes)/events, "bulk-bytes/event")
	b.ReportMetric(float64(n), "events/round")
	b.ReportMetric(0, "ns/op")
}
