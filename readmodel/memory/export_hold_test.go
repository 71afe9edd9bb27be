package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// heldExport is an Export stopped in its first batch until release is
// closed; got has every batch it handed out once done is closed.
type heldExport struct {
	release chan struct{}
	done    chan struct{}
	got     readmodel.Batch
	err     error
}

func holdExport(t *testing.T, s *memory.Store) *heldExport {
	t.Helper()
	h := &heldExport{release: make(chan struct{}), done: make(chan struct{})}
	started := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(h.done)
		h.err = s.Export(context.Background(), 50, func(b readmodel.Batch) error {
			once.Do(func() { close(started); <-h.release })
			h.got.Append(b)
			return nil
		})
	}()
	<-started
	return h
}

// end lets the export finish and returns what it exported.
func (h *heldExport) end(t *testing.T) readmodel.Batch {
	t.Helper()
	close(h.release)
	<-h.done
	require.NoError(t, h.err)
	return h.got
}

// applyNoWait applies b, failing the test when Apply does not return
// while an export is held (before the change it waited for the export).
func applyNoWait(t *testing.T, s *memory.Store, b readmodel.Batch) readmodel.ApplyResult {
	t.Helper()
	var res readmodel.ApplyResult
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = s.Apply(context.Background(), b)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Apply waited for the export")
	}
	require.NoError(t, err)
	return res
}

// Writes go on while an Export reads (a snapshot's, seconds long at 1M
// permits): each Apply returns its own exact result without waiting for
// the export, readers and the export keep the state from before them, and
// when the export ends readers see every one of them at once, as one new
// version. Then both sides answer as a store that applied the batches in
// turn (matchesApplied writes once more and checks the other side). An
// Export that nothing wrote beside makes no new version. An Export begun
// while another reads holds every batch whose Apply returned before it
// (a snapshot's offsets are taken before its export): it releases them
// first, and the writer then waits for the first Export to end.
func TestWritesGoOnWhileAnExportReads(t *testing.T) {
	defer memory.SetPostingMin(20)()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(41, 42))
	ps, props := permitsOnProperties(r, 600, 30, 3)
	changed := slices.Clone(ps[:80])
	for i := range changed {
		changed[i].Version = 2
		changed[i].Status = "Expired"
	}
	batches := []readmodel.Batch{
		{Permits: ps[:300], Properties: props},
		{Permits: ps[300:500]},
		{Permits: slices.Concat(changed[:40], ps[:5])}, // ps[:5] stale
		{Permits: ps[500:], Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: ps[301].PermitID, Version: 7}}},
		{Permits: changed[40:]},
	}
	reference := newStore(t)
	s := newStore(t)
	require.Equal(t, apply(t, reference, batches[0]), apply(t, s, batches[0]))
	before := sortedExport(t, s)

	_, seq := s.ReadVersion()
	quiet := holdExport(t, s)
	quiet.end(t)
	_, after := s.ReadVersion()
	require.Equal(t, seq, after, "an export beside no write is no new version")

	h := holdExport(t, s)
	for i, b := range batches[1:4] {
		require.Equal(t, apply(t, reference, b), applyNoWait(t, s, b), "batch %d's result", 1+i)
	}
	_, held := s.ReadVersion()
	require.Equal(t, seq, held, "readers keep the exported state")
	counts, err := s.Counts(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 300, counts[readmodel.KindPermit], "readers see none of the held batches")
	got := h.end(t)

	fromExport := newStore(t)
	apply(t, fromExport, got)
	require.Equal(t, before, sortedExport(t, fromExport), "the export is the state it began with")
	_, released := s.ReadVersion()
	require.Equal(t, seq+1, released, "the held batches become visible at once")
	matchesApplied(t, r, batches[:4], props, s, "after the export")

	// Two at once: the second holds what the first held.
	first := holdExport(t, s)
	b := batches[4]
	require.Equal(t, apply(t, reference, b), applyNoWait(t, s, b), "batch 4's result")
	second := holdExport(t, s)
	_, both := s.ReadVersion()
	require.Greater(t, both, released, "the second export released the held batch")
	wrote := make(chan error, 1)
	go func() { // waits for the first export: the second reads the other side
		p := ps[599]
		p.Version = 3
		_, err := s.Apply(ctx, readmodel.Batch{Permits: []readmodel.Permit{p}})
		wrote <- err
	}()
	inFirst, inSecond := first.end(t), second.end(t)
	require.NoError(t, <-wrote)
	version := func(all readmodel.Batch, id string) int64 {
		for _, p := range all.Permits {
			if p.PermitID == id {
				return p.Version
			}
		}
		return 0
	}
	id := changed[40].PermitID
	require.EqualValues(t, 1, version(inFirst, id), "the first export: the state before batch 4")
	require.EqualValues(t, 2, version(inSecond, id), "the second export: every batch Apply returned before it began")
	require.EqualValues(t, 1, version(inSecond, ps[599].PermitID), "not the write that waited for the first export")
	require.EqualValues(t, 3, version(exported(t, s), ps[599].PermitID))
}

