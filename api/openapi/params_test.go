package openapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/permitd/permitd/api/openapi"
)

// param is what the document must say about one parameter (decisions.md
// "Parameter names" and the spec's input tables).
type param struct {
	in       string
	required bool
	typ      string
	min, max *float64
	def      any
	enum     []any
	pattern  string
	format   string
}

func num(f float64) *float64 { return &f }

var scopes = []any{"property", "jurisdiction", "city", "zip", "county", "state"}
var nonPropertyScopes = []any{"jurisdiction", "city", "zip", "county", "state"}

var page = map[string]param{
	"limit":  {in: "query", typ: "integer", min: num(1), max: num(100), def: float64(25)},
	"cursor": {in: "query", typ: "string"},
}

var permitFilters = map[string]param{
	"geo_id":             {in: "query", required: true, typ: "string"},
	"signal_keys":        {in: "query", typ: "string"},
	"from_date":          {in: "query", typ: "string", format: "date"},
	"to_date":            {in: "query", typ: "string", format: "date"},
	"min_confidence":     {in: "query", typ: "number", min: num(0), max: num(1)},
	"max_freshness_days": {in: "query", typ: "integer", min: num(1), max: num(3650)},
	"include_stale":      {in: "query", typ: "boolean", def: false},
}

var permitSearchFilters = map[string]param{
	"permit_type":   {in: "query", typ: "string"},
	"work_type":     {in: "query", typ: "string"},
	"status":        {in: "query", typ: "string"},
	"min_valuation": {in: "query", typ: "number", min: num(0), max: num(1e12)},
	"max_valuation": {in: "query", typ: "number", min: num(0), max: num(1e12)},
	"contractor":    {in: "query", typ: "string"},
	"q":             {in: "query", typ: "string"},
	"sort":          {in: "query", typ: "string", enum: []any{"issue_date", "valuation_desc", "distance"}, def: "issue_date"},
	"near":          {in: "query", typ: "string"},
	"radius_m":      {in: "query", typ: "number", min: num(1), max: num(50000)},
	"bbox":          {in: "query", typ: "string"},
}

