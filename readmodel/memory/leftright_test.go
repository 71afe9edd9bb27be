package memory_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// A small world for the left-right tests: one state, two cities, leads
// anchored to the state and one city each.
const (
	lrState = "state:WA"
	lrCityA = "city:a"
	lrCityB = "city:b"
)

func lrLocations() []readmodel.Location {
	return []readmodel.Location{
		{GeoID: lrState, GeoType: readmodel.GeoState, Name: "Washington", State: "WA", Version: 1},
		{GeoID: lrCityA, GeoType: readmodel.GeoCity, Name: "Alpha", City: "Alpha", State: "WA", Version: 1},
		{GeoID: lrCityB, GeoType: readmodel.GeoCity, Name: "Beta", City: "Beta", State: "WA", Version: 1},
	}
}

// lrLeads rewrites n leads of city (ids lead-<city>-<i>) at version v:
// every lead of one batch carries the batch's version.
func lrLeads(city string, n int, v int64) []readmodel.Lead {
	out := make([]readmodel.Lead, n)
	for i := range out {
		conf := float64(i%100) / 100
		out[i] = readmodel.Lead{
			LeadID: fmt.Sprintf("lead-%s-%05d", city, i), SignalKey: []string{"k1", "k2", "k3"}[i%3],
			EventDateUsed: time.Date(2025, 1, 1+i%365, 0, 0, 0, 0, time.UTC).Format(time.DateOnly),
			Confidence:    &conf,
			Location:      readmodel.LeadLocation{City: city, CityNorm: city, ZipcodeNorm: fmt.Sprint(98000 + i%7), CountyNorm: "king county"},
			GeoIDs:        []string{lrState, city}, Version: v,
		}
	}
	return out
}

// blockingResolver stands in for a slow batch: the first Upsert after
// arm is called blocks until release is closed.
type blockingResolver struct {
	armed   *atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (r blockingResolver) Upsert(readmodel.Location) {
	if r.armed.CompareAndSwap(true, false) {
		close(r.entered)
		<-r.release
	}
}
func (blockingResolver) Delete(string) {}
func (blockingResolver) Search(readmodel.ResolveQuery) []readmodel.Candidate {
	return nil
}

// TestConcurrentReadsNeverWaitForABatch: while a batch is being applied
// (held in the middle by a resolver hook), every read completes and sees
// the state before the batch, whole; once Apply returns, reads see the
// batch whole. A store whose readers share a lock with the writer fails
// this test (its reads block until the batch ends).
func TestConcurrentReadsNeverWaitForABatch(t *testing.T) {
	ctx := context.Background()
	armed := new(atomic.Bool)
	r := blockingResolver{armed: armed, entered: make(chan struct{}), release: make(chan struct{})}
	s := memory.New(memory.Params{NewResolver: func() memory.Resolver { return r }})
	_, err := s.Apply(ctx, readmodel.Batch{Locations: lrLocations(), Leads: lrLeads(lrCityA, 300, 1)})
	require.NoError(t, err)
	epoch, seq := s.ReadVersion()

	armed.Store(true)
	b := readmodel.Batch{Leads: lrLeads(lrCityA, 300, 2)}
	loc := lrLocations()[2]
	loc.Version, loc.Name = 2, "Beta Renamed"
	b.Locations = []readmodel.Location{loc}
	applied := make(chan error, 1)
	go func() {
		_, err := s.Apply(ctx, b)
		applied <- err
	}()
	<-r.entered // the batch is half applied and held

	reads := make(chan error, 1)
	go func() {
		reads <- func() error {
			for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
				page, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(lrState)}, Sort: sort, Limit: 100})
				if err != nil {
					return err
				}
				if len(page.Leads) != 100 {
					return fmt.Errorf("%d leads on a page of 100 while the batch is held", len(page.Leads))
				}
				for _, l := range page.Leads {
					if l.Version != 1 {
						return fmt.Errorf("lead %s at version %d while the batch is held", l.LeadID, l.Version)
					}
				}
			}
			st, err := s.PermitStats(ctx, readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(lrCityA)}, Today: "2026-01-15", TopN: 5})
			if err != nil || st.Total != 300 {
				return fmt.Errorf("stats %d, %v", st.Total, err)
			}
			l, err := s.Location(ctx, readmodel.ParseGeoRef(lrCityB))
			if err != nil || l.Name != "Beta" {
				return fmt.Errorf("location %q, %v", l.Name, err)
			}
			if e, q := s.ReadVersion(); e != epoch || q != seq {
				return fmt.Errorf("version moved to %d/%d before the batch was visible", e, q)
			}
			return nil
		}()
	}()
	select {
	case err := <-reads:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		close(r.release)
		t.Fatal("a read waited for a batch being applied")
	}
	select {
	case err := <-applied:
		t.Fatalf("Apply returned (%v) while its batch was held", err)
	default:
	}
	close(r.release)
	require.NoError(t, <-applied)

	page, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(lrCityA)}, Sort: readmodel.SortConfidenceDesc, Limit: 100})
	require.NoError(t, err)
	require.Len(t, page.Leads, 100)
	for _, l := range page.Leads {
		require.EqualValues(t, 2, l.Version)
	}
	got, err := s.Location(ctx, readmodel.ParseGeoRef(lrCityB))
	require.NoError(t, err)
	require.Equal(t, "Beta Renamed", got.Name)
	e, q := s.ReadVersion()
	require.Equal(t, epoch, e)
	require.Equal(t, seq+1, q)
}

