package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
	"github.com/permitd/permitd/test/conformance"
)

// fixtureNow is the service clock of the fuzz harnesses: the conformance
// fixture's today, so that its leads are fresh.
var fixtureNow = time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)

// fuzzRoutes are the business routes FuzzQuery picks from; "{}" is where
// its path segment goes.
var fuzzRoutes = []string{
	"/v1/locations/resolve",
	"/v1/locations/{}",
	"/v1/permits/search",
	"/v1/permits/stats/monthly",
	"/v1/permits/export",
	"/v1/search/property",
	"/v1/property/{}/permits",
	"/v1/signals/catalog",
	"/v1/signals/geo/location/{}",
	"/v1/signals/geo/search",
	"/v1/signals/permit/leads",
	"/v1/signals/permit/stats",
}

// FuzzQuery sends any query string (and, where a route has one, any path
// segment) that an HTTP server would accept to a business route over the
// conformance data. TestHostileInputNeverFails tries one bad value at a
// time; here the values combine (two filters that contradict, a cursor
// with other parameters, a parameter given many times). On a documented
// operation every answer is 200, 404 or a 422 with the spec's error body
// (VALIDATION_ERROR and a message), never a 5xx or a panic, and is
// checked against the OpenAPI document (apitest); any other path (an
// empty segment, a trailing slash) is 404 NOT_FOUND. The seeds and the
// inputs in testdata/fuzz/FuzzQuery (what fuzzing found) run in make
// test.
//
//	go test -run '^$' -fuzz FuzzQuery -fuzztime 5m ./api/
func FuzzQuery(f *testing.F) {
	h := apitest.New(f, apitest.Params{NewResolver: func() memory.Resolver { return resolve.New() }, Now: fixtureNow})
	h.Publish(conformance.AllEvents(f)...)
	seeds := []struct {
		route      int
		seg, query string
	}{
		{0, "", "query=Seattle&limit=3&focus_lat=47.6&focus_lon=-122.3"},
		{0, "", "query=Spokane&state=WA&geo_type=city&scope=all&focus_lat=91"},
		{1, conformance.Seattle, ""},
		{1, "%00", ""},
		{2, "", "geo_id=" + conformance.Zip98101 + "&order=issue_date_desc&limit=2"},
		{2, "", "geo_id=" + conformance.Seattle + "&from_date=2025-01-01&to_date=2024-01-01&min_valuation=10&max_valuation=5"},
		{2, "", "near=47.6,-122.3&radius_m=500&bbox=-122.4,47.5,-122.2,47.7&sort=distance"},
		{2, "", "geo_id=" + conformance.WA + "&q=roof&contractor=x&status=issued&status=final&permit_type=a,b"},
		{2, "", "geo_id=" + conformance.WA + "&cursor=c1.AAAA.BBBB&order=valuation_desc"},
		{3, "", "geo_id=" + conformance.Zip98101 + "&from_date=2024-01-01&to_date=2026-01-01&q=%22deck"},
		{3, "", "near=0,0&radius_m=1e309"},
		{4, "", "geo_id=" + conformance.Zip98101 + "&format=csv&from_date=2024-02-30"},
		{5, "", "address=600+University+St&city=Seattle&state=WA&zipcode=98101"},
		{6, conformance.PropUniv, "limit=1&cursor="},
		{7, "", "state=WA&signal_keys=a,,b"},
		{8, conformance.Seattle, "signal_keys=" + strings.Repeat("k,", 50)},
		{9, "", "state=WA&geo_type=zip&decision=go&min_score=-1&limit=100"},
		{10, "", "geo_id=" + conformance.WA + "&group_by=geo&sort=confidence&include_stale=true&max_freshness_days=0"},
		{11, "", "geo_id=" + conformance.WA + "&signal_keys=x&min_confidence=1.5&include_stale=maybe"},
	}
	for _, s := range seeds {
		f.Add(uint8(s.route), s.seg, s.query)
	}
	// Real cursors, with their own query and with another.
	for _, c := range []struct {
		route int
		query string
	}{
		{2, "geo_id=" + conformance.WA + "&limit=3"},
		{6, "limit=1"},
		{9, "state=WA&limit=2"},
		{10, "geo_id=" + conformance.WA + "&include_stale=true&limit=3"},
	} {
		path := strings.Replace(fuzzRoutes[c.route], "{}", conformance.PropUniv, 1)
		var page struct {
			Next *string `json:"next_cursor"`
		}
		apitest.Response{Body: h.Get(path + "?" + c.query).Body}.JSON(f, &page)
		if page.Next == nil {
			f.Fatalf("%s?%s: no next page", path, c.query)
		}
		cur := "&cursor=" + url.QueryEscape(*page.Next)
		f.Add(uint8(c.route), conformance.PropUniv, c.query+cur)
		f.Add(uint8(c.route), conformance.PropUniv, c.query+"&order=asc&sort=confidence_desc"+cur)
	}
	f.Fuzz(func(t *testing.T, route uint8, seg, query string) {
		path := strings.Replace(fuzzRoutes[int(route)%len(fuzzRoutes)], "{}", seg, 1)
		target := path + "?" + query
		// What net/http's server would refuse before any handler runs
		// (a request line it cannot parse) is not this test's business.
		u, err := url.ParseRequestURI(target)
		if err != nil || strings.ContainsAny(target, " \r\n") || !strings.HasPrefix(u.Path, "/v1/") {
			t.Skip()
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL, req.RequestURI = u, target
		req.Header.Set("X-API-Key", apitest.Key)
		if !h.V.Documented(req) {
			// A path no operation has (an empty segment, a trailing
			// slash, a segment past the route's): 404 in the error body.
			rec := httptest.NewRecorder()
			h.Handler.ServeHTTP(rec, req)
			var e stdError
			if rec.Code != http.StatusNotFound || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code != "NOT_FOUND" {
				t.Errorf("%s: status %d: %.300s", target, rec.Code, rec.Body)
			}
			return
		}
		rec := h.V.Serve(t, h.Handler, req)
		switch rec.Code {
		case http.StatusOK, http.StatusNotFound:
		case http.StatusUnprocessableEntity:
			var e stdError
			apitest.Response{Body: rec.Body.Bytes()}.JSON(t, &e)
			if e.Error.Code != "VALIDATION_ERROR" || e.Error.Message == "" {
				t.Errorf("%s: 422 body %s", target, rec.Body)
			}
		default:
			t.Errorf("%s: status %d: %.300s", target, rec.Code, rec.Body)
		}
	})
}
