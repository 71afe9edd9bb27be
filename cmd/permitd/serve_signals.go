package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gen"
	"github.com/permitd/permitd/pipeline/signals"
)

// demoPermitCount is the number of synthetic Washington permits the
// bundled data adds so that leads are fresh whatever the real data's age.
const demoPermitCount = 20_000

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

// demoPermits yields n generated permits in Washington's places, issued
// up to now.
func demoPermits(now time.Time, n int) indexer.Producer {
	return func(ctx context.Context, emit func(topic string, key, value []byte) error) error {
		_, err := gen.Generate(ctx, gen.Params{Permits: n, Seed: 1, Now: now, Open: openOneState("WA")},
			envelopeEmitter(emit))
		return err
	}
}

// openOneState opens the bundled data with the cities file cut to one
// state's rows, so the generator spreads permits over that state only.
func openOneState(state string) func(string) (io.ReadCloser, error) {
	return func(name string) (io.ReadCloser, error) {
		rc, err := data.Open(name)
		if err != nil || name != data.Cities {
			return rc, err
		}
		defer rc.Close()
		r := csv.NewReader(rc)
		r.FieldsPerRecord = -1
		rows, err := r.ReadAll()
		if err != nil {
			return nil, fmt.Errorf("demo data: %s: %w", name, err)
		}
		col := -1
		for i, h := range rows[0] {
			if h == "state_id" {
				col = i
			}
		}
		if col < 0 {
			return nil, fmt.Errorf("demo data: %s has no state_id column", name)
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		for i, row := range rows {
			if i == 0 || col < len(row) && row[col] == state {
				if err := w.Write(row); err != nil {
					return nil, err
				}
			}
		}
		w.Flush()
		return io.NopCloser(&buf), w.Error()
	}
}

// signalDataParams configure the signal part of the embedded data.
type signalDataParams struct {
	// AsOf is the service clock at start: leads dated after it wait, geo
	// windows end at it.
	AsOf time.Time
	// Demo, when set, yields recent permit events (pipeline/gen with Now =
	// AsOf) that run after the bundled producers, so fresh leads exist
	// whatever the age of the real data. DemoInfo describes it for
	// readiness.
	Demo     indexer.Producer
	DemoInfo string
}

// withSignals adds the reference signal pipeline to the embedded data.
//
// Every event of producers (and of p.Demo, run after them) passes through
// unchanged while the pipeline reads it; each permit's leads follow the
// permit in the same producer, so they are projected after the locations
// the earlier producers wrote. A last producer emits the catalog (every
// state seen, and WA) and the geo signal rows. The check reports, under
// "signals" in /v1/health/ready, the as-of date, the demo data and what was
// emitted; it is always OK (the indexer check says when data is caught up).
func withSignals(p signalDataParams, producers []indexer.Producer) ([]indexer.Producer, api.ReadinessCheck, error) {
	t := &signalTee{asOf: p.AsOf.UTC(), demoInfo: p.DemoInfo}
	pl, err := signals.New(signals.Params{AsOf: t.asOf}, t.forward)
	if err != nil {
		return nil, nil, err
	}
	t.pl = pl
	if p.Demo != nil {
		producers = append(producers[:len(producers):len(producers)], p.Demo)
	}
	out := make([]indexer.Producer, 0, len(producers)+1)
	for _, prod := range producers {
		out = append(out, t.tee(prod))
	}
	out = append(out, t.finish)
	return out, t.check, nil
}

// signalTee runs the pipeline inside the feed. Producers run one after
// another on the feed's goroutine; mu only guards the report for
// readiness.
type signalTee struct {
	asOf     time.Time
	demoInfo string
	pl       *signals.Pipeline
	emit     func(topic string, key, value []byte) error // the running producer's

	mu   sync.Mutex
	rep  signals.Report
	done bool
}

func (t *signalTee) forward(env events.Envelope) error {
	return envelopeEmitter(t.emit)(env)
}

func (t *signalTee) tee(prod indexer.Producer) indexer.Producer {
	return func(ctx context.Context, emit func(topic string, key, value []byte) error) error {
		t.emit = emit
		return prod(ctx, func(topic string, key, value []byte) error {
			if err := emit(topic, key, value); err != nil {
				return err
			}
			env, err := events.Decode(value)
			if err != nil {
				return nil // the indexer dead-letters it; the pipeline has nothing to read
			}
			if err := t.pl.Add(env); err != nil {
				return fmt.Errorf("signals: %s %s: %w", env.Type, env.EntityID, err)
			}
			return nil
		})
	}
}

func (t *signalTee) finish(ctx context.Context, emit func(topic string, key, value []byte) error) error {
	t.emit = emit
	rep, err := t.pl.Finish(ctx)
	t.mu.Lock()
	t.rep, t.done = rep, err == nil
	t.mu.Unlock()
	return err
}

func (t *signalTee) check(context.Context) api.Check {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := map[string]any{
		"pipeline":        signals.Source + " " + signals.SignalVersion,
		"as_of":           t.asOf.Format(time.DateOnly),
		"computed":        t.done,
		"demo_data":       t.demoInfo,
		"leads":           t.rep.Leads,
		"geo_signals":     t.rep.GeoSignals,
		"catalog_entries": t.rep.CatalogEntries,
	}
	if t.demoInfo == "" {
		d["demo_data"] = "none"
	}
	return api.Check{Name: "signals", OK: true, Detail: d}
}
