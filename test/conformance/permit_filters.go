package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// Permit search filters (issue 14). Expected pages come from the
// fixture's documents and readmodel.PermitFilter.Match.
func init() {
	Scenarios = append(Scenarios, Scenario{"permits/filters", permitFilters}, Scenario{"permits/valuation_desc", permitValuationSort})
}

// valuationDesc is the order of sort=valuation_desc: valuation
// descending, unknown last, permit_id ascending on ties.
func valuationDesc(a, b readmodel.Permit) int {
	switch {
	case (a.Valuation == nil) != (b.Valuation == nil):
		if a.Valuation == nil {
			return 1
		}
		return -1
	case a.Valuation != nil && *a.Valuation != *b.Valuation:
		return -cmpFloat(*a.Valuation, *b.Valuation)
	}
	return strings.Compare(a.PermitID, b.PermitID)
}

// permitValuationSort walks sort=valuation_desc pages: valuation
// descending, unknown last, permit_id ascending on ties.
func permitValuationSort(t *testing.T, e *Env) {
	e.Load(t, AllEvents(t)...)
	for _, geo := range []string{WA, Seattle, PropUniv} {
		ps := permitsUnder(e, geo)
		slices.SortFunc(ps, valuationDesc)
		var want []string
		for _, p := range ps {
			want = append(want, p.PermitID)
		}
		got := e.walkPermits(t, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 4, Sort: readmodel.SortValuationDesc}, nil)
		require.Equal(t, want, got, geo)
	}
}

func permitFilters(t *testing.T, e *Env) {
	e.Load(t, AllEvents(t)...)
	// Filter values drawn from the fixture, written in other cases.
	var types, works, statuses, contractors []string
	var vals []float64
	var words []string
	for _, p := range permitsUnder(e, WA) {
		for _, w := range strings.Fields(strings.ToLower(p.RawDescription)) {
			if len(w) >= 4 && !slices.Contains(words, w) && strings.IndexFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
				words = append(words, w)
			}
		}
		if len(words) > 0 && p.PermitNumber != "" {
			words = append(words[:1], words[0]+" "+p.PermitNumber)
		}
		add := func(list *[]string, v string) {
			if v = readmodel.FoldValue(v); v != "" && !slices.Contains(*list, v) {
				*list = append(*list, v)
			}
		}
		add(&types, p.PermitType)
		add(&works, p.WorkType)
		add(&statuses, p.Status)
		if k := readmodel.ContractorKey(p.Contractor); k != "" && !slices.Contains(contractors, k) {
			contractors = append(contractors, k)
		}
		if p.Valuation != nil {
			vals = append(vals, *p.Valuation)
		}
	}
	require.NotEmpty(t, types, "fixture permits have types")
	require.NotEmpty(t, statuses, "fixture permits have statuses")
	slices.Sort(vals)
	median := 0.0
	if len(vals) > 0 {
		median = vals[len(vals)/2]
	}
	f := func(p *float64) *float64 { return p }
	cases := []struct {
		name   string
		geo    string
		desc   bool
		filter readmodel.PermitFilter
	}{
		{"one type", WA, true, readmodel.PermitFilter{PermitTypes: types[:1]}},
		{"types any of", Seattle, false, readmodel.PermitFilter{PermitTypes: types[:min(2, len(types))]}},
		{"status", King, true, readmodel.PermitFilter{Statuses: statuses[:1]}},
		{"work type and status", WA, false, readmodel.PermitFilter{WorkTypes: works[:1], Statuses: statuses}},
		{"min valuation", WA, true, readmodel.PermitFilter{MinValuation: f(&median)}},
		{"valuation range", Seattle, true, readmodel.PermitFilter{MinValuation: f(&vals[0]), MaxValuation: f(&median)}},
		{"unknown value", WA, true, readmodel.PermitFilter{Statuses: []string{"no such status"}}},
		{"property", PropUniv, true, readmodel.PermitFilter{PermitTypes: types}},
	}
	if len(words) >= 2 {
		for _, q := range []string{words[0], words[0][:3], strings.ToUpper(words[0]) + "s", words[1], "zzzz " + words[0]} {
			cases = append(cases, struct {
				name   string
				geo    string
				desc   bool
				filter readmodel.PermitFilter
			}{"q " + q, WA, true, readmodel.PermitFilter{Text: q}})
		}
	}
	if len(contractors) > 0 {
		cases = append(cases, struct {
			name   string
			geo    string
			desc   bool
			filter readmodel.PermitFilter
		}{"contractor", WA, true, readmodel.PermitFilter{Contractor: contractors[0]}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := permitsUnder(e, tc.geo)
			sortPermits(ps, tc.desc)
			var want []string
			for _, p := range ps {
				if tc.filter.Match(&p) {
					want = append(want, p.PermitID)
				}
			}
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(tc.geo), Desc: tc.desc, Limit: 3, Filter: tc.filter}
			got := e.walkPermits(t, q, func(page readmodel.PermitPage) {
				if page.Next != nil {
					require.Len(t, page.Permits, 3, "a page with Next is full")
				}
			})
			require.Equal(t, want, got, "filter %+v", tc.filter)
			if !strings.HasPrefix(tc.name, "unknown") && !strings.HasPrefix(tc.name, "q ") && tc.name != "property" {
				require.NotEmpty(t, got, "the fixture gives this case permits")
			}
		})
	}
}

