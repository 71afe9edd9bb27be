package openapi_test

import (
	"slices"
	"testing"

	"github.com/permitd/permitd/api/openapi"
)

// Every field the spec lists is always present in a response: these
// schemas require all of their properties.
var allRequired = []string{
	"ResolveResponse", "LocationCandidate", "LocationDetail",
	"PermitsResponse", "PermitRecord", "PermitLocation", "GeoMatch",
	"PropertyPermitsResponse", "PropertyPermitRecord", "PropertyMatch",
	"PermitSignalLead", "LeadGroup", "PermitStatsResponse", "ValueCount",
	"GeoSignal", "GeoLocationSignalsResponse", "GeoSearchResponse",
	"CatalogEntry", "CatalogResponse", "LiveResponse", "ReadyResponse",
}

// The spec's "no extra properties allowed" objects.
var closed = []string{"PermitSignalLead", "LeadLocation", "LeadGroup", "PermitLeadsResponse"}

func TestSchemasRequireEveryField(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range allRequired {
		ref := doc.Components.Schemas[name]
		if ref == nil {
			t.Errorf("schema %s is missing", name)
			continue
		}
		s := ref.Value
		for prop := range s.Properties {
			if !slices.Contains(s.Required, prop) {
				t.Errorf("%s.%s is not required", name, prop)
			}
		}
	}
}

func TestClosedSchemas(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range closed {
		ref := doc.Components.Schemas[name]
		if ref == nil {
			t.Errorf("schema %s is missing", name)
			continue
		}
		if ap := ref.Value.AdditionalProperties.Has; ap == nil || *ap {
			t.Errorf("%s allows additional properties", name)
		}
	}
	leads := doc.Components.Schemas["PermitLeadsResponse"].Value
	want := []string{"geo_id", "geo_type", "scope", "signal_keys", "max_freshness_days", "count", "next_cursor"}
	if got := slices.Sorted(slices.Values(leads.Required)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("PermitLeadsResponse.required = %v, want %v", leads.Required, want)
	}
	if n := len(doc.Components.Schemas["LeadLocation"].Value.Required); n != 0 {
		t.Errorf("LeadLocation requires %d fields; the spec makes all optional", n)
	}
}