func merge(ms ...map[string]param) map[string]param {
	out := map[string]param{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var wantParams = map[string]map[string]param{
	"/v1/locations/resolve": {
		"query":     {in: "query", typ: "string"},
		"q":         {in: "query", typ: "string"},
		"text":      {in: "query", typ: "string"},
		"address":   {in: "query", typ: "string"},
		"state":     {in: "query", typ: "string", pattern: "^[A-Za-z]{2}$"},
		"geo_type":  {in: "query", typ: "string", enum: scopes},
		"scope":     {in: "query", typ: "string", enum: scopes},
		"limit":     {in: "query", typ: "integer", min: num(1), max: num(20), def: float64(10)},
		"focus_lat": {in: "query", typ: "number", min: num(-90), max: num(90)},
		"focus_lon": {in: "query", typ: "number", min: num(-180), max: num(180)},
	},
	"/v1/locations/{geo_id}": {
		"geo_id": {in: "path", required: true, typ: "string"},
	},
	"/v1/permits/search": merge(page, map[string]param{
		"geo_id":    {in: "query", typ: "string"},
		"order":     {in: "query", typ: "string", enum: []any{"asc", "desc"}, def: "desc"},
		"from_date": {in: "query", typ: "string", format: "date"},
		"to_date":   {in: "query", typ: "string", format: "date"},
	}, permitSearchFilters),
	"/v1/permits/stats/monthly": merge(withoutSort(permitSearchFilters), map[string]param{
		"geo_id":    {in: "query", required: true, typ: "string"},
		"from_date": {in: "query", typ: "string", format: "date"},
		"to_date":   {in: "query", typ: "string", format: "date"},
	}),
	"/v1/permits/export": merge(withoutSort(permitSearchFilters), map[string]param{
		"geo_id":    {in: "query", required: true, typ: "string"},
		"format":    {in: "query", typ: "string", enum: []any{"ndjson", "csv"}, def: "ndjson"},
		"from_date": {in: "query", typ: "string", format: "date"},
		"to_date":   {in: "query", typ: "string", format: "date"},
	}),
	"/v1/signals/catalog": {
		"state":       {in: "query", typ: "string", pattern: "^[A-Za-z]{2}$", def: "WA"},
		"signal_keys": {in: "query", typ: "string"},
	},
	"/v1/signals/geo/location/{geo_id}": {
		"geo_id":      {in: "path", required: true, typ: "string"},
		"signal_keys": {in: "query", typ: "string"},
	},
	"/v1/signals/geo/search": merge(page, map[string]param{
		"state":       {in: "query", typ: "string", pattern: "^[A-Za-z]{2}$", def: "WA"},
		"signal_keys": {in: "query", typ: "string"},
		"geo_type":    {in: "query", typ: "string", enum: nonPropertyScopes},
		"decision":    {in: "query", typ: "string", enum: []any{"positive", "neutral", "negative"}},
		"min_score":   {in: "query", typ: "number", min: num(0), max: num(1)},
	}),
	"/v1/signals/permit/leads": merge(page, permitFilters, map[string]param{
		"sort":     {in: "query", typ: "string", enum: []any{"event_date_desc", "confidence_desc"}, def: "event_date_desc"},
		"group_by": {in: "query", typ: "string", enum: []any{"none", "city", "zip"}, def: "none"},
	}),
	"/v1/signals/permit/stats": permitFilters,
	"/v1/property/{property_id}/permits": merge(page, map[string]param{
		"property_id": {in: "path", required: true, typ: "string", pattern: "^prop_[0-9a-f]{32}$"},
	}),
	"/v1/search/property": {
		"address": {in: "query", required: true, typ: "string"},
		"city":    {in: "query", typ: "string"},
		"state":   {in: "query", typ: "string", pattern: "^[A-Za-z]{2}$"},
		"zipcode": {in: "query", typ: "string"},
	},
	"/v1/health/live":  {},
	"/v1/health/ready": {},
	"/v1/openapi.json": {},
}

func TestParameters(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range wantParams {
		if !strings.HasPrefix(path, "/v1/health/") && path != "/v1/openapi.json" && path != "/v1/permits/export" { // an export streams: no ETag
			// every business GET is conditional (ETag, 304)
			want = merge(want, map[string]param{"If-None-Match": {in: "header", typ: "string"}})
		}
		t.Run(path, func(t *testing.T) {
			item := doc.Paths.Value(path)
			if item == nil || item.Get == nil {
				t.Fatalf("no GET %s", path)
			}
			params := append(openapi3.Parameters{}, item.Parameters...)
			params = append(params, item.Get.Parameters...)
			seen := map[string]bool{}
			for _, ref := range params {
				p := ref.Value
				seen[p.Name] = true
				w, ok := want[p.Name]
				if !ok {
					t.Errorf("unexpected parameter %q", p.Name)
					continue
				}
				if p.In != w.in || p.Required != w.required {
					t.Errorf("%s: in %s required %v, want in %s required %v", p.Name, p.In, p.Required, w.in, w.required)
				}
				if p.Schema == nil || p.Schema.Value == nil {
					t.Errorf("%s: no schema", p.Name)
					continue
				}
				s := p.Schema.Value
				if !s.Type.Is(w.typ) {
					t.Errorf("%s: type %v, want %s", p.Name, s.Type, w.typ)
				}
				if !sameFloat(s.Min, w.min) || !sameFloat(s.Max, w.max) {
					t.Errorf("%s: range %v..%v, want %v..%v", p.Name, show(s.Min), show(s.Max), show(w.min), show(w.max))
				}
				if s.Default != w.def {
					t.Errorf("%s: default %#v, want %#v", p.Name, s.Default, w.def)
				}
				if !slices.Equal(s.Enum, w.enum) {
					t.Errorf("%s: enum %v, want %v", p.Name, s.Enum, w.enum)
				}
				if s.Pattern != w.pattern || s.Format != w.format {
					t.Errorf("%s: pattern %q format %q, want %q %q", p.Name, s.Pattern, s.Format, w.pattern, w.format)
				}
				if p.Description == "" {
					t.Errorf("%s: no description", p.Name)
				}
			}
			for name := range want {
				if !seen[name] {
					t.Errorf("parameter %q is missing", name)
				}
			}
		})
	}
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func show(f *float64) any {
	if f == nil {
		return "-"
	}
	return *f
}

func withoutSort(m map[string]param) map[string]param {
	out := merge(m)
	delete(out, "sort")
	return out
}
