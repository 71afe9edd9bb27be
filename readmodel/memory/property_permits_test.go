package memory_test

import (
	"slices"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// TestPropertyPermitsByValuationAndNear pages a property's permits by
// valuation and within a radius: only the property's own (not those of
// its neighbour at the same address's ZIP), in the contract's orders.
func TestPropertyPermitsByValuationAndNear(t *testing.T) {
	s := newStore(t)
	home := property("600 University St", "Seattle", "WA", "98101", 1)
	apply(t, s, readmodel.Batch{Properties: []readmodel.Property{home}})
	var ps []readmodel.Permit
	for i, v := range []float64{500, 9000, 1200, 9000, 70} {
		p := permit(string(rune('a'+i)), "2024-05-0"+string(rune('1'+i)), zipA, 1)
		val := v
		lat, lon := 47.61+float64(i)*0.001, -122.33 // i=4 is about 445 m north
		p.Valuation, p.Lat, p.Lon, p.PropertyID = &val, &lat, &lon, home.PropertyID
		ps = append(ps, p)
	}
	other := permit("z", "2024-05-09", zipA, 1) // same ZIP and place, no property
	olat, olon := 47.61, -122.33
	other.Lat, other.Lon = &olat, &olon
	ps = append(ps, other)
	apply(t, s, readmodel.Batch{Permits: ps})

	geo := readmodel.ParseGeoRef(home.PropertyID)
	ids := func(q readmodel.PermitQuery) []string { return walkIDs(t, s, q) }
	// valuation descending, equal valuations by permit_id
	if got, want := ids(readmodel.PermitQuery{Geo: geo, Limit: 2, Sort: readmodel.SortValuationDesc}), []string{"test:b", "test:d", "test:c", "test:a", "test:e"}; !slices.Equal(got, want) {
		t.Errorf("by valuation: %v, want %v", got, want)
	}
	// within 400 m of the first: the first four (0 to 333 m), not the fifth nor the other permit
	near := readmodel.PermitQuery{Geo: geo, Limit: 2, Filter: readmodel.PermitFilter{Near: &readmodel.GeoPoint{Lat: 47.61, Lon: -122.33}, RadiusM: 400}}
	got := ids(near)
	slices.Sort(got)
	if want := []string{"test:a", "test:b", "test:c", "test:d"}; !slices.Equal(got, want) {
		t.Errorf("near: %v, want %v", got, want)
	}
}
