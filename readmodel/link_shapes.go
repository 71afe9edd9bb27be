package readmodel

// LinkShapes tells a store which documents of a batch share the shape of
// their geo link lists, as a decoder that reads the lists from a table
// knows it (indexer/snapshot: a permit's list is most often another
// permit's but for its link to its own property). Permits[i] and
// Properties[i] are the shapes of the batch's i-th permit's and
// property's GeoLinks; 0 means none is known.
//
// Within one stream of batches (one snapshot), two documents with the
// same non-zero shape have the same links in the same order, equal in
// every field, except the GeoIDs of their property links (GeoType
// GeoProperty), which are each document's own. Shapes are a hint: a
// store may ignore them, and one whose slice is not as long as the
// batch's documents of that kind must be ignored.
type LinkShapes struct {
	Permits    []uint32
	Properties []uint32
}

// PermitShape is the shape of the i-th permit, 0 when none is known.
func (s *LinkShapes) PermitShape(i, permits int) uint32 {
	if s == nil || len(s.Permits) != permits {
		return 0
	}
	return s.Permits[i]
}

// PropertyShape is the shape of the i-th property, 0 when none is known.
func (s *LinkShapes) PropertyShape(i, properties int) uint32 {
	if s == nil || len(s.Properties) != properties {
		return 0
	}
	return s.Properties[i]
}
