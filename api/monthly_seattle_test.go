package api_test

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
)

// TestPermitMonthlySeattle: on the bundled real Seattle permits, random
// filter sets give monthly counts equal to what paging the search with
// the same filters yields.
func TestPermitMonthlySeattle(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: loads the bundled gazetteer and the real Seattle permits")
	}
	h := apitest.New(t, apitest.Params{})
	publishSeattle(t, h)
	seattle := events.GeoID("city", "1840021117")
	r := rand.New(rand.NewPCG(14, 14))
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	nonEmpty := 0
	for range 12 {
		f := url.Values{}
		if r.IntN(2) == 0 {
			f.Set("status", pick("permit closed", "COMPLETED", "issued,permit issued", "expired"))
		}
		if r.IntN(2) == 0 {
			f.Set("permit_type", pick("Construction", "demolition", "Building"))
		}
		if r.IntN(3) == 0 {
			f.Set("min_valuation", pick("10000", "250000", "1000000"))
		}
		if r.IntN(3) == 0 {
			f.Set("q", pick("new", "addition", "demolish", "apartment"))
		}
		if r.IntN(4) == 0 {
			f.Set("near", "47.6097,-122.3331")
			f.Set("radius_m", pick("1000", "5000"))
		}
		from, to := pick("2011-01-01", "2013-06-15", "2014-01-01"), pick("2014-12-31", "2016-03-31", "2019-12-31")
		q := url.Values{"geo_id": {seattle}, "from_date": {from}, "to_date": {to}}
		for k, v := range f {
			q[k] = v
		}
		resp := h.Get("/v1/permits/stats/monthly?" + q.Encode())
		if resp.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", q.Encode(), resp.Status, resp.Body)
		}
		var m monthlyBody
		resp.JSON(t, &m)
		q.Set("limit", "100")
		count := searchMonths(t, h, q)
		total := 0
		for _, b := range m.Months {
			total += b.PermitCount
			if b.PermitCount != count[b.Month] {
				t.Fatalf("%v month %s: series %d, search %d", f, b.Month, b.PermitCount, count[b.Month])
			}
		}
		if total > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 4 {
		t.Errorf("only %d of 12 random filter sets found permits", nonEmpty)
	}
}
