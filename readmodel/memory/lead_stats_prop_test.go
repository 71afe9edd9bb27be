package memory_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// bruteStats is PermitStats by definition, over the leads themselves.
func bruteStats(leads []readmodel.Lead, q readmodel.StatsQuery) readmodel.PermitStats {
	today, _ := time.Parse(time.DateOnly, q.Today)
	st := readmodel.PermitStats{}
	bySignal := map[string]int64{}
	cities, zips, counties := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, l := range leads {
		if !keep(q.Filter, l) {
			continue
		}
		st.Total++
		bySignal[l.SignalKey]++
		switch {
		case l.Confidence != nil && *l.Confidence >= 0.75:
			st.ConfidenceHigh++
		case l.Confidence != nil && *l.Confidence >= 0.5:
			st.ConfidenceMedium++
		default:
			st.ConfidenceLow++
		}
		lag := 31
		if l.EventDateUsed != "" {
			d, _ := time.Parse(time.DateOnly, l.EventDateUsed)
			lag = max(int(today.Sub(d).Hours()/24), 0)
		}
		switch {
		case lag <= 7:
			st.Fresh0to7++
		case lag <= 14:
			st.Fresh8to14++
		case lag <= 30:
			st.Fresh15to30++
		default:
			st.Fresh31Plus++
		}
		for m, v := range map[*map[string]int64]string{&cities: l.Location.CityNorm, &zips: l.Location.ZipcodeNorm, &counties: l.Location.CountyNorm} {
			if v != "" {
				(*m)[v]++
			}
		}
	}
	list := func(m map[string]int64, n int) []readmodel.ValueCount {
		out := []readmodel.ValueCount{}
		for v, c := range m {
			out = append(out, readmodel.ValueCount{Value: v, Count: c})
		}
		slices.SortFunc(out, func(a, b readmodel.ValueCount) int {
			if a.Count != b.Count {
				return cmp.Compare(b.Count, a.Count)
			}
			return cmp.Compare(a.Value, b.Value)
		})
		if n >= 0 && len(out) > n {
			out = out[:n]
		}
		return out
	}
	st.BySignal = list(bySignal, -1)
	st.TopCities, st.TopZips, st.TopCounties = list(cities, q.TopN), list(zips, q.TopN), list(counties, q.TopN)
	return st
}

func normStats(st readmodel.PermitStats) readmodel.PermitStats {
	st.GeoType = ""
	for _, p := range []*[]readmodel.ValueCount{&st.BySignal, &st.TopCities, &st.TopZips, &st.TopCounties} {
		if len(*p) == 0 {
			*p = []readmodel.ValueCount{}
		}
	}
	return st
}

