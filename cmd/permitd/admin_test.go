package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestAdminListener: /metrics moved from the public port to the admin
// listener, which also answers the health endpoints; the HTTP series are
// per route pattern, never per path.
func TestAdminListener(t *testing.T) {
	base, key, admin := startServeAdmin(t, "-data", "none")
	for _, p := range []string{"/v1/locations/g1", "/v1/locations/g2", "/no/such/path"} {
		get(t, base+p, key)
	}
	if code, _ := get(t, base+"/metrics", ""); code != http.StatusNotFound {
		t.Fatalf("public /metrics: %d, want 404", code)
	}
	if code, _ := get(t, admin+"/v1/health/live", ""); code != http.StatusOK {
		t.Fatalf("admin live: %d", code)
	}
	if code, body := get(t, admin+"/v1/health/ready", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, `"read_model"`) {
		t.Fatalf("admin ready on an empty read model: %d %s", code, body)
	}
	if code, _ := get(t, admin+"/debug/pprof/", ""); code != http.StatusNotFound {
		t.Fatalf("pprof without -pprof: %d, want 404", code)
	}
	code, body := get(t, admin+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("admin /metrics: %d", code)
	}
	for _, want := range []string{
		`permitd_http_requests_total{code="404",method="GET",route="/v1/locations/:geo_id"} 2`,
		`permitd_http_requests_total{code="404",method="GET",route="unmatched"} 2`, // /no/such/path, public /metrics
		`permitd_http_request_duration_seconds_count{route="/v1/locations/:geo_id"} 2`,
		"permitd_http_requests_in_flight 0",
		`permitd_build_info{goversion="go`,
		"permitd_quota_fallback_active",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("admin /metrics lacks %s in\n%s", want, body)
		}
	}
	if strings.Contains(body, "/v1/locations/g1") || strings.Contains(body, "/no/such/path") {
		t.Error("a request path leaked into a label")
	}
	if strings.Contains(body, `route="/v1/health`) {
		t.Error("admin probes are counted as API traffic")
	}
}

func TestAdminPprof(t *testing.T) {
	_, _, admin := startServeAdmin(t, "-data", "none", "-pprof")
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/cmdline"} {
		if code, _ := get(t, admin+p, ""); code != http.StatusOK {
			t.Errorf("%s: %d", p, code)
		}
	}
}
