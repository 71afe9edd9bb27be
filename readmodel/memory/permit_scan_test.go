package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// searchAll pages SearchPermits for q to the end.
func searchAll(t *testing.T, s *memory.Store, q readmodel.PermitQuery) []readmodel.PermitHit {
	t.Helper()
	var out []readmodel.PermitHit
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10000, "search does not end")
		p, err := s.SearchPermits(context.Background(), q)
		require.NoError(t, err)
		out = append(out, p.Permits...)
		if p.Next == nil {
			return out
		}
		q.After = p.Next
	}
}

// scanAll reads sc to the end, calling between after every page but the
// last; it checks each page's size and cursor against q.
func scanAll(t *testing.T, sc readmodel.PermitScan, q readmodel.PermitQuery, between func()) []readmodel.PermitHit {
	t.Helper()
	var out []readmodel.PermitHit
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10000, "scan does not end")
		p, err := sc.Next(context.Background())
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Permits), q.Limit)
		out = append(out, p.Permits...)
		if p.Next == nil {
			return out
		}
		last := p.Permits[len(p.Permits)-1].Permit
		require.Equal(t, last.PermitID, p.Next.PermitID)
		require.Equal(t, last.IssueDate, p.Next.IssueDate)
		if between != nil {
			between()
		}
	}
}

// scanPermits: 600 permits with their own descriptions (texts that a
// delete frees and a later insert reuses) and, for one in five, a
// permit number that is not derived from the id.
func scanPermits(r *rand.Rand) []readmodel.Permit {
	ps := filterPermits(r, 600)
	for i := range ps {
		ps[i].RawDescription = fmt.Sprintf("original description %d", i)
		if i%5 == 0 {
			ps[i].PermitNumber = fmt.Sprintf("B-%05d", i)
		}
	}
	return ps
}

// churn is a batch of inserts, updates and deletes over ps, with dates
// (so positions) before and after any scan's cursor, new descriptions,
// new symbols and new link sets; ps is kept current.
func churn(r *rand.Rand, ps map[string]readmodel.Permit, round int) readmodel.Batch {
	var b readmodel.Batch
	for i := range 8 {
		p := permit(fmt.Sprintf("new-%d-%d", round, i), fmt.Sprintf("2024-%02d-%02d", 1+r.IntN(4), 1+r.IntN(6)), zipA, 1)
		if r.IntN(2) == 0 {
			p = permit(fmt.Sprintf("new-%d-%d", round, i), fmt.Sprintf("2024-%02d-%02d", 1+r.IntN(4), 1+r.IntN(6)), zipB, 1)
		}
		lat, lon := 47.60+r.Float64()*0.05, -122.35+r.Float64()*0.05
		p.Lat, p.Lon = &lat, &lon
		p.Status = fmt.Sprintf("Status %d", round) // a new symbol
		p.RawDescription = fmt.Sprintf("inserted description %d %d", round, i)
		b.Permits = append(b.Permits, p)
		ps[p.PermitID] = p
	}
	ids := make([]string, 0, len(ps))
	for id := range ps {
		ids = append(ids, id)
	}
	for range 12 {
		id := ids[r.IntN(len(ids))]
		p, ok := ps[id]
		if !ok {
			continue
		}
		if r.IntN(3) == 0 {
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindPermit, ID: id, Version: p.Version + 1})
			delete(ps, id)
			continue
		}
		p.Version++
		p.IssueDate = fmt.Sprintf("2024-%02d-%02d", 1+r.IntN(4), 1+r.IntN(6))
		p.RawDescription = fmt.Sprintf("updated description %d %s", round, id)
		p.PermitNumber = fmt.Sprintf("U-%d", round)
		v := float64(r.IntN(40)) * 250
		p.Valuation = &v
		p.GeoLinks = append([]readmodel.GeoLink(nil), p.GeoLinks...)
		p.GeoLinks[0].Confidence = 0.5 + float64(round%40)/100 // a new link set
		b.Permits = append(b.Permits, p)
		ps[id] = p
	}
	return b
}

var scanQueries = []readmodel.PermitQuery{
	{Geo: readmodel.ParseGeoRef(zipA), Desc: true, Limit: 7},
	{Geo: readmodel.ParseGeoRef(zipB), Desc: false, Limit: 6},
	{Geo: readmodel.ParseGeoRef(city), Desc: true, Limit: 10, FromDate: "2024-02-01", Filter: readmodel.PermitFilter{Statuses: []string{"issued", "completed"}}},
	{Geo: readmodel.ParseGeoRef(city), Desc: true, Limit: 9, Filter: readmodel.PermitFilter{Near: &readmodel.GeoPoint{Lat: 47.62, Lon: -122.33}, RadiusM: 2500}},
	{Desc: true, Limit: 9, Filter: readmodel.PermitFilter{BBox: &readmodel.BBox{MinLat: 47.60, MinLon: -122.35, MaxLat: 47.63, MaxLon: -122.32}}},
	{Geo: readmodel.ParseGeoRef(state), Limit: 8, Sort: readmodel.SortValuationDesc, Filter: readmodel.PermitFilter{Text: "description"}},
	// Few hits for the side's texts: the scan copies each hit's.
	{Geo: readmodel.ParseGeoRef(zipA), Desc: true, Limit: 2, Filter: readmodel.PermitFilter{PermitTypes: []string{"electrical"}, Statuses: []string{"expired", "issued"}}},
}

