// Conformance scenarios of the monthly permit series and of the export scan.

package conformance

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// CapMonthly is the monthly permit series (readmodel.PermitMonthlyReader).
const CapMonthly Capability = "permit_monthly"

func init() {
	Scenarios = append(Scenarios, Scenario{"permits/monthly_agrees_with_search", permitMonthly},
		Scenario{"permits/monthly_edges", permitMonthlyEdges})
}

// loadMonthly loads the fixture and its varied permits and returns the
// backend's monthly reader; false (after e.Check) when it has none.
func loadMonthly(t *testing.T, e *Env) (readmodel.PermitMonthlyReader, bool) {
	t.Helper()
	e.Require(t, CapMonthly)
	e.Load(t, append(AllEvents(t), variedPermitEvents(t)...)...)
	mr, ok := e.B.(readmodel.PermitMonthlyReader)
	if !ok {
		e.Check(t, CapMonthly, readmodel.ErrUnsupported)
	}
	return mr, ok
}

// permitMonthly: each month's count, total and median are those of the
// permits SearchPermits pages with the same filter and window.
func permitMonthly(t *testing.T, e *Env) {
	mr, ok := loadMonthly(t, e)
	if !ok {
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
		e.walkPermits(t, q, func(page readmodel.PermitPage) {
			for _, h := range page.Permits {
				m := h.Permit.IssueDate[:7]
				count[m]++
				if h.Permit.Valuation != nil {
					vals[m] = append(vals[m], *h.Permit.Valuation)
				}
			}
		})
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
	mr, ok := loadMonthly(t, e)
	if !ok {
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
		want := e.walkPermits(t, q, nil)
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
