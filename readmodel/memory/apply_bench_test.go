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

// BenchmarkApplyMixConcurrent: the write side as the indexer drives it,
// without the broker and the decoding. The mix of BenchmarkApplyMix is
// applied to a new Store per round: the locations first (replay mode
// holds the other topics until they are in), then one goroutine per
// family, each applying its family's batches in order, as the consumers
// of the partitions do. The store groups the concurrent calls into steps
// and writes a step's lanes side by side (apply.go). It reports the wall
// time per document and the process's cores (CPU time over wall time)
// over the concurrent phase: how much of the two cores the writer's
// lanes use.
func BenchmarkApplyMixConcurrent(b *testing.B) {
	batches := applyMixBatches(b)
	ctx := context.Background()
	var locs []readmodel.Batch
	byKind := map[string][]readmodel.Batch{}
	docs := 0
	for _, mb := range batches {
		if mb.kind == "locations" {
			locs = append(locs, mb.b)
			continue
		}
		byKind[mb.kind] = append(byKind[mb.kind], mb.b)
		docs += mb.b.Len()
	}
	var wall, cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := memory.New(memory.Params{})
		for _, l := range locs {
			if _, err := s.Apply(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
		t0, c0 := time.Now(), cpuTime()
		var wg sync.WaitGroup
		for _, bs := range byKind {
			wg.Go(func() {
				for _, x := range bs {
					if _, err := s.Apply(ctx, x); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		wall += time.Since(t0)
		cpu += cpuTime() - c0
	}
	b.ReportMetric(float64(wall.Nanoseconds())/float64(docs*b.N), "wall-ns/doc")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(docs*b.N), "cpu-ns/doc")
	b.ReportMetric(float64(cpu)/float64(wall), "cores")
}

// BenchmarkReplayMix: the mix of BenchmarkApplyMix as a replay writes
// it (replay.go): into a new Store per round, BeginReplay, every batch
// applied in order from one goroutine (one side), EndReplay. It reports
// the wall time per document until EndReplay returned ("ns/doc-ready":
// readable) and until the second side, built from the first's export in
// the background, is in place ("ns/doc-settled"), and the process's CPU
// time per document over the whole ("cpu-ns/doc", against ApplyMix's
// ns/doc for both sides written batch by batch).
func BenchmarkReplayMix(b *testing.B) {
	batches := applyMixBatches(b)
	ctx := context.Background()
	docs := 0
	for _, mb := range batches {
		docs += mb.b.Len()
	}
	var ready, settled, cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := memory.New(memory.Params{})
		t0, c0 := time.Now(), cpuTime()
		if !s.BeginReplay() {
			b.Fatal("a new store refused a replay")
		}
		for _, mb := range batches {
			if _, err := s.Apply(ctx, mb.b); err != nil {
				b.Fatal(err)
			}
		}
		s.EndReplay()
		ready += time.Since(t0)
		s.Settle()
		settled += time.Since(t0)
		cpu += cpuTime() - c0
	}
	n := float64(docs * b.N)
	b.ReportMetric(float64(ready.Nanoseconds())/n, "ns/doc-ready")
	b.ReportMetric(float64(settled.Nanoseconds())/n, "ns/doc-settled")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/doc")
}