// TestStatsMatchBruteForce: for random filters (date bounds of any span,
// freshness windows, confidence floors on and off bucket edges, signal
// keys), PermitStats equals the brute force over the leads, with roll-ups
// in use (every one, or from a low threshold) and without, after upserts,
// rewrites and deletes, with day cells that keep their sparse counts
// (from their first record or their second) and cells that read their
// records instead. A third of the windows start or end on a month's
// or year's edge, or the day next to one, or lie inside one month.
func TestStatsMatchBruteForce(t *testing.T) {
	type limits struct {
		roll   int64
		sparse int
		fold   int // > 0: every tree logs its top-list changes, folded from fold on (rollup_log.go)
	}
	var cases []limits
	for _, roll := range []int64{1, 4, 1 << 40} {
		for _, sparse := range []int{1, 2, 1 << 30} {
			cases = append(cases, limits{roll, sparse, 0})
		}
	}
	cases = append(cases, limits{1, 2, 3}, limits{4, 1 << 30, 40})
	for _, c := range cases {
		min, sparse := c.roll, c.sparse
		t.Run(fmt.Sprintf("rollMin=%d,sparseMin=%d,fold=%d", min, sparse, c.fold), func(t *testing.T) {
			defer memory.SetRollMin(min)()
			defer memory.SetSparseMin(sparse)()
			if c.fold > 0 {
				defer memory.SetFenLog(0, c.fold)()
			}
			ctx := context.Background()
			r := rand.New(rand.NewPCG(21, uint64(min)))
			leads := randomLeads(r, 4000)
			s := memory.New(memory.Params{StatsCacheSize: -1})
			_, err := s.Apply(ctx, readmodel.Batch{Locations: lrLocations(), Leads: leads})
			require.NoError(t, err)
			// Rewrite a third (new confidence, date and place) and delete
			// a tenth.
			var b readmodel.Batch
			for i := range leads {
				switch r.IntN(10) {
				case 0:
					b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindLead, ID: leads[i].LeadID, Version: 2})
					leads[i].LeadID = ""
				case 1, 2, 3:
					l := randomLeads(r, 1)[0]
					l.LeadID, l.Version = leads[i].LeadID, 2
					leads[i] = l
					b.Leads = append(b.Leads, l)
				case 4, 5: // a rewrite in place: new document, same position
					l := leads[i].Clone()
					l.Version, l.PermitNumber = 2, l.PermitNumber+"-r"
					switch r.IntN(3) { // or one positional field moves
					case 0:
						l.Confidence = randomLeads(r, 1)[0].Confidence
					case 1:
						l.Location.CityNorm = randomLeads(r, 1)[0].Location.CityNorm
					}
					leads[i] = l
					b.Leads = append(b.Leads, l)
				}
			}
			_, err = s.Apply(ctx, b)
			require.NoError(t, err)
			live := slices.DeleteFunc(leads, func(l readmodel.Lead) bool { return l.LeadID == "" })
			counted := 0 // cases with leads: not every filter may match nothing
			for i := range 300 {
				f := randomFilter(r)
				if i%5 == 0 {
					f.FromDate, f.ToDate, f.FreshSince = "", "", "" // all time
				} else if i%3 == 1 {
					f.FromDate, f.ToDate = monthEdgeWindow(r)
					f.FreshSince = ""
				}
				if f.MinConfidence != nil && i%3 == 0 {
					e := float64(r.IntN(65)) / 64 // a bucket edge
					f.MinConfidence = &e
				}
				today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -r.IntN(4000)).Format(time.DateOnly)
				q := readmodel.StatsQuery{Filter: f, Today: today, TopN: []int{3, 10, -1}[r.IntN(3)]}
				got, err := s.PermitStats(ctx, q)
				require.NoError(t, err)
				require.Equal(t, bruteStats(live, q), normStats(got), "case %d %+v", i, q)
				if got.Total > 0 {
					counted++
				}
			}
			require.Greater(t, counted, 150, "cases whose filter matches leads (the seed is fixed)")
		})
	}
}

// monthEdgeWindow is a window whose bounds sit on or next to month and
// year edges (either may be open), or inside one month.
func monthEdgeWindow(r *rand.Rand) (from, to string) {
	edge := func() time.Time {
		t := time.Date(2011+r.IntN(16), time.Month(1+r.IntN(12)), 1, 0, 0, 0, 0, time.UTC)
		if r.IntN(3) == 0 {
			t = time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
		}
		return t.AddDate(0, 0, r.IntN(3)-1) // the first, the day before, the second
	}
	lo := edge()
	var hi time.Time
	switch r.IntN(4) {
	case 0: // inside one month
		lo = lo.AddDate(0, 0, r.IntN(10))
		hi = lo.AddDate(0, 0, r.IntN(18))
	case 1:
		return lo.Format(time.DateOnly), ""
	case 2:
		return "", edge().Format(time.DateOnly)
	default:
		hi = edge()
		if hi.Before(lo) {
			lo, hi = hi, lo
		}
	}
	return lo.Format(time.DateOnly), hi.Format(time.DateOnly)
}
