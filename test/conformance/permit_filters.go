package conformance

import (
	"fmt"
	"math"
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

// permitValuationSort walks sort=valuation_desc pages: valuation
// descending, unknown last, permit_id ascending on ties.
func permitValuationSort(t *testing.T, e *Env) {
	e.Load(t, AllEvents(t)...)
	for _, geo := range []string{WA, Seattle, PropUniv} {
		ps := permitsUnder(e, geo)
		slices.SortFunc(ps, func(a, b readmodel.Permit) int {
			switch {
			case (a.Valuation == nil) != (b.Valuation == nil):
				if a.Valuation == nil {
					return 1
				}
				return -1
			case a.Valuation != nil && *a.Valuation != *b.Valuation:
				if *a.Valuation > *b.Valuation {
					return -1
				}
				return 1
			}
			return strings.Compare(a.PermitID, b.PermitID)
		})
		var want, got []string
		for _, p := range ps {
			want = append(want, p.PermitID)
		}
		q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 4, Sort: readmodel.SortValuationDesc}
		for pages := 0; ; pages++ {
			require.Less(t, pages, 200, "walk does not end")
			page, err := e.B.SearchPermits(e.Ctx(), q)
			require.NoError(t, err)
			for _, h := range page.Permits {
				got = append(got, h.Permit.PermitID)
			}
			if page.Next == nil {
				break
			}
			q.After = page.Next
		}
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
			var got []string
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(tc.geo), Desc: tc.desc, Limit: 3, Filter: tc.filter}
			for pages := 0; ; pages++ {
				require.Less(t, pages, 200, "walk does not end")
				page, err := e.B.SearchPermits(e.Ctx(), q)
				require.NoError(t, err)
				for _, h := range page.Permits {
					got = append(got, h.Permit.PermitID)
				}
				if page.Next == nil {
					break
				}
				require.Len(t, page.Permits, 3, "a page with Next is full")
				q.After = page.Next
			}
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
				slices.SortStableFunc(keep, func(a, b readmodel.Permit) int {
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
				})
			}
			var want, got []string
			for _, p := range keep {
				want = append(want, p.PermitID)
			}
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(tc.geo), Desc: tc.desc, Limit: 4, Sort: tc.sort, Filter: tc.f}
			for pages := 0; ; pages++ {
				require.Less(t, pages, 200, "walk does not end")
				page, err := e.B.SearchPermits(e.Ctx(), q)
				require.NoError(t, err)
				for _, h := range page.Permits {
					got = append(got, h.Permit.PermitID)
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
				if page.Next == nil {
					break
				}
				q.After = page.Next
			}
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

// CapMonthly is the monthly permit series (readmodel.PermitMonthlyReader).
const CapMonthly Capability = "permit_monthly"

func init() {
	Scenarios = append(Scenarios, Scenario{"permits/monthly_agrees_with_search", permitMonthly},
		Scenario{"permits/monthly_edges", permitMonthlyEdges})
}

// permitMonthly: each month's count, total and median are those of the
// permits SearchPermits pages with the same filter and window.
func permitMonthly(t *testing.T, e *Env) {
	e.Require(t, CapMonthly)
	e.Load(t, append(AllEvents(t), variedPermitEvents(t)...)...)
	mr, ok := e.B.(readmodel.PermitMonthlyReader)
	if !ok {
		e.Check(t, CapMonthly, readmodel.ErrUnsupported)
		return
	}
	center := readmodel.GeoPoint{Lat: 47.604, Lon: -122.336}
	for _, tc := range []struct {
		geo, from, to string
		f             readmodel.PermitFilter
	}{
		{WA, "2023-11-01", "2025-12-31", readmodel.PermitFilter{}},
		{Seattle, "2024-01-15", "2024-04-10", readmodel.PermitFilter{}},
		{Zip98101, "2024-01-01", "2024-06-30", readmodel.PermitFilter{Statuses: []string{"issued", "completed"}}},
		{King, "2024-01-01", "2024-12-31", readmodel.PermitFilter{Text: "kitchen", MinValuation: ptrTo(2000.0)}},
		{WA, "2024-02-01", "2024-05-31", readmodel.PermitFilter{Near: &center, RadiusM: 700}},
		{PropUniv, "2020-01-01", "2026-12-31", readmodel.PermitFilter{}},
		// Filters that split the months into odd and even known counts,
		// with ties (valuations repeat every nine permits).
		{Seattle, "2024-01-01", "2024-05-31", readmodel.PermitFilter{Contractor: "acmeroofinginc"}},
		{WA, "2024-01-01", "2024-05-31", readmodel.PermitFilter{WorkTypes: []string{"alteration"}, PermitTypes: []string{"building", "demolition"}}},
		{Zip98101, "2024-02-03", "2024-04-05", readmodel.PermitFilter{MaxValuation: ptrTo(12500.0), Text: "kitchen"}},
		{WA, "2024-01-01", "2024-05-31", readmodel.PermitFilter{BBox: &readmodel.BBox{MinLon: -122.341, MinLat: 47.599, MaxLon: -122.333, MaxLat: 47.607}}},
	} {
		got, err := mr.PermitMonthly(e.Ctx(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(tc.geo), Filter: tc.f, FromDate: tc.from, ToDate: tc.to})
		e.Check(t, CapMonthly, err)
		require.NoError(t, err)
		months := readmodel.MonthsOf(tc.from, tc.to)
		require.Len(t, got, len(months))
		count := map[string]int64{}
		vals := map[string][]float64{}
		q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(tc.geo), Desc: true, FromDate: tc.from, ToDate: tc.to, Limit: 100, Filter: tc.f}
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100)
			page, err := e.B.SearchPermits(e.Ctx(), q)
			require.NoError(t, err)
			for _, h := range page.Permits {
				m := h.Permit.IssueDate[:7]
				count[m]++
				if h.Permit.Valuation != nil {
					vals[m] = append(vals[m], *h.Permit.Valuation)
				}
			}
			if page.Next == nil {
				break
			}
			q.After = page.Next
		}
		var total int64
		for i, b := range got {
			require.Equal(t, months[i], b.Month)
			sum := 0.0
			for _, v := range vals[b.Month] {
				sum += v
			}
			require.Equal(t, count[b.Month], b.Count, "%s %s %+v", tc.geo, b.Month, tc.f)
			require.InDelta(t, sum, b.TotalValuation, 0.01)
			require.Equal(t, readmodel.Median(vals[b.Month]), b.MedianValuation)
			total += b.Count
		}
		require.NotZero(t, total, "the fixture gives %s permits in %s..%s %+v", tc.geo, tc.from, tc.to, tc.f)
	}
}

