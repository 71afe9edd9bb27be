package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/openapi/openapitest"
)

// The indexer-only process answers readiness in the API's one shape
// (ReadyResponse), at /v1/health/ready as serve's admin port does and at
// the older /health/ready alike.
func TestIndexReadinessShape(t *testing.T) {
	v := openapitest.New(t)
	for _, ok := range []bool{true, false} {
		h := indexMux(prometheus.NewRegistry(), func(context.Context) api.Check {
			return api.Check{Name: "indexer", OK: ok, Detail: map[string]any{"lag": 7}}
		})
		wantStatus, wantState := http.StatusOK, "ready"
		if !ok {
			wantStatus, wantState = http.StatusServiceUnavailable, "not_ready"
		}
		var bodies []map[string]any
		for _, path := range []string{"/v1/health/ready", "/health/ready"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != wantStatus {
				t.Fatalf("%s with ok=%v: status %d, want %d", path, ok, rec.Code, wantStatus)
			}
			if path == "/v1/health/ready" {
				// The body and headers against the document, which
				// requires X-Request-ID of the admin answer too.
				v.Check(t, req, rec.Code, rec.Header(), rec.Body.Bytes())
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			ix, _ := body["checks"].(map[string]any)["indexer"].(map[string]any)
			if body["status"] != wantState || ix["lag"] != 7.0 {
				t.Fatalf("%s: body %v, want status %q and the indexer's lag", path, body, wantState)
			}
			delete(body, "clock")
			bodies = append(bodies, body)
		}
		if b0, b1 := bodies[0], bodies[1]; len(b0) != len(b1) || b0["status"] != b1["status"] {
			t.Fatalf("the two paths differ: %v and %v", b0, b1)
		}
	}
	rec := httptest.NewRecorder()
	indexMux(prometheus.NewRegistry(), nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health/live", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"ok"}` {
		t.Fatalf("/health/live: %d %q", rec.Code, rec.Body.String())
	}
}
