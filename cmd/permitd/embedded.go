package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/indexer"
	pdata "github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/gen"
	"github.com/permitd/permitd/pipeline/seattle"
	"github.com/permitd/permitd/pipeline/signals"
)

// embeddedIndexer is serve's in-process indexer: it feeds the bundled
// data (and the demo permits), with the reference signal pipeline beside
// them, through the same decode and projection as Kafka. With data
// "none" it feeds nothing and reports no check.
type embeddedIndexer struct {
	ix        *indexer.Indexer
	rm        readModel
	feed      *indexer.Feed
	producers []indexer.Producer
	data      string             // serve's -data
	checkName string             // "indexer", or "bundled_feed" beside Kafka's indexer
	signals   api.ReadinessCheck // nil without data
	log       *slog.Logger
	// settled is set once Run has applied every event, warmed the
	// resolvers and collected the feed's garbage: readiness waits for it.
	settled atomic.Bool
}

func newEmbeddedIndexer(rm readModel, data string, asOf time.Time, besideKafka bool, log *slog.Logger, m *indexer.Metrics) (*embeddedIndexer, error) {
	ix, err := indexer.New(indexer.Params{Writer: rm, Lookup: rm, DeadLetter: feedDeadLetter, Logger: log, Metrics: m})
	if err != nil {
		return nil, err
	}
	e := &embeddedIndexer{ix: ix, rm: rm, feed: indexer.NewFeed(ix, 4096), data: data, checkName: "indexer", log: log}
	if besideKafka {
		e.checkName = "bundled_feed"
	}
	if e.hasData() {
		if e.producers, e.signals, err = withSignals(bundledSignalData(asOf, data), bundledSources()); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// hasData reports whether the feed carries the bundled data.
func (e *embeddedIndexer) hasData() bool { return e.data != "none" }

// checks are the feed's readiness checks: the signals it computed, and
// whether every produced event is applied. None without data.
func (e *embeddedIndexer) checks() []api.ReadinessCheck {
	if !e.hasData() {
		return nil
	}
	return []api.ReadinessCheck{e.signals, func(context.Context) api.Check {
		p := e.ix.Progress()
		caught, settled := e.feed.CaughtUp(), e.settled.Load()
		return api.Check{Name: e.checkName, OK: caught && settled && p.Batches > 0, Detail: map[string]any{
			"source": "embedded:" + e.data, "caught_up": caught, "settled": settled, "lag": e.feed.Lag(),
			"batches_applied": p.Batches, "events_applied": p.Applied, "dead_letters": p.DeadLetters,
		}}
	}}
}

// Run feeds every event and returns once all are applied, or nil when
// ctx ends first.
func (e *embeddedIndexer) Run(ctx context.Context) error {
	start := time.Now()
	if err := e.feed.Run(ctx, e.producers...); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("embedded indexer: %w", err)
	}
	p := e.ix.Progress()
	e.log.Info("embedded indexer caught up", "events_applied", p.Applied, "dead_letters", p.DeadLetters, "took", time.Since(start).Round(time.Millisecond))
	if e.hasData() {
		e.settle()
	}
	e.settled.Store(true)
	return nil
}

// settle does, before serve reports ready, what would otherwise compete
// with the first requests after it: the warm (memory.(*Store).WarmResolvers:
// what the place resolver leaves to its first two-typo search, built now
// rather than by a user's), and a collection of the feed's garbage.
//
// Measured with serve on one core (GOMAXPROCS=1, as the load harness runs
// it) with the warm after ready: the three state-wide stats requests sent
// at once after ready took 13.9 to 40.5 ms (four starts), a location read
// every 2 ms over the next 6 s up to 28.9 to 45.5 ms, against 0.3 to 1 ms
// at other times. A trace showed a collection's mark phase then (the
// feed's garbage and the warm's allocations had reached the heap's goal,
// 589 MB live, marked in about 0.7 s) whose fractional mark worker, with
// one P, ran 12 to 20 ms at a time while requests waited, and the warm,
// which the runtime preempts every 10 ms. With both here: 0.5 to 2.3 ms
// and at most 2.9 to 7.2 ms, ready about half a second later (10.9 to
// 11.5 s after start, against 10.0 to 11.9). With two cores neither moved
// much (cold 0.5 to 1.5 ms either way). The first collection after ready
// now waits for the heap to double from its live size.
func (e *embeddedIndexer) settle() {
	if w, ok := e.rm.(interface{ WarmResolvers() }); ok {
		w.WarmResolvers()
	}
	runtime.GC()
}

// feedDeadLetter is the embedded feed's dead-letter sink. There is no
// dead-letter topic in process, and the bundled data is built and tested
// to have no poison event, so one is a defect of the build: rather than log
// and skip it, the feed fails and serve stops, naming the event and why.
func feedDeadLetter(_ context.Context, m indexer.Message, reason error) error {
	return fmt.Errorf("bundled event %d (%s, key %q) can never be projected: %w", m.Offset, m.Topic, m.Key, reason)
}

// envelopeSource yields events as envelopes: an importer or the generator.
type envelopeSource func(ctx context.Context, emit signals.Emit) error

// bundledSources yield the bundled real data, in dependency order:
// locations first (permits look up their ZIP's location).
func bundledSources() []envelopeSource {
	return []envelopeSource{
		func(ctx context.Context, emit signals.Emit) error {
			_, err := gazetteer.Import(ctx, pdata.Open, emit)
			return err
		},
		func(ctx context.Context, emit signals.Emit) error {
			_, err := seattle.Import(ctx, pdata.Open, emit)
			return err
		},
	}
}

// demoPermitCount is the number of synthetic Washington permits the
// bundled data adds so that leads are fresh whatever the real data's age.
const demoPermitCount = 20_000

// demoPermits yields n generated permits in Washington's places, issued
// up to now.
func demoPermits(now time.Time, n int) envelopeSource {
	return func(ctx context.Context, emit signals.Emit) error {
		_, err := gen.Generate(ctx, gen.Params{Permits: n, Seed: 1, Now: now, States: []string{"WA"}}, emit)
		return err
	}
}

// signalDataParams configure the signal part of the embedded data.
type signalDataParams struct {
	// AsOf is the service clock at start: leads dated after it wait, geo
	// windows end at it.
	AsOf time.Time
	// Demo, when set, yields recent permit events (pipeline/gen with Now =
	// AsOf) that run after the bundled sources, so fresh leads exist
	// whatever the age of the real data. DemoInfo describes it for
	// readiness.
	Demo     envelopeSource
	DemoInfo string
}

// bundledSignalData is the decision for `make run`: the real Seattle
// permits end in 2025-10, so beside them the embedded data carries
// demoPermitCount synthetic permits (pipeline/gen, source "synthetic")
// spread over Washington's places and issued over the three years up to
// the service clock's today; signals are computed as of that clock. With
// data "none" there is no demo data.
func bundledSignalData(asOf time.Time, dataMode string) signalDataParams {
	p := signalDataParams{AsOf: asOf}
	if dataMode == "bundled" {
		p.Demo = demoPermits(asOf, demoPermitCount)
		p.DemoInfo = fmt.Sprintf("%d synthetic WA permits (source %q, pipeline/gen seed 1) issued over the 3 years up to %s, beside the real Seattle permits (latest issued 2025-10-29)",
			demoPermitCount, gen.Source, asOf.Format(time.DateOnly))
	}
	return p
}

// withSignals turns sources (and p.Demo, run after them) into the feed's
// producers, with the reference signal pipeline reading every event on
// its way (signals.Pipeline.Tee): each permit's leads follow the permit
// in the same producer, so they are projected after the locations the
// earlier producers wrote. A last producer emits the catalog (every state
// seen, and WA) and the geo signal rows. The check reports, under
// "signals" in /v1/health/ready, the as-of date, the demo data and what
// was emitted; it is always OK (the indexer check says when data is
// caught up).
func withSignals(p signalDataParams, sources []envelopeSource) ([]indexer.Producer, api.ReadinessCheck, error) {
	st := &signalStatus{asOf: p.AsOf.UTC(), demoInfo: p.DemoInfo}
	pl, err := signals.New(signals.Params{AsOf: st.asOf}, nil)
	if err != nil {
		return nil, nil, err
	}
	if p.Demo != nil {
		sources = append(sources[:len(sources):len(sources)], p.Demo)
	}
	out := make([]indexer.Producer, 0, len(sources)+1)
	for _, src := range sources {
		out = append(out, func(ctx context.Context, emit indexer.Emit) error {
			return src(ctx, pl.Tee(indexer.Envelopes(emit)))
		})
	}
	out = append(out, func(ctx context.Context, emit indexer.Emit) error {
		rep, err := pl.FinishTo(ctx, indexer.Envelopes(emit))
		st.finished(rep, err)
		return err
	})
	return out, st.check, nil
}

// signalStatus is what the signals readiness check reports; the feed's
// goroutine writes it once, readiness reads it.
type signalStatus struct {
	asOf     time.Time
	demoInfo string

	mu   sync.Mutex
	rep  signals.Report
	done bool
}

func (s *signalStatus) finished(rep signals.Report, err error) {
	s.mu.Lock()
	s.rep, s.done = rep, err == nil
	s.mu.Unlock()
}

func (s *signalStatus) check(context.Context) api.Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := map[string]any{
		"pipeline":        signals.Source + " " + signals.SignalVersion,
		"as_of":           s.asOf.Format(time.DateOnly),
		"computed":        s.done,
		"demo_data":       s.demoInfo,
		"leads":           s.rep.Leads,
		"geo_signals":     s.rep.GeoSignals,
		"catalog_entries": s.rep.CatalogEntries,
	}
	if s.demoInfo == "" {
		d["demo_data"] = "none"
	}
	return api.Check{Name: "signals", OK: true, Detail: d}
}