// permitMonthlyEdges: an unknown geography is ErrNotFound (for a
// location and a property), a window without permits is all zeros, a
// one-day window counts that day only, and a filter that keeps no
// valuation gives counts with a zero total and no median.
func permitMonthlyEdges(t *testing.T, e *Env) {
	e.Require(t, CapMonthly)
	e.Load(t, append(AllEvents(t), variedPermitEvents(t)...)...)
	mr, ok := e.B.(readmodel.PermitMonthlyReader)
	if !ok {
		e.Check(t, CapMonthly, readmodel.ErrUnsupported)
		return
	}
	for _, geo := range []string{events.GeoID("city", "0000000000"), events.PropertyID("addr:1 NOWHERE ST|SEATTLE|WA")} {
		_, err := mr.PermitMonthly(e.Ctx(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(geo), FromDate: "2024-01-01", ToDate: "2024-12-31"})
		require.ErrorIs(t, err, readmodel.ErrNotFound, geo)
	}
	got, err := mr.PermitMonthly(e.Ctx(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(Seattle), FromDate: "1990-11-15", ToDate: "1991-02-02"})
	e.Check(t, CapMonthly, err)
	require.Equal(t, []readmodel.MonthBucket{{Month: "1990-11"}, {Month: "1990-12"}, {Month: "1991-01"}, {Month: "1991-02"}}, got)

	// One day: the varied permits of 2024-03-02 in Seattle.
	var day []readmodel.Permit
	for _, p := range permitsUnder(e, Seattle) {
		if p.IssueDate == "2024-03-02" {
			day = append(day, p)
		}
	}
	require.NotEmpty(t, day, "the fixture has Seattle permits on 2024-03-02")
	got, err = mr.PermitMonthly(e.Ctx(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(Seattle), FromDate: "2024-03-02", ToDate: "2024-03-02"})
	e.Check(t, CapMonthly, err)
	var vals []float64
	cents := int64(0)
	for _, p := range day {
		if p.Valuation != nil {
			vals = append(vals, *p.Valuation)
			cents += int64(math.Round(*p.Valuation * 100))
		}
	}
	require.Equal(t, []readmodel.MonthBucket{{Month: "2024-03", Count: int64(len(day)), TotalValuation: float64(cents) / 100,
		MedianValuation: readmodel.Median(vals)}}, got)

	// Unknown valuations only: permits G000, G005, ... have none.
	got, err = mr.PermitMonthly(e.Ctx(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(WA), FromDate: "2024-01-01", ToDate: "2024-05-31",
		Filter: readmodel.PermitFilter{Text: "G005"}})
	e.Check(t, CapMonthly, err)
	var sum int64
	for _, b := range got {
		require.Zero(t, b.TotalValuation, b.Month)
		require.Nil(t, b.MedianValuation, b.Month)
		sum += b.Count
	}
	require.Equal(t, int64(1), sum)
}