// An Import begun while writes are held for an Export makes them the
// readers' first (its journal follows the readers' state); the export
// still ends with the state it began with, and the store stays exact.
func TestImportReleasesWritesHeldForAnExport(t *testing.T) {
	defer memory.SetPostingMin(20)()
	r := rand.New(rand.NewPCG(43, 44))
	ps, props := permitsOnProperties(r, 300, 20, 3)
	batches := []readmodel.Batch{{Permits: ps[:150], Properties: props}, {Permits: ps[150:]}}
	s := newStore(t)
	apply(t, s, batches[0])
	before := sortedExport(t, s)
	h := holdExport(t, s)
	applyNoWait(t, s, batches[1])
	_, seq := s.ReadVersion()
	im := s.NewImport()
	_, released := s.ReadVersion()
	require.Equal(t, seq+1, released, "NewImport releases the held batch")
	im.Abort()
	got := h.end(t)
	fromExport := newStore(t)
	apply(t, fromExport, got)
	require.Equal(t, before, sortedExport(t, fromExport), "the export is the state it began with")
	_, after := s.ReadVersion()
	require.Equal(t, released, after, "nothing left to release at the export's end")
	matchesApplied(t, r, batches, props, s, "after the import's abort")
}

// Exports, writes and reads at once (-race in make test): a writer
// rewrites every permit in each batch (batch v: version v), two exporters
// and two readers loop meanwhile. Every read and every export sees one
// batch whole, readers never go back to an older one, and an export holds
// at least every batch whose Apply returned before it began. At the end
// both sides hold the last batch.
func TestConcurrentExportsWritesAndReads(t *testing.T) {
	ctx := context.Background()
	ps := filterPermits(rand.New(rand.NewPCG(45, 46)), 90)
	batch := func(v int64) readmodel.Batch {
		b := readmodel.Batch{Permits: slices.Clone(ps)}
		for i := range b.Permits {
			b.Permits[i].Version = v
			b.Permits[i].Status = []string{"Issued", "Completed", "Expired"}[v%3]
		}
		return b
	}
	s := newStore(t)
	apply(t, s, batch(1))
	const last = 80
	var returned atomic.Int64 // the last version whose Apply returned
	returned.Store(1)
	oneVersion := func(vs []int64) (int64, bool) {
		for _, v := range vs[1:] {
			if v != vs[0] {
				return 0, false
			}
		}
		return vs[0], true
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var failures sync.Map
	fail := func(who string, err error) { failures.LoadOrStore(who, err) }
	wg.Go(func() {
		defer close(done)
		for v := int64(2); v <= last; v++ {
			if _, err := s.Apply(ctx, batch(v)); err != nil {
				fail("writer", err)
				return
			}
			returned.Store(v)
		}
	})
	for e := range 2 {
		wg.Go(func() {
			for exports := 0; ; exports++ {
				select {
				case <-done:
					if exports > 0 {
						return
					}
				default:
				}
				least := returned.Load()
				var vs []int64
				err := s.Export(ctx, 17, func(b readmodel.Batch) error {
					for _, p := range b.Permits {
						vs = append(vs, p.Version)
					}
					return nil
				})
				switch v, whole := oneVersion(vs); {
				case err != nil:
					fail(fmt.Sprint("exporter ", e), err)
				case len(vs) != len(ps) || !whole:
					fail(fmt.Sprint("exporter ", e), fmt.Errorf("not one batch: %v", vs))
				case v < least:
					fail(fmt.Sprint("exporter ", e), fmt.Errorf("version %d, but Apply of %d had returned", v, least))
				}
			}
		})
	}
	for rd := range 2 {
		wg.Go(func() {
			seen := int64(0)
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, zip := range []string{zipA, zipB} { // each page one read
					page, err := s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zip), Limit: 100})
					if err != nil {
						fail(fmt.Sprint("reader ", rd), err)
						return
					}
					var vs []int64
					for _, h := range page.Permits {
						vs = append(vs, h.Permit.Version)
					}
					v, whole := oneVersion(vs)
					if !whole || v < seen {
						fail(fmt.Sprint("reader ", rd), fmt.Errorf("after version %d: %v", seen, vs))
						return
					}
					seen = v
				}
			}
		})
	}
	wg.Wait()
	failures.Range(func(who, err any) bool {
		t.Errorf("%s: %v", who, err)
		return true
	})
	for _, v := range []int64{last, last + 1} { // the last batch, then one more: both sides
		if v > last {
			apply(t, s, batch(v))
		}
		all := exported(t, s)
		require.Len(t, all.Permits, len(ps))
		for _, p := range all.Permits {
			require.Equal(t, v, p.Version)
		}
	}
}
