package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// every business route, with a valid-looking request.
var businessRoutes = []string{
	"/v1/locations/resolve?query=Seattle",
	"/v1/locations/gabc",
	"/v1/permits/search?geo_id=gabc",
	"/v1/search/property?address=600+University+St",
	"/v1/property/prop_0123456789abcdef0123456789abcdef/permits",
	"/v1/signals/catalog",
	"/v1/signals/geo/location/gabc",
	"/v1/signals/geo/search",
	"/v1/signals/permit/leads?geo_id=gabc",
	"/v1/signals/permit/stats?geo_id=gabc",
}

type gatewayError struct {
	Message string `json:"message"`
}

type stdError struct {
	Error struct {
		Code      string  `json:"code"`
		Message   string  `json:"message"`
		RequestID *string `json:"request_id"`
	} `json:"error"`
}

// namesParam reports whether r is the spec's validation error (422,
// VALIDATION_ERROR) whose message names param (quoted, as the API
// quotes it).
func namesParam(r apitest.Response, param string) bool {
	var e stdError
	if r.Status != http.StatusUnprocessableEntity || json.Unmarshal(r.Body, &e) != nil {
		return false
	}
	return e.Error.Code == "VALIDATION_ERROR" && strings.Contains(e.Error.Message, `"`+param+`"`)
}

func TestEveryBusinessRouteRequiresAKey(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	for _, path := range businessRoutes {
		for name, hdr := range map[string]http.Header{
			"missing": {},
			"empty":   {"X-Api-Key": {""}},
			"wrong":   {"X-Api-Key": {"not-a-key"}},
			"prefix":  {"X-Api-Key": {apitest.Key[:len(apitest.Key)-1]}},
		} {
			t.Run(name+" "+path, func(t *testing.T) {
				r := h.Do(path, hdr)
				if r.Status != http.StatusForbidden {
					t.Fatalf("status %d, want 403: %s", r.Status, r.Body)
				}
				var g gatewayError
				r.JSON(t, &g)
				if g.Message == "" {
					t.Fatalf("403 body lacks message: %s", r.Body)
				}
			})
		}
	}
}

func TestPublicRoutesNeedNoKey(t *testing.T) {
	h := apitest.New(t, apitest.Params{Server: api.Params{OpenAPI: []byte(`{"openapi":"3.0.3"}`)}})
	for _, path := range []string{"/v1/health/live", "/v1/openapi.json"} {
		if r := h.Do(path, nil); r.Status != http.StatusOK {
			t.Fatalf("%s: status %d", path, r.Status)
		}
	}
	var live map[string]string
	h.Do("/v1/health/live", nil).JSON(t, &live)
	if live["status"] != "ok" {
		t.Fatalf("live body %v", live)
	}
}

func TestReadiness(t *testing.T) {
	ready := false
	h := apitest.New(t, apitest.Params{Server: api.Params{Checks: []api.ReadinessCheck{
		func(context.Context) api.Check {
			return api.Check{Name: "indexer", OK: ready, Detail: map[string]any{"lag": 3}}
		},
	}}})
	r := h.Do("/v1/health/ready", nil)
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("not ready: status %d", r.Status)
	}
	var body struct {
		Status string                    `json:"status"`
		Checks map[string]map[string]any `json:"checks"`
		Clock  map[string]string         `json:"clock"`
	}
	r.JSON(t, &body)
	if body.Status != "not_ready" || body.Checks["indexer"]["status"] != "not_ready" || body.Checks["indexer"]["lag"] != float64(3) {
		t.Fatalf("body %s", r.Body)
	}
	if body.Clock["today"] != "2026-01-15" {
		t.Fatalf("clock %v", body.Clock)
	}
	ready = true
	if r := h.Do("/v1/health/ready", nil); r.Status != http.StatusOK {
		t.Fatalf("ready: status %d", r.Status)
	}
}