func init() {
	Scenarios = append(Scenarios, Scenario{"permits/geometry_and_varied_filters", permitGeometry})
}

// variedPermitEvents are 48 permits of ZIP 98101 and 98104 on a grid of
// coordinates (0.002 degrees apart) with varied types, statuses,
// contractors, valuations and descriptions; every seventh has no
// coordinates.
func variedPermitEvents(t *testing.T) []events.Envelope {
	types := []string{"Building", "ELECTRICAL", "Demolition"}
	stats := []string{"Issued", "Completed", "Permit Closed", "Expired"}
	contractors := []string{"ACME Roofing, Inc.", "acme roofing inc", "Bob's Builders", ""}
	descs := []string{"Kitchen remodel", "Remodeling of the kitchens", "Demolish garage", "Install solar panels"}
	var out []events.Envelope
	for i := range 48 {
		zip := []string{"98101", "98104"}[i%2]
		num := fmt.Sprintf("G%03d", i)
		d := events.Permit{
			PermitNumber: num, PermitType: types[i%3], WorkType: []string{"New", "Alteration"}[i%2], Status: stats[i%4],
			IssueDate: fmt.Sprintf("2024-%02d-%02d", 1+i%5, 1+i%7), Description: descs[i%4] + " " + num,
			Contractor: contractors[i%4], Source: "conformance",
			Address: events.PermitAddress{Line: fmt.Sprintf("%d Grid Ave", 200+i), City: "Seattle", State: "WA", Zipcode: zip, ZipSource: "source"},
		}
		if i%5 != 0 {
			v := float64((i % 9) * 2500)
			d.Valuation = &v
		}
		if i%7 != 6 {
			lat, lon := 47.600+float64(i%8)*0.002, -122.340+float64(i/8)*0.002
			d.Lat, d.Lon = &lat, &lon
		}
		out = append(out, mustEnv(t, events.PermitUpserted, events.PermitDocID("conformance", num), 1, d))
	}
	return out
}

