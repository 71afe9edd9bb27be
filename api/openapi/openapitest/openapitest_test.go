package openapitest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/permitd/permitd/api/openapi"
	"github.com/permitd/permitd/api/openapi/openapitest"
)

// fakeTB records failures instead of failing the real test.
type fakeTB struct {
	testing.TB
	errors []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func okHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Request-ID", "req-1")
	h.Set("ETag", `"0123456789abcdef"`)
	h.Set("Cache-Control", "private, no-cache")
	return h
}

func rateLimited() http.Header {
	h := okHeader()
	h.Set("Retry-After", "30")
	h.Set("RateLimit-Limit", "100")
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", "30")
	return h
}

const candidate = `{"geo_id":"g1","geo_type":"city","display_name":"Seattle, WA","score":0.9,"confidence":0.8,
"match_method":"exact","decision":"accept","reasons":["exact_name"],"state":"WA","county":"King",
"city":"Seattle","zipcode":null,"jurisdiction":"Seattle","lat":47.6,"lon":null}`

const lead = `{"lead_id":"l1","signal_key":"framing_nowcast_early","event_date_used":"2024-05-01",
"signal_basis":"observed_event","confidence":0.8,"reason_codes":["PERMIT_ISSUED"],"freshness_lag_days":3,
"permit_number":"P-1","jurisdiction":null,"location":{"city":"Seattle","city_norm":"seattle"},"maps_url":null}`

const permit = `{"permit_id":"p1","permit_type":"building","work_type":null,"status":null,"issue_date":"2024-05-01",
"completion_date":null,"contractor":null,"valuation":null,"raw_description":null,"source":"seattle",
"location":{"full_address":"1 Main St","city":"Seattle","state":"WA","zipcode":"98101","county":null,"jurisdiction":null},
"lat":null,"lon":null,"distance_m":null,"geo_match":{"geo_id":"g1","geo_type":"city","confidence":1}}`

func leadsBody(extra string) string {
	return `{"geo_id":"g1","geo_type":"city","scope":"permit","signal_keys":["framing_nowcast_early"],
"max_freshness_days":60,"count":1,"next_cursor":null,"group_by":"none","leads":[` + lead + `]` + extra + `}`
}