// TestPermitScanSnapshot: a scan returns exactly the permits (whole
// records, matches and distances) that searches of the version at its
// start page, in the same pages, while inserts, updates and deletes
// before and after its position apply between its pages and beside it.
func TestPermitScanSnapshot(t *testing.T) {
	for qi, q := range scanQueries {
		t.Run(fmt.Sprint(qi), func(t *testing.T) {
			r := rand.New(rand.NewPCG(14, uint64(qi)))
			s := newStore(t)
			live := map[string]readmodel.Permit{}
			ps := scanPermits(r)
			for _, p := range ps {
				live[p.PermitID] = p
			}
			apply(t, s, readmodel.Batch{Permits: ps})
			want := searchAll(t, s, q)
			require.Greater(t, len(want), 3*q.Limit, "the query pages")

			sc, err := s.OpenPermitScan(context.Background(), q, 0)
			require.NoError(t, err)
			defer sc.Close()
			// A writer beside the scan, and one batch between its pages.
			var mu sync.Mutex
			round := 0
			write := func() error {
				mu.Lock()
				b := churn(r, live, round)
				round++
				mu.Unlock()
				_, err := s.Apply(context.Background(), b)
				return err
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for range 200 {
					select {
					case <-stop:
						return
					default:
					}
					if err := write(); err != nil {
						t.Error(err)
						return
					}
				}
			})
			// The first write between pages also deletes the last hit,
			// which the scan has not reached: the writes change what
			// search pages whatever the random ones hit.
			last := want[len(want)-1].Permit.PermitID
			between := func() {
				if last != "" {
					mu.Lock()
					d := readmodel.Delete{Kind: readmodel.KindPermit, ID: last, Version: live[last].Version + 1}
					delete(live, last)
					mu.Unlock()
					_, err := s.Apply(context.Background(), readmodel.Batch{Deletes: []readmodel.Delete{d}})
					require.NoError(t, err)
					last = ""
				}
				require.NoError(t, write())
			}
			got := scanAll(t, sc, q, between)
			close(stop)
			wg.Wait()
			require.Equal(t, want, got)
			require.NotEqual(t, want, searchAll(t, s, q), "the writes changed what search pages")
			_, err = sc.Next(context.Background())
			require.ErrorIs(t, err, memory.ErrScanEnded, "Next after the last page")
		})
	}
}

// TestPermitScanDoesNotHoldWriter: a scan whose consumer stalls after
// its first page holds no side: batches written to both sides complete,
// and the scan then goes on with its own version.
func TestPermitScanDoesNotHoldWriter(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 99))
	s := newStore(t)
	live := map[string]readmodel.Permit{}
	ps := scanPermits(r)
	for _, p := range ps {
		live[p.PermitID] = p
	}
	apply(t, s, readmodel.Batch{Permits: ps})
	q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(city), Desc: true, Limit: 25}
	want := searchAll(t, s, q)

	sc, err := s.OpenPermitScan(context.Background(), q, 0)
	require.NoError(t, err)
	defer sc.Close()
	first, err := sc.Next(context.Background())
	require.NoError(t, err)
	require.NotNil(t, first.Next)

	done := make(chan error, 1)
	go func() {
		for round := range 4 { // every side at least twice
			if _, err := s.Apply(context.Background(), churn(r, live, round)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("a writer waits for a scan whose consumer stalls")
	}
	got := append(first.Permits, scanAll(t, sc, q, nil)...)
	require.Equal(t, want, got)
}

// TestPermitScanBounds: the memory backend is a readmodel.PermitScanner;
// a scan ends after max permits, answers an unknown geography on its
// first Next, refuses a bad limit, and Close is idempotent.
func TestPermitScanBounds(t *testing.T) {
	s := newStore(t)
	apply(t, s, readmodel.Batch{Permits: scanPermits(rand.New(rand.NewPCG(14, 7)))})
	var r readmodel.Reader = s
	ps, ok := r.(readmodel.PermitScanner)
	require.True(t, ok, "memory implements readmodel.PermitScanner")

	q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(city), Desc: true, Limit: 4}
	sc, err := ps.OpenPermitScan(context.Background(), q, 10)
	require.NoError(t, err)
	got := scanAll(t, sc, q, nil)
	require.Equal(t, searchAll(t, s, q)[:10], got)
	require.NoError(t, sc.Close())
	require.NoError(t, sc.Close())

	sc, err = ps.OpenPermitScan(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("city_nosuch"), Desc: true, Limit: 4}, 0)
	require.NoError(t, err)
	_, err = sc.Next(context.Background())
	require.ErrorIs(t, err, readmodel.ErrNotFound)
	require.NoError(t, sc.Close())

	_, err = ps.OpenPermitScan(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(city), Desc: true, Limit: 101}, 0)
	require.ErrorIs(t, err, readmodel.ErrInvalidQuery)
	_, err = ps.OpenPermitScan(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(city), Desc: true, Limit: 5, FromDate: "2024-02-30"}, 0)
	require.ErrorIs(t, err, readmodel.ErrInvalidQuery)
}