func permitGeometry(t *testing.T, e *Env) {
	e.Load(t, append(AllEvents(t), variedPermitEvents(t)...)...)
	center := readmodel.GeoPoint{Lat: 47.604, Lon: -122.336}
	type tcase struct {
		name  string
		geo   string
		sort  readmodel.PermitSort
		desc  bool
		f     readmodel.PermitFilter
		empty bool
	}
	cases := []tcase{
		{"near alone by distance", "", readmodel.SortDistance, false, readmodel.PermitFilter{Near: &center, RadiusM: 600}, false},
		{"near in a zip by date", Zip98101, "", true, readmodel.PermitFilter{Near: &center, RadiusM: 900}, false},
		{"near asc with status", Seattle, "", false, readmodel.PermitFilter{Near: &center, RadiusM: 2000, Statuses: []string{"issued", "permit closed"}}, false},
		{"bbox by valuation", WA, readmodel.SortValuationDesc, false, readmodel.PermitFilter{BBox: &readmodel.BBox{MinLon: -122.341, MinLat: 47.599, MaxLon: -122.333, MaxLat: 47.607}}, false},
		{"bbox and near", "", readmodel.SortDistance, false, readmodel.PermitFilter{Near: &center, RadiusM: 800, BBox: &readmodel.BBox{MinLon: -122.338, MinLat: 47.600, MaxLon: -122.330, MaxLat: 47.620}}, false},
		{"far away", "", "", true, readmodel.PermitFilter{Near: &readmodel.GeoPoint{Lat: 40, Lon: -100}, RadiusM: 50000}, true},
		{"near a pole", "", readmodel.SortDistance, false, readmodel.PermitFilter{Near: &readmodel.GeoPoint{Lat: 89.9, Lon: 0}, RadiusM: 50000}, true},
		{"bbox apart from near", "", "", true, readmodel.PermitFilter{Near: &center, RadiusM: 800, BBox: &readmodel.BBox{MinLon: -122, MinLat: 7, MaxLon: -120, MaxLat: 7}}, true},
		{"types any case", Seattle, "", true, readmodel.PermitFilter{PermitTypes: []string{"electrical", "demolition"}}, false},
		{"contractor", WA, "", false, readmodel.PermitFilter{Contractor: "acmeroofinginc"}, false},
		{"q stemmed", King, "", true, readmodel.PermitFilter{Text: "remodeled KITCHEN"}, false},
		{"q prefix and status", WA, readmodel.SortValuationDesc, false, readmodel.PermitFilter{Text: "sol", Statuses: []string{"expired"}}, false},
		{"q permit number", WA, "", true, readmodel.PermitFilter{Text: "g017"}, false},
	}
	dist := func(p readmodel.Permit, f readmodel.PermitFilter) float64 {
		return readmodel.DistanceM(*f.Near, readmodel.GeoPoint{Lat: *p.Lat, Lon: *p.Lon})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ps []readmodel.Permit
			if tc.geo == "" {
				for _, p := range e.Permits {
					ps = append(ps, p)
				}
			} else {
				ps = permitsUnder(e, tc.geo)
			}
			var keep []readmodel.Permit
			for _, p := range ps {
				if tc.f.Match(&p) {
					keep = append(keep, p)
				}
			}
			sortPermits(keep, tc.desc)
			switch tc.sort {
			case readmodel.SortDistance:
				slices.SortStableFunc(keep, func(a, b readmodel.Permit) int {
					if c := cmpFloat(dist(a, tc.f), dist(b, tc.f)); c != 0 {
						return c
					}
					return strings.Compare(a.PermitID, b.PermitID)
				})
			case readmodel.SortValuationDesc:
				slices.SortStableFunc(keep, valuationDesc)
			}
			var want []string
			for _, p := range keep {
				want = append(want, p.PermitID)
			}
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(tc.geo), Desc: tc.desc, Limit: 4, Sort: tc.sort, Filter: tc.f}
			got := e.walkPermits(t, q, func(page readmodel.PermitPage) {
				for _, h := range page.Permits {
					if tc.f.Near != nil {
						require.NotNil(t, h.DistanceM)
						require.InDelta(t, dist(h.Permit, tc.f), *h.DistanceM, 0.06)
					} else {
						require.Nil(t, h.DistanceM)
					}
					if tc.geo == "" {
						require.Equal(t, readmodel.GeoLink{}, h.Match)
					} else {
						require.Equal(t, tc.geo, h.Match.GeoID)
					}
				}
			})
			require.Equal(t, want, got)
			require.Equal(t, tc.empty, len(got) == 0, "the fixture gives this case permits (or none)")
		})
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
