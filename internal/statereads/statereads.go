// Package statereads is the benchmarks' state-wide reads: what a
// dashboard asks of a whole state (filtered pages by date, valuation,
// text and distance, a month series, lead pages and lead stats), each
// answer as JSON, so that a benchmark can time a read model's answers
// and require the same of another (a lean side's against a whole one's:
// readmodel/memory's permit_bulk.go).
package statereads

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// Reader is the read model's part the reads use (*memory.Store has it).
type Reader interface {
	SearchPermits(context.Context, readmodel.PermitQuery) (readmodel.PermitPage, error)
	PermitMonthly(context.Context, readmodel.MonthlyQuery) ([]readmodel.MonthBucket, error)
	PermitLeads(context.Context, readmodel.LeadQuery) (readmodel.LeadPage, error)
	PermitStats(context.Context, readmodel.StatsQuery) (readmodel.PermitStats, error)
}

// State is a state and a point in its largest city.
type State struct {
	Code string
	City readmodel.GeoPoint
}

// States are the three the benchmarks read: CA, TX and WA.
var States = []State{
	{"CA", readmodel.GeoPoint{Lat: 34.05, Lon: -118.24}},
	{"TX", readmodel.GeoPoint{Lat: 29.76, Lon: -95.37}},
	{"WA", readmodel.GeoPoint{Lat: 47.61, Lon: -122.33}},
}

// Permits answers, for each state, four filtered permit pages (issued
// building permits by date and by valuation, "roof", within 20 km of
// the city by distance) and the month series of 2023 and 2024. A page
// that finds nothing is an error: the data must hold what is read.
func Permits(ctx context.Context, r Reader, states []State) ([]string, error) {
	var out []string
	for _, st := range states {
		geo := readmodel.ParseGeoRef(events.GeoID("state", st.Code))
		issued := readmodel.PermitFilter{PermitTypes: []string{"building"}, Statuses: []string{"issued"}}
		near := readmodel.PermitFilter{Near: &st.City, RadiusM: 20000}
		for _, q := range []readmodel.PermitQuery{
			{Geo: geo, Limit: 25, Filter: issued},
			{Geo: geo, Limit: 25, Filter: issued, Sort: readmodel.SortValuationDesc},
			{Geo: geo, Limit: 25, Filter: readmodel.PermitFilter{Text: "roof"}},
			{Geo: geo, Limit: 25, Filter: near, Sort: readmodel.SortDistance},
		} {
			page, err := r.SearchPermits(ctx, q)
			if err != nil {
				return nil, err
			}
			if len(page.Permits) == 0 {
				return nil, fmt.Errorf("%s: no permit for %+v", st.Code, q.Filter)
			}
			out = append(out, jsonOf(page))
		}
		months, err := r.PermitMonthly(ctx, readmodel.MonthlyQuery{Geo: geo, FromDate: "2023-01-01", ToDate: "2024-12-31"})
		if err != nil {
			return nil, err
		}
		out = append(out, jsonOf(months))
	}
	return out, nil
}

// Leads answers, for each state, its first lead page by event date and
// by confidence, and its lead stats as of today.
func Leads(ctx context.Context, r Reader, states []State, today string) ([]string, error) {
	var out []string
	for _, st := range states {
		f := readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(events.GeoID("state", st.Code))}
		for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
			page, err := r.PermitLeads(ctx, readmodel.LeadQuery{Filter: f, Sort: sort, Limit: 50})
			if err != nil {
				return nil, err
			}
			if len(page.Leads) == 0 {
				return nil, fmt.Errorf("%s: no lead", st.Code)
			}
			out = append(out, jsonOf(page))
		}
		stats, err := r.PermitStats(ctx, readmodel.StatsQuery{Filter: f, Today: today, TopN: 10})
		if err != nil {
			return nil, err
		}
		out = append(out, jsonOf(stats))
	}
	return out, nil
}

func jsonOf(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // read model answers always marshal
	}
	return string(raw)
}
