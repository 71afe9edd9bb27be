package opensearch

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/seattle"
	"github.com/permitd/permitd/pipeline/signals"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// BenchmarkDocumentBytes measures the stored documents of the bundled
// data (the US gazetteer, Seattle's permits and properties, their leads
// and geo signals, projected as the indexer does): per kind, the mean
// _source bytes per document as the Writer sends it, and the same
// compressed with DEFLATE in 60 KiB blocks, the way
// index.codec: best_compression stores it. docs/operations.md (bytes per
// document) adds the doc values, points and postings the mappings keep.
//
//	go test ./readmodel/opensearch -run '^$' -bench DocumentBytes -benchtime 1x
func BenchmarkDocumentBytes(b *testing.B) {
	ctx := context.Background()
	var envs []events.Envelope
	pl, err := signals.New(signals.Params{AsOf: time.Date(2025, 6, 30, 0, 0, 0, 0, time.UTC)}, func(e events.Envelope) error {
		envs = append(envs, e)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	emit := func(e events.Envelope) error {
		envs = append(envs, e)
		return pl.Add(e)
	}
	if _, err := gazetteer.Import(ctx, data.Open, emit); err != nil {
		b.Fatal(err)
	}
	if _, err := seattle.Import(ctx, data.Open, emit); err != nil {
		b.Fatal(err)
	}
	if _, err := pl.Finish(ctx); err != nil {
		b.Fatal(err)
	}
	m := memory.New(memory.Params{})
	sources := map[readmodel.Kind]*bytes.Buffer{}
	docs := map[readmodel.Kind]int{}
	for _, env := range envs {
		batch, err := indexer.Project(ctx, env, m)
		if err != nil {
			continue // dead-lettered by the indexer
		}
		if _, err := m.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
		batch.Deletes = nil
		for _, it := range items(batch, 1782777600000) {
			raw, err := json.Marshal(it.doc)
			if err != nil {
				b.Fatal(err)
			}
			if sources[it.kind] == nil {
				sources[it.kind] = &bytes.Buffer{}
			}
			sources[it.kind].Write(raw)
			docs[it.kind]++
		}
	}
	for b.Loop() {
		for _, k := range readmodel.Kinds {
			if docs[k] == 0 {
				continue
			}
			n := float64(docs[k])
			b.ReportMetric(n, mappings.Base(k)+"_docs")
			b.ReportMetric(float64(sources[k].Len())/n, mappings.Base(k)+"_source_B/doc")
			b.ReportMetric(float64(deflatedBlocks(b, sources[k].Bytes()))/n, mappings.Base(k)+"_deflate_B/doc")
		}
	}
}

// deflatedBlocks is the size of raw compressed in independent 60 KiB
// blocks (Lucene's stored fields block size for best_compression).
func deflatedBlocks(b *testing.B, raw []byte) int {
	const block = 60 << 10
	total := 0
	for len(raw) > 0 {
		n := min(block, len(raw))
		var buf bytes.Buffer
		w, err := flate.NewWriter(&buf, 6)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = w.Write(raw[:n])
		_ = w.Close()
		total += buf.Len()
		raw = raw[n:]
	}
	return total
}