func seattle() events.Envelope {
	return apitest.Location("city", "1840021117", events.Location{
		Name: "Seattle", DisplayName: "Seattle, WA", FullAddress: "Seattle, King County, WA",
		State: "WA", StateName: "Washington", County: "King County", City: "Seattle",
		Jurisdiction: "City of Seattle", Lat: 47.6211, Lon: -122.3244, Population: 3530752, Incorporated: true,
	}, 1)
}

func TestLocationDetail(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	env := seattle()
	h.Publish(env)
	r := h.Get("/v1/locations/" + env.EntityID)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var got map[string]any
	r.JSON(t, &got)
	want := map[string]any{
		"geo_id": env.EntityID, "geo_type": "city", "display_name": "Seattle, WA",
		"full_address": "Seattle, King County, WA", "state": "WA", "county": "King County",
		"city": "Seattle", "zipcode": nil, "jurisdiction": "City of Seattle",
		"lat": 47.6211, "lon": -122.3244, "permit_count": float64(0), "latest_permit_date": nil,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fields %v, want exactly %d", got, len(want))
	}
}

func TestNotFoundCarriesRequestID(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	r := h.Do("/v1/locations/gunknown", http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"trace-42"}})
	if r.Status != http.StatusNotFound {
		t.Fatalf("status %d", r.Status)
	}
	var e stdError
	r.JSON(t, &e)
	if e.Error.Code != "NOT_FOUND" || e.Error.RequestID == nil || *e.Error.RequestID != "trace-42" || r.Header.Get("X-Request-ID") != "trace-42" {
		t.Fatalf("body %s header %q", r.Body, r.Header.Get("X-Request-ID"))
	}
}

func TestRequestIDIsRegeneratedWhenUnsafe(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	r := h.Do("/v1/locations/gunknown", http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"bad id <script>"}})
	id := r.Header.Get("X-Request-ID")
	if id == "" || strings.ContainsAny(id, " <>") {
		t.Fatalf("request id %q", id)
	}
	var e stdError
	r.JSON(t, &e)
	if *e.Error.RequestID != id {
		t.Fatalf("body request_id %q != header %q", *e.Error.RequestID, id)
	}
}

func TestResolveValidation(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	long := strings.Repeat("a", 201)
	cases := map[string]struct{ query, param string }{
		"201 characters":    {"query=" + long, "query"},
		"201 via alias q":   {"q=" + long, "q"},
		"missing text":      {"state=WA", "query"},
		"blank text":        {"query=%20%20", "query"},
		"limit 0":           {"query=Seattle&limit=0", "limit"},
		"limit 21":          {"query=Seattle&limit=21", "limit"},
		"limit not integer": {"query=Seattle&limit=ten", "limit"},
		"state W1":          {"query=Seattle&state=W1", "state"},
		"state three":       {"query=Seattle&state=WAS", "state"},
		"geo_type planet":   {"query=Seattle&geo_type=planet", "geo_type"},
		"scope planet":      {"query=Seattle&scope=planet", "scope"},
		"query twice":       {"query=Seattle&query=Tacoma", "query"},
		"limit twice":       {"query=Seattle&limit=1&limit=2", "limit"},
		"control character": {"query=Sea%00ttle", "query"},
		"invalid UTF-8":     {"query=%ff%fe", "query"},
		"focus_lat alone":   {"query=Seattle&focus_lat=47.6", "focus_lon"},
		"focus_lon alone":   {"query=Seattle&focus_lon=-122.3", "focus_lat"},
		"focus_lat 91":      {"query=Seattle&focus_lat=91&focus_lon=0", "focus_lat"},
		"focus_lon -181":    {"query=Seattle&focus_lat=0&focus_lon=-181", "focus_lon"},
		"focus_lon NaN":     {"query=Seattle&focus_lat=0&focus_lon=NaN", "focus_lon"},
		"focus_lat empty":   {"query=Seattle&focus_lat=&focus_lon=1", "focus_lat"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := h.Get("/v1/locations/resolve?" + tc.query)
			if !namesParam(r, tc.param) {
				t.Fatalf("status %d: %s does not name %q", r.Status, r.Body, tc.param)
			}
		})
	}
}

