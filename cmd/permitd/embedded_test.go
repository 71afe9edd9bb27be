package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/memstore"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestWithSignalsDemo feeds only the demo permits through the hook: every
// permit is in WA, leads and the catalog are emitted, fresh leads exist as
// of the clock.
func TestWithSignalsDemo(t *testing.T) {
	now := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	p := bundledSignalData(now, "bundled")
	p.Demo = demoPermits(now, 2000)
	counts := map[events.Type]int{}
	fresh := 0
	prods, check, err := withSignals(p, nil)
	require.NoError(t, err)
	for _, prod := range prods {
		require.NoError(t, prod(context.Background(), func(topic string, key, value []byte) error {
			env, err := events.Decode(value)
			require.NoError(t, err)
			require.Equal(t, string(key), env.EntityID)
			counts[env.Type]++
			switch env.Type {
			case events.PermitUpserted:
				var d events.Permit
				require.NoError(t, events.DecodeData(env, &d))
				require.Equal(t, "WA", d.Address.State)
			case events.LeadUpserted:
				var l events.Lead
				require.NoError(t, events.DecodeData(env, &l))
				if l.EventDateUsed >= now.AddDate(0, 0, -60).Format(time.DateOnly) {
					fresh++
				}
			}
			return nil
		}))
	}
	require.Equal(t, 2000, counts[events.PermitUpserted])
	require.Positive(t, counts[events.LeadUpserted])
	require.Equal(t, 9, counts[events.CatalogUpserted])
	require.Positive(t, fresh)
	c := check(context.Background())
	require.True(t, c.OK)
	require.Equal(t, true, c.Detail["computed"])
	require.Equal(t, "2026-01-15", c.Detail["as_of"])
	require.Contains(t, c.Detail["demo_data"], "synthetic WA permits")

	// Without locations the leads cannot anchor; with none the hook adds
	// nothing but the catalog.
	none := bundledSignalData(now, "none")
	require.Nil(t, none.Demo)
	store := memory.New(memory.Params{})
	ix, err := indexer.New(indexer.Params{Writer: store, Lookup: store, DeadLetter: func(context.Context, indexer.Message, error) error { return nil }})
	require.NoError(t, err)
	prods, _, err = withSignals(none, nil)
	require.NoError(t, err)
	require.NoError(t, indexer.NewFeed(ix, 100).Run(context.Background(), prods...))
	cat, err := store.Catalog(context.Background(), readmodel.CatalogQuery{State: "WA"})
	require.NoError(t, err)
	require.Len(t, cat, 9)
}

// warmCounting is a memory backend that counts WarmResolvers calls.
type warmCounting struct {
	*memory.Store
	warmed int
}

func (w *warmCounting) WarmResolvers() {
	w.warmed++
	w.Store.WarmResolvers()
}

// TestEmbeddedFeedWarmsTheResolvers: once the bundled data is applied,
// the feed builds what the place resolver leaves to its first two-typo
// search; without data it has nothing to warm.
func TestEmbeddedFeedWarmsTheResolvers(t *testing.T) {
	for _, data := range []string{"bundled", "none"} {
		rm := &warmCounting{Store: memstore.New()}
		e, err := newEmbeddedIndexer(rm, "none", time.Now(), false, slog.New(slog.DiscardHandler), nil)
		require.NoError(t, err)
		e.data = data
		e.producers = []indexer.Producer{func(context.Context, indexer.Emit) error { return nil }}
		require.NoError(t, e.Run(context.Background()))
		require.Equal(t, map[string]int{"bundled": 1, "none": 0}[data], rm.warmed, data)
	}
}

// blockingWarm is a memory backend whose WarmResolvers waits for release.
type blockingWarm struct {
	*memory.Store
	entered, release chan struct{}
}

func (w *blockingWarm) WarmResolvers() {
	close(w.entered)
	<-w.release
	w.Store.WarmResolvers()
}

// TestEmbeddedReadyOnlyOnceSettled: with the bundled data, readiness
// waits until the resolvers are warm (settle), not only until every event
// is applied, so that the first requests after ready do not share the
// process with the warm (embeddedIndexer.settle).
func TestEmbeddedReadyOnlyOnceSettled(t *testing.T) {
	rm := &blockingWarm{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	e, err := newEmbeddedIndexer(rm, "none", time.Now(), false, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	e.data = "bundled"
	e.producers = []indexer.Producer{func(ctx context.Context, emit indexer.Emit) error {
		env, err := events.New(events.LocationUpserted, events.GeoID("state", "WA"), 1, time.Now(), "test",
			events.Location{GeoType: "state", Name: "WA", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120})
		if err != nil {
			return err
		}
		return indexer.Envelopes(emit)(env)
	}}
	checks := e.checks()
	require.Len(t, checks, 2)
	check := checks[1]
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	<-rm.entered
	c := check(context.Background())
	require.False(t, c.OK, "ready while the resolvers are warmed")
	require.Equal(t, true, c.Detail["caught_up"])
	require.Equal(t, false, c.Detail["settled"])
	close(rm.release)
	require.NoError(t, <-done)
	c = check(context.Background())
	require.True(t, c.OK)
	require.Equal(t, true, c.Detail["settled"])
}
