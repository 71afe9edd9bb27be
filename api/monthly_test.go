package api_test

import (
	"maps"
	"net/http"
	"net/url"
	"testing"

	"github.com/permitd/permitd/api/apitest"
)

type monthlyBody struct {
	GeoID    string `json:"geo_id"`
	FromDate string `json:"from_date"`
	ToDate   string `json:"to_date"`
	Months   []struct {
		Month           string   `json:"month"`
		PermitCount     int      `json:"permit_count"`
		TotalValuation  float64  `json:"total_valuation"`
		MedianValuation *float64 `json:"median_valuation"`
	} `json:"months"`
}

// TestPermitMonthly: the series counts what paging the search with the
// same filters and window yields, month by month, every month present.
func TestPermitMonthly(t *testing.T) {
	h := filterHarness(t)
	for _, filters := range []url.Values{
		{},
		{"status": {"issued"}},
		{"permit_type": {"building,electrical"}, "min_valuation": {"5000"}},
		{"q": {"permit f0"}},
		{"near": {"47.6,-122.34"}, "radius_m": {"1500"}},
	} {
		q := url.Values{"geo_id": {geo98101}, "from_date": {"2023-12-10"}, "to_date": {"2024-05-20"}}
		for k, v := range filters {
			q[k] = v
		}
		r := h.Get("/v1/permits/stats/monthly?" + q.Encode())
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", q.Encode(), r.Status, r.Body)
		}
		var m monthlyBody
		r.JSON(t, &m)
		if len(m.Months) != 6 || m.Months[0].Month != "2023-12" || m.Months[5].Month != "2024-05" {
			t.Fatalf("months: %+v", m.Months)
		}
		sq := url.Values{"geo_id": {geo98101}, "from_date": {"2023-12-10"}, "to_date": {"2024-05-20"}, "limit": {"9"}}
		for k, v := range filters {
			sq[k] = v
		}
		count := searchMonths(t, h, sq)
		total := 0
		for _, b := range m.Months {
			total += b.PermitCount
			if b.PermitCount != count[b.Month] {
				t.Errorf("%v month %s: %d, search pages %d", filters, b.Month, b.PermitCount, count[b.Month])
			}
			if b.PermitCount == 0 && (b.TotalValuation != 0 || b.MedianValuation != nil) {
				t.Errorf("empty month %+v", b)
			}
		}
		if total == 0 && len(filters) == 0 {
			t.Errorf("the unfiltered series is empty")
		}
	}
	// defaults: 24 months ending at today (2026-01-15 in the harness)
	r := h.Get("/v1/permits/stats/monthly?geo_id=" + geo98101)
	var m monthlyBody
	r.JSON(t, &m)
	if r.Status != http.StatusOK || len(m.Months) != 24 || m.FromDate != "2024-02-01" || m.ToDate != "2026-01-15" {
		t.Errorf("default window: %d %s .. %s, %d months", r.Status, m.FromDate, m.ToDate, len(m.Months))
	}
	for _, tc := range []struct{ query, param string }{
		{"geo_id=" + geo98101 + "&from_date=2010-01-01&to_date=2020-01-31", "from_date"},
		{"geo_id=" + geo98101 + "&from_date=2024-05-01&to_date=2024-01-01", "from_date"},
		{"geo_id=" + geo98101 + "&status=bogus", "status"},
		{"geo_id=" + geo98101 + "&sort=valuation_desc", "sort"},
		{"geo_id=" + geo98101 + "&limit=5", "limit"},
		{"from_date=2024-01-01", "geo_id"},
	} {
		r := h.Get("/v1/permits/stats/monthly?" + tc.query)
		if !namesParam(r, tc.param) {
			t.Errorf("%s: %d %s", tc.query, r.Status, r.Body)
		}
	}
	if r := h.Get("/v1/permits/stats/monthly?geo_id=gnosuchgeo000000"); r.Status != http.StatusNotFound {
		t.Errorf("unknown geo: %d %s", r.Status, r.Body)
	}
}

// searchMonths pages /v1/permits/search with q (its limit the page size)
// to the end and counts the permits by issue month (YYYY-MM). More than
// 1000 pages fails the test.
func searchMonths(t *testing.T, h *apitest.Harness, q url.Values) map[string]int {
	t.Helper()
	q = maps.Clone(q)
	count := map[string]int{}
	for pages := 0; ; pages++ {
		if pages == 1000 {
			t.Fatalf("%s: more than %d pages", q.Encode(), pages)
		}
		r := h.Get("/v1/permits/search?" + q.Encode())
		if r.Status != http.StatusOK {
			t.Fatalf("search %s: %d %s", q.Encode(), r.Status, r.Body)
		}
		var p struct {
			Permits []struct {
				IssueDate string `json:"issue_date"`
			} `json:"permits"`
			NextCursor *string `json:"next_cursor"`
		}
		r.JSON(t, &p)
		for _, x := range p.Permits {
			count[x.IssueDate[:7]]++
		}
		if p.NextCursor == nil {
			return count
		}
		q.Set("cursor", *p.NextCursor)
	}
}

// TestPermitMonthlyWindowFromYearZero: a to_date in year 0000 or 0001
// has its default window start at 0000-01-01, not in a negative year
// (which answered 500: FuzzQuery).
func TestPermitMonthlyWindowFromYearZero(t *testing.T) {
	h := filterHarness(t)
	for _, c := range []struct {
		to, from string
		months   int
	}{
		{"0000-01-01", "0000-01-01", 1},
		{"0001-06-15", "0000-01-01", 18},
		{"0001-12-31", "0000-01-01", 24},
		{"0002-01-01", "0000-02-01", 24},
	} {
		r := h.Get("/v1/permits/stats/monthly?" + url.Values{"geo_id": {geo98101}, "to_date": {c.to}}.Encode())
		if r.Status != http.StatusOK {
			t.Fatalf("to_date %s: %d %s", c.to, r.Status, r.Body)
		}
		var m monthlyBody
		r.JSON(t, &m)
		if m.FromDate != c.from || m.ToDate != c.to || len(m.Months) != c.months || m.Months[0].Month != c.from[:7] {
			t.Errorf("to_date %s: from %s to %s, %d months from %v; want from %s, %d months", c.to, m.FromDate, m.ToDate, len(m.Months), m.Months[0].Month, c.from, c.months)
		}
	}
}
