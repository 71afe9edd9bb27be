package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
	"github.com/permitd/permitd/test/conformance"
)

// TestConcurrentAppliesEqualSequential: batches of permits and of leads
// (several versions of each, some stale, some deletes) applied from many
// goroutines at once, so that the store groups them and writes the leads
// beside the rest, end in the state the same batches reach one at a
// time, on both sides; and every call gets its own batch's result. Run
// it with -race (make test does).
func TestConcurrentAppliesEqualSequential(t *testing.T) {
	ctx := context.Background()
	seq := loaded(t)
	conc := loaded(t)
	permits, leads := conformance.PermitEvents(t), conformance.LeadEvents(t)
	// Each batch holds enough documents of its family for the store to
	// write the two families side by side (at least 64 of each).
	var batches []readmodel.Batch
	for round := range 24 {
		var envs []events.Envelope
		src := permits
		if round%2 == 1 {
			src = leads
		}
		for len(envs) < 80 {
			for _, env := range src {
				env.EntityVersion = int64(10 + round*100 + len(envs)%7) // repeats: stale
				envs = append(envs, env)
			}
		}
		b := project(t, seq, envs)
		if round%6 == 5 { // a delete of the family, newer than everything
			kind, id := readmodel.KindPermit, permits[0].EntityID
			if round%2 == 1 {
				kind, id = readmodel.KindLead, leads[0].EntityID
			}
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: kind, ID: id, Version: int64(10_000 + round)})
		}
		batches = append(batches, b)
	}
	want := make([]readmodel.ApplyResult, len(batches))
	for i, b := range batches {
		res, err := seq.Apply(ctx, b)
		require.NoError(t, err)
		want[i] = res
	}

	got := make([]readmodel.ApplyResult, len(batches))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			// Worker w applies its batches in order, as a partition's
			// consumer does; the workers race each other.
			for i := w; i < len(batches); i += 4 {
				res, err := conc.Apply(ctx, batches[i])
				if !assert.NoError(t, err) {
					return
				}
				got[i] = res
			}
		})
	}
	wg.Wait()
	total := func(rs []readmodel.ApplyResult) (n int) {
		for _, r := range rs {
			n += r.Applied + r.Stale
		}
		return n
	}
	require.Equal(t, total(want), total(got), "every document of every call is counted once")
	for i, b := range batches {
		require.Equal(t, b.Len(), got[i].Applied+got[i].Stale, "batch %d's own result", i)
	}

	sameSides(t, seq, conc)
}

// sameSides checks that every store of got holds want's state on both
// of its sides: each is compared, then an extra catalog entry written to
// all swaps the sides, and they are compared again.
func sameSides(t *testing.T, want *memory.Store, got ...*memory.Store) {
	t.Helper()
	ctx := context.Background()
	for i := range 2 {
		w, err := want.Digest(ctx)
		require.NoError(t, err)
		for k, s := range got {
			g, err := s.Digest(ctx)
			require.NoError(t, err)
			require.Equal(t, w, g, "store %d, side %d", k, i)
		}
		c := readmodel.CatalogEntry{State: "WA", SignalKey: fmt.Sprint("extra", i), Status: readmodel.CatalogActive, Version: 1}
		for _, s := range append([]*memory.Store{want}, got...) {
			_, err := s.Apply(ctx, readmodel.Batch{Catalog: []readmodel.CatalogEntry{c}})
			require.NoError(t, err)
		}
	}
}

// applyFrom applies batches to s from workers goroutines at once (batch
// i from goroutine i mod workers, in order) and checks that each call's
// result counts its own batch's documents, applied or stale.
func applyFrom(t *testing.T, s *memory.Store, batches []readmodel.Batch, workers int) {
	t.Helper()
	got := make([]readmodel.ApplyResult, len(batches))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(batches); i += workers {
				res, err := s.Apply(context.Background(), batches[i])
				assert.NoError(t, err)
				got[i] = res
			}
		})
	}
	wg.Wait()
	for i, b := range batches {
		require.Equal(t, b.Len(), got[i].Applied+got[i].Stale, "batch %d's own result", i)
	}
}

// singles parts b into batches of one document (or delete) each, in the
// order a side applies b (side.apply): too small for the store to split
// any step into lanes, so the store they are applied to writes one
// document after another.
func singles(b readmodel.Batch) []readmodel.Batch {
	var out []readmodel.Batch
	for _, l := range b.Locations {
		out = append(out, readmodel.Batch{Locations: []readmodel.Location{l}})
	}
	for _, p := range b.Permits {
		out = append(out, readmodel.Batch{Permits: []readmodel.Permit{p}})
	}
	for _, p := range b.Properties {
		out = append(out, readmodel.Batch{Properties: []readmodel.Property{p}})
	}
	for _, g := range b.GeoSignals {
		out = append(out, readmodel.Batch{GeoSignals: []readmodel.GeoSignal{g}})
	}
	for _, l := range b.Leads {
		out = append(out, readmodel.Batch{Leads: []readmodel.Lead{l}})
	}
	for _, c := range b.Catalog {
		out = append(out, readmodel.Batch{Catalog: []readmodel.CatalogEntry{c}})
	}
	for _, d := range b.Deletes {
		out = append(out, readmodel.Batch{Deletes: []readmodel.Delete{d}})
	}
	return out
}

