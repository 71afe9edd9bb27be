package api

import (
	"slices"
	"strings"
	"testing"

	"github.com/permitd/permitd/api/openapi"
)

// TestAcceptedParamsMatchOpenAPI walks the document's operations: each
// route's accepted query parameters are exactly those the document lists,
// and every route of the table is documented.
func TestAcceptedParamsMatchOpenAPI(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			route := ginPath(path)
			documented[route] = true
			var names []string
			for _, ref := range append(item.Parameters, op.Parameters...) {
				if ref.Value.In == "query" {
					names = append(names, ref.Value.Name)
				}
			}
			allowed, ok := acceptedParams[route]
			if !ok {
				t.Errorf("%s %s: no accepted-params entry", method, path)
				continue
			}
			slices.Sort(names)
			got := slices.Sorted(slices.Values(allowed))
			if !slices.Equal(names, got) {
				t.Errorf("%s %s: document lists %v, the API accepts %v", method, path, names, got)
			}
		}
	}
	for route := range acceptedParams {
		if !documented[route] {
			t.Errorf("%s accepts parameters but is not in the document", route)
		}
	}
}

// ginPath turns /v1/locations/{geo_id} into /v1/locations/:geo_id.
func ginPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			parts[i] = ":" + s[1:len(s)-1]
		}
	}
	return strings.Join(parts, "/")
}