func TestValidate(t *testing.T) {
	ready := `{"status":"not_ready","checks":{"readmodel":{"status":"down","error":"timeout"}},
"clock":{"today":"2024-05-04","source":"fixed"}}`
	tests := []struct {
		name   string
		path   string
		status int
		header http.Header
		body   string
		errHas string // "" means the response is valid
	}{
		{name: "live ok", path: "/v1/health/live", status: 200, header: okHeader(), body: `{"status":"ok"}`},
		{name: "ready 503", path: "/v1/health/ready", status: 503, header: okHeader(), body: ready},
		{name: "resolve ok", path: "/v1/locations/resolve?q=seattle", status: 200, header: okHeader(),
			body: `{"query":"seattle","count":1,"candidates":[` + candidate + `]}`},
		{name: "resolve empty", path: "/v1/locations/resolve?q=nowhere", status: 200, header: okHeader(),
			body: `{"query":"nowhere","count":0,"candidates":[]}`},
		{name: "location 404", path: "/v1/locations/g404", status: 404, header: okHeader(),
			body: `{"error":{"code":"NOT_FOUND","message":"no location g404","request_id":"req-1"}}`},
		{name: "permits ok", path: "/v1/permits/search?geo_id=g1", status: 200, header: okHeader(),
			body: `{"geo_id":"g1","count":1,"permits":[` + permit + `],"next_cursor":"abc"}`},
		{name: "property permits ok", path: "/v1/property/prop_0123456789abcdef0123456789abcdef/permits", status: 200,
			header: okHeader(), body: `{"property_id":"prop_0123456789abcdef0123456789abcdef","count":0,"permits":[],"next_cursor":null}`},
		{name: "leads ok", path: "/v1/signals/permit/leads?geo_id=g1", status: 200, header: okHeader(), body: leadsBody("")},
		{name: "leads null geo_type", path: "/v1/signals/permit/leads?geo_id=g1", status: 200, header: okHeader(),
			body: strings.Replace(leadsBody(""), `"geo_type":"city"`, `"geo_type":null`, 1)},
		{name: "forbidden with extra gateway fields", path: "/v1/signals/catalog", status: 403, header: okHeader(),
			body: `{"message":"Forbidden","hint":"send X-API-Key"}`},
		{name: "429 with headers", path: "/v1/signals/geo/search", status: 429, header: rateLimited(),
			body: `{"message":"Too Many Requests"}`},
		{name: "422", path: "/v1/signals/geo/search?limit=0", status: 422, header: okHeader(),
			body: `{"error":{"code":"VALIDATION_ERROR","message":"limit: must be 1..100","request_id":"req-1"}}`},

		{name: "undocumented status", path: "/v1/health/live", status: 418, header: okHeader(),
			body: `{"status":"ok"}`, errHas: "status is not supported"},
		{name: "404 where nothing can be unknown", path: "/v1/signals/catalog", status: 404, header: okHeader(),
			body: `{"error":{"code":"NOT_FOUND","message":"x"}}`, errHas: "status is not supported"},
		{name: "unknown route", path: "/v1/nope", status: 200, header: okHeader(), body: `{}`,
			errHas: "matches no operation"},
		{name: "missing X-Request-ID", path: "/v1/health/live", status: 200,
			header: http.Header{"Content-Type": {"application/json"}}, body: `{"status":"ok"}`, errHas: "X-Request-ID"},
		{name: "wrong content type", path: "/v1/health/live", status: 200,
			header: http.Header{"Content-Type": {"text/plain"}, "X-Request-Id": {"r"}}, body: `{"status":"ok"}`,
			errHas: "Content-Type"},
		{name: "wrong enum value", path: "/v1/health/live", status: 200, header: okHeader(),
			body: `{"status":"fine"}`, errHas: "status"},
		{name: "missing required field", path: "/v1/locations/resolve?q=seattle", status: 200, header: okHeader(),
			body:   `{"query":"seattle","count":1,"candidates":[` + strings.Replace(candidate, `"jurisdiction":"Seattle"`, `"jx":1`, 1) + `]}`,
			errHas: "jurisdiction"},
		{name: "wrong type", path: "/v1/locations/resolve?q=seattle", status: 200, header: okHeader(),
			body: `{"query":"seattle","count":"1","candidates":[]}`, errHas: "count"},
		{name: "out of range", path: "/v1/locations/resolve?q=seattle", status: 200, header: okHeader(),
			body:   `{"query":"seattle","count":1,"candidates":[` + strings.Replace(candidate, `"score":0.9`, `"score":1.5`, 1) + `]}`,
			errHas: "score"},
		{name: "null where not nullable", path: "/v1/permits/search?geo_id=g1", status: 200, header: okHeader(),
			body:   `{"geo_id":"g1","count":1,"permits":[` + strings.Replace(permit, `"source":"seattle"`, `"source":null`, 1) + `],"next_cursor":null}`,
			errHas: "source"},
		{name: "malformed date", path: "/v1/permits/search?geo_id=g1", status: 200, header: okHeader(),
			body:   `{"geo_id":"g1","count":1,"permits":[` + strings.Replace(permit, `"2024-05-01"`, `"2024-13-40"`, 1) + `],"next_cursor":null}`,
			errHas: "issue_date"},
		{name: "extra property on leads response", path: "/v1/signals/permit/leads?geo_id=g1", status: 200,
			header: okHeader(), body: leadsBody(`,"total":5`), errHas: "total"},
		{name: "extra property on lead", path: "/v1/signals/permit/leads?geo_id=g1", status: 200, header: okHeader(),
			body: strings.Replace(leadsBody(""), `"maps_url":null`, `"maps_url":null,"score":1`, 1), errHas: "score"},
		{name: "property geo_type on leads", path: "/v1/signals/permit/leads?geo_id=g1", status: 200, header: okHeader(),
			body: strings.Replace(leadsBody(""), `"geo_type":"city"`, `"geo_type":"property"`, 1), errHas: "geo_type"},
		{name: "bad property_id in body", path: "/v1/property/prop_0123456789abcdef0123456789abcdef/permits", status: 200,
			header: okHeader(), body: `{"property_id":"p1","count":0,"permits":[],"next_cursor":null}`, errHas: "property_id"},
		{name: "429 without Retry-After", path: "/v1/signals/geo/search", status: 429, header: okHeader(),
			body: `{"message":"Too Many Requests"}`, errHas: "missing"},
		{name: "gateway shape on 404", path: "/v1/locations/g404", status: 404, header: okHeader(),
			body: `{"message":"not found"}`, errHas: "error"},
		{name: "unknown error code", path: "/v1/locations/g404", status: 404, header: okHeader(),
			body: `{"error":{"code":"MISSING","message":"x"}}`, errHas: "code"},
		{name: "empty body", path: "/v1/health/live", status: 200, header: okHeader(), body: ``, errHas: "body"},
	}
	v := openapitest.New(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			err := v.Validate(req, tc.status, tc.header, []byte(tc.body))
			switch {
			case tc.errHas == "" && err != nil:
				t.Errorf("valid response rejected: %v", err)
			case tc.errHas != "" && err == nil:
				t.Errorf("broken response accepted, want an error mentioning %q", tc.errHas)
			case tc.errHas != "" && !strings.Contains(err.Error(), tc.errHas):
				t.Errorf("error does not mention %q: %v", tc.errHas, err)
			}
		})
	}
}

