// Package mix produces the real event mix for benchmarks: what `permitd
// import gazetteer`, `permitd import seattle`, `permitd gen -permits N`
// and `permitd signals` (over the seattle and generated permits) emit,
// in their proportions and in that order.
package mix

import (
	"context"
	"errors"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/gen"
	"github.com/permitd/permitd/pipeline/seattle"
	"github.com/permitd/permitd/pipeline/signals"
)

// Params say how much to produce.
type Params struct {
	// Permits is gen's permit count (at least 1).
	Permits int
	// Seed is gen's seed.
	Seed int64
	// AsOf is gen's Now and the signals' AsOf; zero means 2026-01-01.
	AsOf time.Time
	// NoLocations leaves the gazetteer out (a store that already holds it).
	NoLocations bool
}

// Events emits the mix.
func Events(ctx context.Context, p Params, emit func(events.Envelope) error) error {
	if p.Permits < 1 {
		return errors.New("mix: Permits must be at least 1")
	}
	if p.AsOf.IsZero() {
		p.AsOf = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if !p.NoLocations {
		if _, err := gazetteer.Import(ctx, data.Open, emit); err != nil {
			return err
		}
	}
	sig, err := signals.New(signals.Params{AsOf: p.AsOf}, emit)
	if err != nil {
		return err
	}
	both := sig.Tee(emit)
	if _, err := seattle.Import(ctx, data.Open, both); err != nil {
		return err
	}
	if _, err := gen.Generate(ctx, gen.Params{Permits: p.Permits, Seed: p.Seed, Now: p.AsOf}, both); err != nil {
		return err
	}
	_, err = sig.Finish(ctx)
	return err
}
