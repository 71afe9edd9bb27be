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

// HandleOrder splits recs (of the entity topics, topic giving each one's)
// into batches as a consumer hands them to the indexer: at most size
// records of one topic each, in the order recs have within their topic.
// locations holds the locations topic's batches (handed over first, then
// settled); rest the other topics' batches taking turns, one of each
// topic in events.TopicSpecs order until every topic is done. A record of
// a topic that is not an entity topic is left out.
// BenchmarkHandleMix and test/handlecount hand the mix over in this order.
func HandleOrder[T any](recs []T, topic func(T) string, size int) (locations, rest [][]T) {
	byTopic := map[string][]T{}
	for _, r := range recs {
		byTopic[topic(r)] = append(byTopic[topic(r)], r)
	}
	batches := func(rs []T) (out [][]T) {
		for lo := 0; lo < len(rs); lo += size {
			out = append(out, rs[lo:min(lo+size, len(rs))])
		}
		return out
	}
	locations = batches(byTopic[events.TopicSpecs[0].Name])
	var others [][][]T
	for _, s := range events.TopicSpecs[1:] {
		others = append(others, batches(byTopic[s.Name]))
	}
	for more := true; more; {
		more = false
		for k := range others {
			if len(others[k]) > 0 {
				rest = append(rest, others[k][0])
				others[k] = others[k][1:]
				more = true
			}
		}
	}
	return locations, rest
}
