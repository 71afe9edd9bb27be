package readmodel

// GeoRef is a parsed geo_id: the geo_id of a location, or a property_id,
// which is a geo_id of the property scope (the property presented by
// PropertyLocation). ParseGeoRef is the one place that tells the two
// apart; the API parses an id once, at its edge, and the query structs
// and backends carry the GeoRef and ask IsProperty, never the string's
// shape. The zero GeoRef is no geography (a permit search by geometry
// only).
type GeoRef struct {
	id   string
	prop bool
}

// ParseGeoRef reads id as a geo_id: a property_id (IsPropertyID) is one
// of the property scope, any other id one of a location.
func ParseGeoRef(id string) GeoRef { return GeoRef{id: id, prop: IsPropertyID(id)} }

// ID is the geo_id as written ("" for the zero GeoRef).
func (r GeoRef) ID() string { return r.id }

// String is ID.
func (r GeoRef) String() string { return r.id }

// IsProperty reports whether r names a property (its ID is a
// property_id).
func (r GeoRef) IsProperty() bool { return r.prop }

// IsZero reports whether r names no geography.
func (r GeoRef) IsZero() bool { return r.id == "" }

// IsPropertyID reports whether id has the form of a property_id: prop_
// followed by 32 lowercase hex digits. Reads go through ParseGeoRef; the
// write side (an event's property_id, a permit's property link) asks this
// directly.
func IsPropertyID(id string) bool {
	if len(id) != 37 || id[:5] != "prop_" {
		return false
	}
	for i := 5; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
