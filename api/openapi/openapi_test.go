package openapi_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/permitd/permitd/api/openapi"
)

func TestLoadValidates(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
	if doc.Info.Version != "1.0.0" {
		t.Errorf("info.version = %q, want 1.0.0", doc.Info.Version)
	}
	again, err := openapi.Load()
	if err != nil || again != doc {
		t.Errorf("Load is not cached: second call gave %p, %v; first %p", again, err, doc)
	}
}

func TestJSONRoundTrips(t *testing.T) {
	b, err := openapi.JSON()
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatalf("JSON is not JSON: %v", err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("reload JSON: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("reloaded JSON does not validate: %v", err)
	}
	orig, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := doc.Paths.Len(), orig.Paths.Len(); got != want {
		t.Errorf("JSON has %d paths, YAML %d", got, want)
	}

	// Each call hands out its own copy.
	b[0] = 'X'
	b2, err := openapi.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if b2[0] != '{' {
		t.Errorf("JSON shares its buffer with callers")
	}
}

// The spec's endpoints, each GET, and whether it needs the API key.
var endpoints = []struct {
	path   string
	secure bool
	codes  []string // documented status codes, in order
}{
	{"/v1/locations/resolve", true, []string{"200", "304", "403", "422", "429", "500", "503"}},
	{"/v1/locations/{geo_id}", true, []string{"200", "304", "403", "404", "422", "429", "500", "503"}},
	{"/v1/permits/search", true, []string{"200", "304", "403", "404", "422", "429", "500", "503"}},
	{"/v1/permits/stats/monthly", true, []string{"200", "304", "403", "404", "422", "429", "500", "503"}}, // issue 14
	{"/v1/permits/export", true, []string{"200", "403", "404", "422", "429", "500", "503"}},
	{"/v1/signals/catalog", true, []string{"200", "304", "403", "422", "429", "500", "503"}},
	{"/v1/signals/geo/location/{geo_id}", true, []string{"200", "304", "403", "404", "422", "429", "500", "503"}},
	{"/v1/signals/geo/search", true, []string{"200", "304", "403", "422", "429", "500", "503"}},
	{"/v1/signals/permit/leads", true, []string{"200", "304", "403", "404", "422", "429", "500", "503"}},
	{"/v1/signals/permit/stats", true, []string{"200", "304", "403", "404", "422", "429", "500", "503"}},
	{"/v1/property/{property_id}/permits", true, []string{"200", "304", "403", "404", "422", "429", "500", "503"}},
	{"/v1/search/property", true, []string{"200", "304", "403", "404", "422", "429", "500", "503"}},
	{"/v1/health/live", false, []string{"200", "422"}},
	{"/v1/health/ready", false, []string{"200", "422", "503"}},
	{"/v1/openapi.json", false, []string{"200", "422", "500"}},
}

func TestEveryEndpointIsDocumented(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, e := range endpoints {
		want[e.path] = true
		item := doc.Paths.Value(e.path)
		if item == nil {
			t.Errorf("path %s is missing", e.path)
			continue
		}
		if item.Get == nil {
			t.Errorf("path %s has no GET", e.path)
		}
		if ops := item.Operations(); len(ops) != 1 {
			t.Errorf("path %s has %d operations, want only GET", e.path, len(ops))
		}
	}
	for path := range doc.Paths.Map() {
		if !want[path] {
			t.Errorf("path %s is not in the spec", path)
		}
	}
}

func TestStatusCodesPerEndpoint(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range endpoints {
		t.Run(e.path, func(t *testing.T) {
			item := doc.Paths.Value(e.path)
			if item == nil || item.Get == nil {
				t.Fatalf("no GET %s", e.path)
			}
			var got []string
			for code := range item.Get.Responses.Map() {
				got = append(got, code)
			}
			slices.Sort(got)
			if !slices.Equal(got, e.codes) {
				t.Errorf("status codes = %v, want %v", got, e.codes)
			}
			if item.Get.Responses.Default() != nil {
				t.Errorf("has a default response; every status must be explicit")
			}
			for code, ref := range item.Get.Responses.Map() {
				h := ref.Value.Headers["X-Request-ID"]
				if h == nil || !h.Value.Required {
					t.Errorf("%s: X-Request-ID is not a required header", code)
				}
				if code == "429" {
					for _, name := range []string{"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
						if h := ref.Value.Headers[name]; h == nil || !h.Value.Required {
							t.Errorf("429: %s is not a required header", name)
						}
					}
				}
			}
		})
	}
}

func TestSecurity(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	scheme := doc.Components.SecuritySchemes["apiKey"]
	if scheme == nil {
		t.Fatal("no apiKey security scheme")
	}
	if s := scheme.Value; s.Type != "apiKey" || s.In != "header" || s.Name != "X-API-Key" {
		t.Errorf("apiKey scheme = %s in %s named %s, want apiKey in header named X-API-Key", s.Type, s.In, s.Name)
	}
	for _, e := range endpoints {
		op := doc.Paths.Value(e.path).Get
		effective := doc.Security
		if op.Security != nil {
			effective = *op.Security
		}
		if got := requiresKey(effective); got != e.secure {
			t.Errorf("%s: requires X-API-Key = %v, want %v", e.path, got, e.secure)
		}
		if !e.secure && len(effective) != 0 {
			t.Errorf("%s: public endpoint has security %v", e.path, effective)
		}
	}
}

// requiresKey reports whether every alternative of reqs includes apiKey
// (so no request passes without it).
func requiresKey(reqs openapi3.SecurityRequirements) bool {
	if len(reqs) == 0 {
		return false
	}
	for _, alt := range reqs {
		if _, ok := alt["apiKey"]; !ok {
			return false
		}
	}
	return true
}
