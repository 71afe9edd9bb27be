package openapi_test

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/permitd/permitd/api/openapi"
)

// TestNoNullInAnEnum: client generators turn a null enum value into a
// bogus constant; nullable: true says it instead.
func TestNoNullInAnEnum(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*openapi3.Schema]bool{}
	var walk func(path string, s *openapi3.SchemaRef)
	walk = func(path string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		for _, v := range s.Enum {
			if v == nil {
				t.Errorf("%s: null in enum", path)
			}
		}
		for name, p := range s.Properties {
			walk(path+"."+name, p)
		}
		walk(path+"[]", s.Items)
		for i, sub := range append(append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...), s.AllOf...) {
			walk(path+"/"+string(rune('0'+i)), sub)
		}
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s)
	}
}

// TestNullableGeoTypeValidatesTodaysValues: the enum without null still
// admits null through nullable, and still rejects property.
func TestNullableGeoTypeValidatesTodaysValues(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := doc.Components.Schemas["NullableNonPropertyGeoType"].Value
	for _, v := range []any{nil, "city", "state", "jurisdiction"} {
		if err := s.VisitJSON(v); err != nil {
			t.Errorf("%v: %v", v, err)
		}
	}
	for _, v := range []any{"property", "town", 3} {
		if err := s.VisitJSON(v); err == nil {
			t.Errorf("%v accepted", v)
		}
	}
}