func TestLocationIDValidation(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	for _, id := range []string{strings.Repeat("g", 129), url.PathEscape("g'; drop"), url.PathEscape("ü")} {
		r := h.Get("/v1/locations/" + id)
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%q: status %d", id, r.Status)
		}
	}
}

type failingReader struct {
	readmodel.Reader
	err   error
	panic bool
}

func (f failingReader) Location(context.Context, readmodel.GeoRef) (readmodel.Location, error) {
	if f.panic {
		panic("boom")
	}
	return readmodel.Location{}, f.err
}

func TestInternalErrorsKeepTheirDetailInTheLog(t *testing.T) {
	for name, tc := range map[string]struct {
		reader readmodel.Reader
		status int
		code   string
	}{
		"unavailable": {failingReader{Reader: memory.New(memory.Params{}), err: readmodel.ErrUnavailable}, http.StatusServiceUnavailable, "BACKEND_UNAVAILABLE"},
		"unknown":     {failingReader{Reader: memory.New(memory.Params{}), err: errors.New("secret detail")}, http.StatusInternalServerError, "INTERNAL"},
		"panic":       {failingReader{Reader: memory.New(memory.Params{}), panic: true}, http.StatusInternalServerError, "INTERNAL"},
	} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			h := apitest.New(t, apitest.Params{Server: api.Params{Reader: tc.reader, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}})
			r := h.Get("/v1/locations/gabc")
			if r.Status != tc.status {
				t.Fatalf("status %d", r.Status)
			}
			if tc.status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") == "" {
				t.Fatal("503 without Retry-After")
			}
			var e stdError
			r.JSON(t, &e)
			if e.Error.Code != tc.code || strings.Contains(string(r.Body), "secret detail") || strings.Contains(string(r.Body), "boom") {
				t.Fatalf("body %s", r.Body)
			}
			if !strings.Contains(logs.String(), "request_id") {
				t.Fatalf("error not logged: %s", logs.String())
			}
		})
	}
}

func TestAccessLogNeverHoldsTheKey(t *testing.T) {
	var logs bytes.Buffer
	h := apitest.New(t, apitest.Params{Server: api.Params{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}})
	h.Get("/v1/locations/gabc")
	h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {"wrong-key-value"}})
	out := logs.String()
	if strings.Contains(out, apitest.Key) || strings.Contains(out, "wrong-key-value") {
		t.Fatalf("key in logs: %s", out)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &line); err != nil || line["msg"] != "request" || line["key_id"] == nil {
		t.Fatalf("access log line %q", out)
	}
}

// TestUnknownRouteIs404 includes paths a route would match without their
// trailing slash or empty segment: 404 in the error body, not Gin's
// redirect (a 301 with an HTML body, found by FuzzQuery).
func TestUnknownRouteIs404(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	for _, path := range []string{
		"/v1/locations/gabc/extra", "/v1/permits/search/", "/v1/permits/search/?geo_id=g1",
		"/v1/signals/geo/location//", "/v1/locations//", "/v1//permits/search", "/v1/health/live/",
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(method, path, nil)
			req.Header.Set("X-API-Key", apitest.Key)
			h.Handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusNotFound || rec.Header().Get("Location") != "" {
				t.Fatalf("%s %s: status %d, Location %q, body %s", method, path, rec.Code, rec.Header().Get("Location"), rec.Body)
			}
			if method == http.MethodHead {
				continue
			}
			var e stdError
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != "NOT_FOUND" {
				t.Fatalf("%s %s: body %s", method, path, rec.Body)
			}
		}
	}
	for _, path := range []string{"/docs/", "/explore/"} {
		rec := httptest.NewRecorder()
		h.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%s: status %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
}