// TestConcurrentSignalLaneEqualsSequential: the signal families (leads,
// geo signals, catalog entries, their deletes) are written on their own
// lane beside permits and properties, and a step splits the batches its
// side missed together with its own. Batches of one family each (so one
// step's lanes often come from different steps' batches), applied one at
// a time and from many goroutines at once, end in the state the same
// documents reach written one by one, on both sides, with each call's
// own result.
func TestConcurrentSignalLaneEqualsSequential(t *testing.T) {
	ctx := context.Background()
	ref, seq, conc := loaded(t), loaded(t), loaded(t)
	families := [][]events.Envelope{
		conformance.PermitEvents(t), conformance.LeadEvents(t), conformance.PropertyEvents(t),
		conformance.GeoSignalEvents(t), conformance.CatalogEvents(t),
	}
	kinds := []readmodel.Kind{readmodel.KindPermit, readmodel.KindLead, readmodel.KindProperty, readmodel.KindGeoSignal, readmodel.KindCatalog}
	var batches []readmodel.Batch
	for round := range 30 {
		f := round % len(families)
		var envs []events.Envelope
		for len(envs) < 70 {
			for _, env := range families[f] {
				env.EntityVersion = int64(10 + round*100 + len(envs)%5) // repeats: stale
				envs = append(envs, env)
			}
		}
		b := project(t, ref, envs)
		if round%7 == 6 { // a delete of the family, newer than everything
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: kinds[f], ID: families[f][0].EntityID, Version: int64(10_000 + round)})
		}
		batches = append(batches, b)
	}
	var want []readmodel.ApplyResult
	for _, b := range batches {
		var r readmodel.ApplyResult
		for _, one := range singles(b) {
			res, err := ref.Apply(ctx, one)
			require.NoError(t, err)
			r.Applied += res.Applied
			r.Stale += res.Stale
		}
		want = append(want, r)
	}
	for i, b := range batches {
		res, err := seq.Apply(ctx, b)
		require.NoError(t, err)
		require.Equal(t, want[i], res, "batch %d, one at a time", i)
	}
	applyFrom(t, conc, batches, 5)
	sameSides(t, ref, seq, conc) // one at a time, concurrent
}

// During a replay the signal families' batches are written by a writer
// of their own, beside the steps that write the other families
// (apply.go, "The signal writer"), and a batch of mixed families takes
// both. Batches of one family each and of permits with leads, applied
// from many goroutines into a replay, end, after EndReplay and on both
// sides once settled, in the state the same documents reach written one
// by one without a replay, with each call's own result; EndReplay
// counts the signal writer's batches too. Run it with -race (make test
// does).
func TestReplaySignalWriterEqualsSequential(t *testing.T) {
	ctx := context.Background()
	ref := loaded(t)
	replayed := memory.New(memory.Params{NewResolver: func() memory.Resolver { return resolve.New() }})
	require.True(t, replayed.BeginReplay())
	base := 0
	require.NoError(t, loaded(t).Export(ctx, 50, func(b readmodel.Batch) error {
		base++
		_, err := replayed.Apply(ctx, b)
		return err
	}))
	families := [][]events.Envelope{
		conformance.PermitEvents(t), conformance.LeadEvents(t), conformance.PropertyEvents(t),
		conformance.GeoSignalEvents(t), conformance.CatalogEvents(t),
	}
	kinds := []readmodel.Kind{readmodel.KindPermit, readmodel.KindLead, readmodel.KindProperty, readmodel.KindGeoSignal, readmodel.KindCatalog}
	versioned := func(envs []events.Envelope, round int) []events.Envelope {
		var out []events.Envelope
		for len(out) < 70 {
			for _, env := range envs {
				env.EntityVersion = int64(10 + round*100 + len(out)%5) // repeats: stale
				out = append(out, env)
			}
		}
		return out
	}
	var batches []readmodel.Batch
	mixed := 0
	for round := range 40 {
		f := round % len(families)
		b := project(t, ref, versioned(families[f], round))
		if round%10 == 5 { // permits with leads: a step under both writers
			b.Leads = project(t, ref, versioned(families[1], round)).Leads
			mixed++
		}
		if round%7 == 6 { // a delete of the family, newer than everything
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: kinds[f], ID: families[f][0].EntityID, Version: int64(10_000 + round)})
		}
		batches = append(batches, b)
	}
	require.Equal(t, 4, mixed)
	for _, b := range batches {
		for _, one := range singles(b) {
			_, err := ref.Apply(ctx, one)
			require.NoError(t, err)
		}
	}
	applyFrom(t, replayed, batches, 6)
	require.Equal(t, base+len(batches), replayed.EndReplay(), "every batch, the signal writer's too")
	replayed.Settle()
	sameSides(t, ref, replayed)
}
