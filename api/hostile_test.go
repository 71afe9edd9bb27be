package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
	"github.com/permitd/permitd/test/conformance"
)

// hostileValues are inputs a careless or hostile client sends.
var hostileValues = []string{
	"", " ", "-1", "0", "101", "1e309", "NaN", "Inf", "-0", "0x10", "1.5", "99999999999999999999",
	"2024-13-40", "2024-02-30", "0000-00-00", "9999-12-31T00:00:00Z", "true", "yes", "null", "[]", "{}",
	"%00", "\x00", "\xff\xfe", "😀", "../../etc/passwd", "<script>", "' OR 1=1 --", strings.Repeat("x", 5000),
	"c1.", "c1.AAAA.BBBB", "asc,desc", "WA,OR", ",,,",
}

// endpoints lists every business route with its query parameters.
var endpoints = []struct {
	path   string
	params []string
	base   url.Values
}{
	{"/v1/locations/resolve", []string{"query", "q", "text", "address", "state", "geo_type", "scope", "limit", "focus_lat", "focus_lon"}, url.Values{"query": {"Seattle"}}},
	{"/v1/locations/" + conformance.Seattle, nil, nil},
	{"/v1/permits/search", []string{"geo_id", "order", "from_date", "to_date", "limit", "cursor", "permit_type", "work_type", "status", "min_valuation", "max_valuation", "contractor", "q", "sort", "near", "radius_m", "bbox"}, url.Values{"geo_id": {conformance.Zip98101}}},
	{"/v1/permits/stats/monthly", []string{"geo_id", "from_date", "to_date", "permit_type", "work_type", "status", "min_valuation", "max_valuation", "contractor", "q", "near", "radius_m", "bbox"}, url.Values{"geo_id": {conformance.Zip98101}}},
	{"/v1/permits/export", []string{"geo_id", "format", "from_date", "to_date", "permit_type", "status", "min_valuation", "q", "near", "radius_m", "bbox"}, url.Values{"geo_id": {conformance.Zip98101}}},
	{"/v1/search/property", []string{"address", "city", "state", "zipcode"}, url.Values{"address": {"600 University St"}}},
	{"/v1/property/" + conformance.PropUniv + "/permits", []string{"limit", "cursor"}, nil},
	{"/v1/signals/catalog", []string{"state", "signal_keys"}, nil},
	{"/v1/signals/geo/location/" + conformance.Seattle, []string{"signal_keys"}, nil},
	{"/v1/signals/geo/search", []string{"state", "signal_keys", "geo_type", "decision", "min_score", "limit", "cursor"}, nil},
	{"/v1/signals/permit/leads", []string{"geo_id", "signal_keys", "from_date", "to_date", "min_confidence", "max_freshness_days", "include_stale", "sort", "group_by", "limit", "cursor"}, url.Values{"geo_id": {conformance.WA}}},
	{"/v1/signals/permit/stats", []string{"geo_id", "signal_keys", "from_date", "to_date", "min_confidence", "max_freshness_days", "include_stale"}, url.Values{"geo_id": {conformance.WA}}},
}

// TestHostileInputNeverFails sends every hostile value in every parameter
// of every endpoint (alone and given twice): each answer is 200, 404 or a
// 422 naming the parameter, in the documented shape, never a 500.
func TestHostileInputNeverFails(t *testing.T) {
	h := apitest.New(t, apitest.Params{NewResolver: func() memory.Resolver { return resolve.New() }})
	h.Publish(conformance.LocationEvents(t)...)
	h.Publish(conformance.AllEvents(t)...)
	seen := map[int]int{}
	for _, ep := range endpoints {
		for _, param := range ep.params {
			for _, v := range hostileValues {
				for _, twice := range []bool{false, true} {
					q := url.Values{}
					for k, vs := range ep.base {
						q[k] = vs
					}
					q.Set(param, v)
					if twice {
						q.Add(param, v)
					}
					r := h.Get(ep.path + "?" + q.Encode())
					seen[r.Status]++
					switch r.Status {
					case http.StatusOK, http.StatusNotFound:
					case http.StatusUnprocessableEntity:
						var e stdError
						r.JSON(t, &e)
						if e.Error.Code != "VALIDATION_ERROR" || e.Error.Message == "" {
							t.Errorf("%s %s=%q: 422 body %s", ep.path, param, v, r.Body)
						}
					default:
						t.Errorf("%s %s=%q twice=%v: status %d: %.200s", ep.path, param, v, twice, r.Status, r.Body)
					}
				}
			}
		}
	}
	t.Logf("statuses: %v", seen)
	if seen[http.StatusOK] < 100 || seen[http.StatusUnprocessableEntity] < 1000 {
		t.Fatalf("the sweep did not exercise both paths: %v", seen)
	}
	// Hostile path segments.
	for _, seg := range hostileValues {
		for _, prefix := range []string{"/v1/locations/", "/v1/signals/geo/location/", "/v1/property/"} {
			path := prefix + url.PathEscape(seg)
			if prefix == "/v1/property/" {
				path += "/permits"
			}
			if seg == "" {
				continue
			}
			r := h.Get(path)
			if r.Status != http.StatusNotFound && r.Status != http.StatusUnprocessableEntity {
				t.Errorf("%s: status %d: %.200s", path, r.Status, r.Body)
			}
		}
	}
}
