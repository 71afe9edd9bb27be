package readmodel

import "testing"

func TestParseGeoRef(t *testing.T) {
	for _, tc := range []struct {
		id         string
		prop, zero bool
	}{
		{"prop_0123456789abcdef0123456789abcdef", true, false},
		{"prop_0123456789ABCDEF0123456789abcdef", false, false}, // upper-case hex: a location's id shape
		{"prop_0123", false, false},
		{"ctx_city_1840021117", false, false},
		{"", false, true},
	} {
		r := ParseGeoRef(tc.id)
		if r.ID() != tc.id || r.String() != tc.id || r.IsProperty() != tc.prop || r.IsZero() != tc.zero {
			t.Errorf("ParseGeoRef(%q) = {id %q, property %v, zero %v}, want property %v, zero %v", tc.id, r.ID(), r.IsProperty(), r.IsZero(), tc.prop, tc.zero)
		}
	}
	if (GeoRef{}) != ParseGeoRef("") {
		t.Error("the zero GeoRef is not ParseGeoRef(\"\")")
	}
}
