package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestGeoSearchMatchesBruteForce: a cursor walk of any geo signal filter
// yields exactly the brute-force order of the matching rows of active
// keys (score desc, key asc, geo asc).
func TestGeoSearchMatchesBruteForce(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(31, 32))
	types := []readmodel.GeoType{readmodel.GeoCity, readmodel.GeoZip, readmodel.GeoCounty}
	decisions := []string{"positive", "neutral", "negative"}
	var b readmodel.Batch
	for k := range 5 {
		for _, st := range []string{"WA", "OR"} {
			status := readmodel.CatalogActive
			if k == 4 {
				status = "retired"
			}
			b.Catalog = append(b.Catalog, readmodel.CatalogEntry{State: st, SignalKey: fmt.Sprintf("g%d", k), Status: status, Version: 1})
		}
	}
	var rows []readmodel.GeoSignal
	for i := range 600 {
		g := readmodel.GeoSignal{
			GeoID: fmt.Sprintf("geo:%03d", i%150), GeoType: types[(i%150)%3], State: []string{"WA", "OR"}[(i%150)/120],
			SignalKey: fmt.Sprintf("g%d", i/150+r.IntN(2)), Score: float64(r.IntN(20)) / 20, Decision: decisions[r.IntN(3)], Version: 1,
			Value: []byte(`{}`),
		}
		if slices.ContainsFunc(rows, func(o readmodel.GeoSignal) bool { return o.ID() == g.ID() }) {
			continue
		}
		rows = append(rows, g)
	}
	b.GeoSignals = rows
	s := memory.New(memory.Params{})
	_, err := s.Apply(ctx, b)
	require.NoError(t, err)
	found := 0 // cases whose walk yields rows: not every case may match nothing
	for i := range 200 {
		q := readmodel.GeoSignalQuery{State: []string{"WA", "OR"}[r.IntN(2)], Limit: 1 + r.IntN(30)}
		if r.IntN(2) == 0 {
			q.GeoType = types[r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			q.Decision = decisions[r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			m := float64(r.IntN(20)) / 20
			q.MinScore = &m
		}
		for k := range 5 {
			if r.IntN(4) == 0 {
				q.SignalKeys = append(q.SignalKeys, fmt.Sprintf("g%d", k))
			}
		}
		var want []string
		sel := slices.Clone(rows)
		slices.SortFunc(sel, func(a, b readmodel.GeoSignal) int {
			switch {
			case a.Score != b.Score:
				if a.Score > b.Score {
					return -1
				}
				return 1
			case a.SignalKey != b.SignalKey:
				if a.SignalKey < b.SignalKey {
					return -1
				}
				return 1
			case a.GeoID < b.GeoID:
				return -1
			case a.GeoID > b.GeoID:
				return 1
			}
			return 0
		})
		for _, g := range sel {
			if g.State != q.State || g.SignalKey == "g4" || len(q.SignalKeys) > 0 && !slices.Contains(q.SignalKeys, g.SignalKey) ||
				q.GeoType != "" && g.GeoType != q.GeoType || q.Decision != "" && g.Decision != q.Decision || q.MinScore != nil && g.Score < *q.MinScore {
				continue
			}
			want = append(want, g.ID())
		}
		var got []string
		for pages := 0; ; pages++ {
			require.Less(t, pages, 1000)
			page, err := s.SearchGeoSignals(ctx, q)
			require.NoError(t, err)
			for _, g := range page.Signals {
				got = append(got, g.ID())
			}
			if page.Next == nil {
				break
			}
			q.After = page.Next
		}
		require.Equal(t, want, got, "case %d %+v", i, q)
		if len(got) > 0 {
			found++
		}
	}
	require.Greater(t, found, 100, "cases whose walk yields rows")
}
