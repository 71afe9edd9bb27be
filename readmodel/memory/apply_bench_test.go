package memory_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/pipeline/mix"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// BenchmarkApplyMix: the write side alone. The real mix (pipeline/mix:
// the gazetteer, gen's permits and properties, their leads and geo
// signals; PERMITD_BENCH_APPLY_PERMITS permits, default 20,000) is
// projected once, in batches of one kind as the indexer hands them over,
// and each round applies every batch, in order, to a new Store from one
// goroutine. It reports the process's CPU time per document of each kind
// (both left-right sides and the garbage collector included): the store's share of the mix ingest
// (indexer/kafka BenchmarkIngestMix), without the broker and the
// decoding, so before/after pairs compare on a busy machine.
func BenchmarkApplyMix(b *testing.B) {
	batches := applyMixBatches(b)
	ctx := context.Background()
	spent := map[string]time.Duration{}
	docs := map[string]int{}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := memory.New(memory.Params{})
		for _, mb := range batches {
			t0 := cpuTime()
			if _, err := s.Apply(ctx, mb.b); err != nil {
				b.Fatal(err)
			}
			spent[mb.kind] += cpuTime() - t0
			docs[mb.kind] += mb.b.Len()
		}
	}
	var all time.Duration
	var n int
	for k, d := range spent {
		b.ReportMetric(float64(d.Nanoseconds())/float64(docs[k]), "ns/"+k)
		all += d
		n += docs[k]
	}
	b.ReportMetric(float64(all.Nanoseconds())/float64(n), "ns/doc")
}

type kindBatch struct {
	kind string
	b    readmodel.Batch
}

var (
	applyMixOnce sync.Once
	applyMixData []kindBatch
	applyMixErr  error
)

func applyMixBatches(b *testing.B) []kindBatch {
	b.Helper()
	permits := 20_000
	if n, err := strconv.Atoi(os.Getenv("PERMITD_BENCH_APPLY_PERMITS")); err == nil && n > 0 {
		permits = n
	}
	applyMixOnce.Do(func() { applyMixData, applyMixErr = buildApplyMix(permits) })
	if applyMixErr != nil {
		b.Fatal(applyMixErr)
	}
	return applyMixData
}

// buildApplyMix projects the mix against a scratch store (the projection
// looks locations up), in batches of up to 1,024 documents of one kind.
func buildApplyMix(permits int) ([]kindBatch, error) {
	ctx := context.Background()
	scratch := memory.New(memory.Params{StatsCacheSize: -1})
	var out []kindBatch
	var cur kindBatch
	flush := func() error {
		if cur.b.Len() == 0 {
			return nil
		}
		if _, err := scratch.Apply(ctx, cur.b); err != nil {
			return err
		}
		out = append(out, cur)
		cur = kindBatch{}
		return nil
	}
	err := mix.Events(ctx, mix.Params{Permits: permits, Seed: 1, AsOf: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, func(env events.Envelope) error {
		topic, err := events.TopicFor(env.Type)
		if err != nil {
			return err
		}
		kind := strings.TrimSuffix(strings.TrimPrefix(topic, "permitd."), ".v1")
		if kind != cur.kind || cur.b.Len() >= 1024 {
			if err := flush(); err != nil {
				return err
			}
			cur.kind = kind
		}
		p, err := indexer.Project(ctx, env, scratch)
		if err != nil {
			return err
		}
		cur.b.Append(p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, flush()
}