func ptrTo[T any](v T) *T { return &v }

func init() {
	Scenarios = append(Scenarios, Scenario{"permits/export_scan", permitExportScan})
}

// permitExportScan: the export's scan (the backend's own, a snapshot,
// when it implements readmodel.PermitScanner; else pages of search)
// yields exactly the permits search pages, in the same order, for
// filters and both anchors; an unknown geography is ErrNotFound on the
// first page; Close is idempotent.
func permitExportScan(t *testing.T, e *Env) {
	e.Load(t, append(AllEvents(t), variedPermitEvents(t)...)...)
	open := func(q readmodel.PermitQuery) readmodel.PermitScan {
		if ps, ok := e.B.(readmodel.PermitScanner); ok {
			s, err := ps.OpenPermitScan(e.Ctx(), q, 0)
			require.NoError(t, err)
			return s
		}
		return readmodel.PagedPermitScan(e.B, q)
	}
	walk := func(s readmodel.PermitScan) ([]string, error) {
		var ids []string
		for pages := 0; pages < 200; pages++ {
			p, err := s.Next(e.Ctx())
			if err != nil {
				return ids, err
			}
			for _, h := range p.Permits {
				ids = append(ids, h.Permit.PermitID)
			}
			if p.Next == nil {
				return ids, nil
			}
		}
		t.Fatal("scan does not end")
		return nil, nil
	}
	for _, q := range []readmodel.PermitQuery{
		{Geo: readmodel.ParseGeoRef(WA), Desc: true, Limit: 7},
		{Geo: readmodel.ParseGeoRef(Seattle), Desc: true, Limit: 5, FromDate: "2024-01-01", Filter: readmodel.PermitFilter{Statuses: []string{"issued", "expired"}}},
		{Geo: readmodel.ParseGeoRef(PropUniv), Desc: true, Limit: 2},
	} {
		var want []string
		sq := q
		for pages := 0; ; pages++ {
			require.Less(t, pages, 200)
			p, err := e.B.SearchPermits(e.Ctx(), sq)
			require.NoError(t, err)
			for _, h := range p.Permits {
				want = append(want, h.Permit.PermitID)
			}
			if p.Next == nil {
				break
			}
			sq.After = p.Next
		}
		require.NotEmpty(t, want, q.Geo.ID())
		s := open(q)
		got, err := walk(s)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s %+v", q.Geo.ID(), q.Filter)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close())
	}
	s := open(readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(events.GeoID("city", "0000000000")), Desc: true, Limit: 10})
	_, err := s.Next(e.Ctx())
	require.ErrorIs(t, err, readmodel.ErrNotFound)
	require.NoError(t, s.Close())
}
