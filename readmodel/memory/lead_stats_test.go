package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestPermitStatsMatchPaging loads random leads (dense days so cells hold
// many leads, tied and null confidences, null dates and names), rewrites
// and deletes some, then checks for random filters that PermitStats equals
// the aggregate of every lead PermitLeads pages: total, every bucket, by
// signal and the full city, zip and county counts (TopN -1).
func TestPermitStatsMatchPaging(t *testing.T) {
	ctx := context.Background()
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	geos := []string{"state:WA", "county:53033", "city:1", "zip:98101"}
	s := memory.New(memory.Params{})
	var locs readmodel.Batch
	for _, g := range geos {
		locs.Locations = append(locs.Locations, readmodel.Location{GeoID: g, GeoType: readmodel.GeoZip, Name: g, Version: 1})
	}
	apply(t, s, locs)

	r := rand.New(rand.NewPCG(7, 11))
	keys := []string{"k_a", "k_b", "k_c"}
	tiedConf := []float64{0.05, 0.25, 0.5, 0.55, 0.7, 0.75, 0.9, 0.99}
	pick := func(prefix string, n int) string {
		if r.IntN(8) == 0 {
			return ""
		}
		return fmt.Sprintf("%s%d", prefix, r.IntN(n))
	}
	lead := func(i int, version int64) readmodel.Lead {
		l := readmodel.Lead{LeadID: fmt.Sprintf("L%05d", i), SignalKey: keys[r.IntN(len(keys))], Version: version, GeoIDs: []string{geos[0]}}
		if r.IntN(20) != 0 {
			l.EventDateUsed = today.AddDate(0, 0, 3-r.IntN(90)).Format(time.DateOnly)
		}
		switch r.IntN(10) {
		case 0: // null
		case 1, 2, 3:
			c := float64(r.IntN(100)) / 100
			l.Confidence = &c
		default:
			c := tiedConf[r.IntN(len(tiedConf))]
			l.Confidence = &c
		}
		l.Location.CityNorm, l.Location.ZipcodeNorm, l.Location.CountyNorm = pick("city", 12), pick("zip", 30), pick("county", 4)
		for _, g := range geos[1:] {
			if r.IntN(2) == 0 {
				l.GeoIDs = append(l.GeoIDs, g)
			}
		}
		return l
	}
	const n = 6000
	var b readmodel.Batch
	for i := range n {
		b.Leads = append(b.Leads, lead(i, 1))
	}
	apply(t, s, b)
	b = readmodel.Batch{}
	for range n / 3 {
		i := r.IntN(n)
		if r.IntN(3) == 0 {
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindLead, ID: fmt.Sprintf("L%05d", i), Version: 2})
		} else {
			b.Leads = append(b.Leads, lead(i, 2))
		}
	}
	apply(t, s, b)

	day := func(back int) string { return today.AddDate(0, 0, -back).Format(time.DateOnly) }
	for i := range 300 {
		f := readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(geos[r.IntN(len(geos))])}
		if r.IntN(3) == 0 {
			f.SignalKeys = keys[:1+r.IntN(2)]
		}
		if r.IntN(3) == 0 {
			f.FreshSince = day(r.IntN(100) - 5)
		}
		if r.IntN(4) == 0 {
			f.FromDate = day(r.IntN(100))
		}
		if r.IntN(4) == 0 {
			f.ToDate = day(r.IntN(100) - 5)
		}
		switch r.IntN(5) {
		case 0: // no floor
		case 1:
			c := tiedConf[r.IntN(len(tiedConf))]
			f.MinConfidence = &c
		default:
			c := r.Float64()*1.2 - 0.1
			f.MinConfidence = &c
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			got, err := s.PermitStats(ctx, readmodel.StatsQuery{Filter: f, Today: today.Format(time.DateOnly), TopN: -1})
			require.NoError(t, err)
			require.Equal(t, statsOfPages(t, s, f, today), got, "filter %+v", f)
		})
	}
}

// statsOfPages pages every lead of f and aggregates it the way the spec
// says.
func statsOfPages(t *testing.T, s *memory.Store, f readmodel.LeadFilter, today time.Time) readmodel.PermitStats {
	t.Helper()
	var st readmodel.PermitStats
	bySignal, cities, zips, counties := map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	q := readmodel.LeadQuery{Filter: f, Sort: readmodel.SortEventDateDesc, Limit: 100}
	for {
		page, err := s.PermitLeads(context.Background(), q)
		require.NoError(t, err)
		st.GeoType = page.GeoType // the anchor's, on stats as on every page
		for _, l := range page.Leads {
			st.Total++
			bySignal[l.SignalKey]++
			switch c := l.Confidence; {
			case c != nil && *c >= 0.75:
				st.ConfidenceHigh++
			case c != nil && *c >= 0.5:
				st.ConfidenceMedium++
			default:
				st.ConfidenceLow++
			}
			lag := 31
			if l.EventDateUsed != "" {
				d, err := time.Parse(time.DateOnly, l.EventDateUsed)
				require.NoError(t, err)
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
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
	list := func(m map[string]int64) []readmodel.ValueCount {
		out := []readmodel.ValueCount{}
		for v, n := range m {
			out = append(out, readmodel.ValueCount{Value: v, Count: n})
		}
		sortCounts(out)
		return out
	}
	st.TopCities, st.TopZips, st.TopCounties = list(cities), list(zips), list(counties)
	if len(bySignal) > 0 {
		st.BySignal = list(bySignal)
	}
	return st
}

func sortCounts(v []readmodel.ValueCount) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && (v[j].Count > v[j-1].Count || v[j].Count == v[j-1].Count && v[j].Value < v[j-1].Value); j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// Stats of a geography without leads are zeros and empty lists, whether
// or not the store holds any lead; its lead page is empty, not nil.
func TestStatsWithoutLeadsAreEmpty(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	q := readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(city)}, Today: "2026-01-01", TopN: 5}
	check := func(st readmodel.PermitStats, err error) {
		t.Helper()
		require.NoError(t, err)
		require.Zero(t, st.Total)
		require.Empty(t, st.BySignal)
		require.Empty(t, st.TopCities)
		require.Empty(t, st.TopCounties)
		require.Empty(t, st.TopZips)
	}
	check(s.PermitStats(ctx, q))

	conf := 0.9
	apply(t, s, readmodel.Batch{Leads: []readmodel.Lead{{LeadID: "l1", SignalKey: "k", EventDateUsed: "2025-12-30",
		Confidence: &conf, GeoIDs: []string{zipA}, Version: 1}}})
	check(s.PermitStats(ctx, q))
	page, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: q.Filter, Sort: readmodel.SortEventDateDesc, Limit: 5})
	require.NoError(t, err)
	require.NotNil(t, page.Leads)
	require.Empty(t, page.Leads)
}