// TestConcurrentPagesNeverMixBatches: a writer rewrites every lead of
// the state at full speed, one version per batch, while readers page in
// both orders and take stats: a page never holds two versions, stats
// always count every lead, and the read version never goes back.
func TestConcurrentPagesNeverMixBatches(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Params{})
	const n = 600
	_, err := s.Apply(ctx, readmodel.Batch{Locations: lrLocations(), Leads: lrLeads(lrCityA, n, 1)})
	require.NoError(t, err)

	// The goroutines report with assert (require may not stop a test
	// from another goroutine) and return at the first failure. Each
	// reader pages until the writer has written a few batches (how long
	// that takes depends on the machine's load, not on a clock).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var batches atomic.Int64
	var writerDone atomic.Bool
	wg.Go(func() {
		defer writerDone.Store(true)
		for v := int64(2); ; v++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityA, n, v)}); !assert.NoError(t, err) {
				return
			}
			batches.Add(1)
		}
	})
	var readers sync.WaitGroup
	for r := range 3 {
		readers.Go(func() {
			sort := []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc}[r%2]
			_, last := s.ReadVersion()
			for i := 0; i < 5 || (batches.Load() < 3 && !writerDone.Load()); i++ {
				page, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(lrState), SignalKeys: []string{"k1", "k3"}}, Sort: sort, Limit: 100})
				if !assert.NoError(t, err) || !assert.Len(t, page.Leads, 100) {
					return
				}
				for _, l := range page.Leads {
					if !assert.Equal(t, page.Leads[0].Version, l.Version, "one page, two batches") {
						return
					}
				}
				st, err := s.PermitStats(ctx, readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(lrState)}, Today: "2026-01-15", TopN: 3})
				if !assert.NoError(t, err) || !assert.EqualValues(t, n, st.Total) {
					return
				}
				_, seq := s.ReadVersion()
				if !assert.GreaterOrEqual(t, seq, last) {
					return
				}
				last = seq
			}
		})
	}
	readers.Wait()
	close(stop)
	wg.Wait()
	require.GreaterOrEqual(t, batches.Load(), int64(3), "the pages were read while batches were written")
}

// TestConcurrentStaleBatchKeepsVersion: a batch that changes nothing
// leaves the read version as it is; one that changes state bumps it.
func TestConcurrentStaleBatchKeepsVersion(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Params{})
	_, err := s.Apply(ctx, readmodel.Batch{Locations: lrLocations(), Leads: lrLeads(lrCityA, 10, 1)})
	require.NoError(t, err)
	_, seq := s.ReadVersion()
	res, err := s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityA, 10, 1)})
	require.NoError(t, err)
	require.Equal(t, 10, res.Stale)
	_, again := s.ReadVersion()
	require.Equal(t, seq, again)
	_, err = s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityA, 1, 2)})
	require.NoError(t, err)
	_, again = s.ReadVersion()
	require.Equal(t, seq+1, again)
	// Both sides hold every batch: two more stale-free batches later, the
	// store still counts every lead once.
	_, err = s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityB, 5, 1)})
	require.NoError(t, err)
	_, err = s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityB, 5, 2)})
	require.NoError(t, err)
	counts, err := s.Counts(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 15, counts[readmodel.KindLead])
	_, err = s.Apply(ctx, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: "bogus", ID: "x", Version: 1}}})
	require.ErrorContains(t, err, `delete of unknown kind "bogus"`)
}

// TestConcurrentStatsCacheByAnchor: a repeated stats query is a cache hit
// until a lead write touches its anchor; a write elsewhere keeps it.
func TestConcurrentStatsCacheByAnchor(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Params{})
	_, err := s.Apply(ctx, readmodel.Batch{Locations: lrLocations(), Leads: append(lrLeads(lrCityA, 50, 1), lrLeads(lrCityB, 20, 1)...)})
	require.NoError(t, err)
	q := readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(lrCityA)}, Today: "2026-01-15", TopN: 5}
	first, err := s.PermitStats(ctx, q)
	require.NoError(t, err)
	hits, misses, _ := s.StatsCacheCounts()
	require.Equal(t, [2]int64{0, 1}, [2]int64{hits, misses})
	first.TopZips[0].Count = -1 // a caller's change never reaches the cache
	again, err := s.PermitStats(ctx, q)
	require.NoError(t, err)
	require.Positive(t, again.TopZips[0].Count)
	hits, _, _ = s.StatsCacheCounts()
	require.EqualValues(t, 1, hits)

	// A write to city B only: the answer for city A stays cached, on
	// whichever side now serves.
	_, err = s.Apply(ctx, readmodel.Batch{Leads: lrLeads(lrCityB, 20, 2)})
	require.NoError(t, err)
	for range 2 {
		got, err := s.PermitStats(ctx, q)
		require.NoError(t, err)
		require.Equal(t, again, got)
	}
	hits, misses, _ = s.StatsCacheCounts()
	require.Equal(t, [2]int64{3, 1}, [2]int64{hits, misses})

	// A write to city A: recomputed, with the new lead counted.
	extra := lrLeads(lrCityA, 51, 1)[50]
	_, err = s.Apply(ctx, readmodel.Batch{Leads: []readmodel.Lead{extra}})
	require.NoError(t, err)
	got, err := s.PermitStats(ctx, q)
	require.NoError(t, err)
	require.EqualValues(t, 51, got.Total)
	_, misses, _ = s.StatsCacheCounts()
	require.EqualValues(t, 2, misses)
}