func TestCheckFailsTheTest(t *testing.T) {
	v := openapitest.New(t)
	req := httptest.NewRequest(http.MethodGet, "/v1/health/live", nil)

	good := &fakeTB{TB: t}
	v.Check(good, req, http.StatusOK, okHeader(), []byte(`{"status":"ok"}`))
	if len(good.errors) != 0 {
		t.Errorf("valid response failed the test: %v", good.errors)
	}

	bad := &fakeTB{TB: t}
	v.Check(bad, req, http.StatusOK, okHeader(), []byte(`{"state":"ok"}`))
	if len(bad.errors) != 1 {
		t.Fatalf("broken response: %d failures, want 1", len(bad.errors))
	}
	if !strings.Contains(bad.errors[0], `{"state":"ok"}`) {
		t.Errorf("failure does not show the body: %s", bad.errors[0])
	}
}

func TestServe(t *testing.T) {
	spec, err := openapi.JSON()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-ID", "generated")
		_, _ = w.Write(spec)
	})
	mux.HandleFunc("GET /v1/health/live", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`)) // forgets X-Request-ID
	})
	v := openapitest.New(t)

	good := &fakeTB{TB: t}
	rec := v.Serve(good, mux, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	if rec.Code != http.StatusOK || len(good.errors) != 0 {
		t.Errorf("openapi.json: status %d, failures %v", rec.Code, good.errors)
	}

	bad := &fakeTB{TB: t}
	v.Serve(bad, mux, httptest.NewRequest(http.MethodGet, "/v1/health/live", nil))
	if len(bad.errors) != 1 || !strings.Contains(bad.errors[0], "X-Request-ID") {
		t.Errorf("missing X-Request-ID: failures %v, want one naming the header", bad.errors)
	}
}

// A literal path must win over a templated sibling, and path parameters
// must be matched, or responses would be checked against the wrong schema.
func TestRouting(t *testing.T) {
	v := openapitest.New(t)
	resolve := `{"query":"x","count":0,"candidates":[]}`
	if err := v.Validate(httptest.NewRequest(http.MethodGet, "/v1/locations/resolve?query=x", nil),
		200, okHeader(), []byte(resolve)); err != nil {
		t.Errorf("/v1/locations/resolve not routed to resolveLocation: %v", err)
	}
	if err := v.Validate(httptest.NewRequest(http.MethodGet, "/v1/locations/g1", nil),
		200, okHeader(), []byte(resolve)); err == nil {
		t.Errorf("/v1/locations/g1 accepted a resolve body; want the location detail schema")
	}
	if err := v.Validate(httptest.NewRequest(http.MethodPost, "/v1/health/live", nil),
		200, okHeader(), []byte(`{"status":"ok"}`)); err == nil {
		t.Errorf("POST matched a GET-only operation")
	}
	// Absolute URLs, as a client would build them, route the same way.
	if err := v.Validate(httptest.NewRequest(http.MethodGet, "http://permitd.example:8080/v1/health/live", nil),
		200, okHeader(), []byte(`{"status":"ok"}`)); err != nil {
		t.Errorf("absolute URL: %v", err)
	}
}
