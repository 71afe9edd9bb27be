package memory_test

import (
	"context"
	"slices"
	"testing"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestPermitsNearAPoleOrTheAntimeridian finds the permits within a
// radius of points near the poles, where the circle's rectangle spans
// every longitude (tens of millions of cells: it was refused with
// ErrInvalidQuery, a 500), and of a point by the antimeridian, whose
// circle reaches past it (those permits were left out), in distance order
// over pages of one.
func TestPermitsNearAPoleOrTheAntimeridian(t *testing.T) {
	s := newStore(t)
	at := func(id string, lat, lon float64) readmodel.Permit {
		p := permit(id, "2024-05-01", zipA, 1)
		p.Lat, p.Lon = &lat, &lon
		return p
	}
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{
		at("n-across", 89.95, 170), // about 16.6 km from (89.9, 0), across the pole
		at("n-south", 89.5, 0),     // about 44.5 km
		at("n-far", 89.4, 90),      // about 67.6 km
		at("s-across", -89.8, -60), // about 21 km from (-89.99, 179.9)
		at("w-side", 51.8, -179.995),
		at("e-side", 51.8, 179.995),
		at("seattle", 47.61, -122.33),
	}})
	for _, tc := range []struct {
		near    readmodel.GeoPoint
		radiusM float64
		want    []string
	}{
		{readmodel.GeoPoint{Lat: 89.9, Lon: 0}, 50_000, []string{"test:n-across", "test:n-south"}},
		{readmodel.GeoPoint{Lat: -89.99, Lon: 179.9}, 50_000, []string{"test:s-across"}},
		{readmodel.GeoPoint{Lat: 90, Lon: -180}, 50_000, []string{"test:n-across"}},                   // n-south is 55.6 km from the pole
		{readmodel.GeoPoint{Lat: 51.8, Lon: -179.999}, 2_000, []string{"test:w-side", "test:e-side"}}, // about 275 m and 412 m
		{readmodel.GeoPoint{Lat: 51.8, Lon: 179.999}, 2_000, []string{"test:e-side", "test:w-side"}},
	} {
		q := readmodel.PermitQuery{Limit: 1, Sort: readmodel.SortDistance, Filter: readmodel.PermitFilter{Near: &tc.near, RadiusM: tc.radiusM}}
		if got := walkIDs(t, s, q); !slices.Equal(got, tc.want) {
			t.Errorf("near %v: %v, want %v", tc.near, got, tc.want)
		}
	}
}

// TestPermitsNearApartFromTheBox: a near circle and a bbox that do not
// meet hold no permit (the rectangle they share is empty: it was taken
// for one of too many cells, a 500), whichever side of the box the circle
// is on.
func TestPermitsNearApartFromTheBox(t *testing.T) {
	s := newStore(t)
	lat, lon := 47.61, -122.33
	p := permit("a", "2024-05-01", zipA, 1)
	p.Lat, p.Lon = &lat, &lon
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{p}})
	near := readmodel.GeoPoint{Lat: lat, Lon: lon}
	for _, box := range []readmodel.BBox{
		{MinLon: -122, MinLat: 7, MaxLon: -120, MaxLat: 7},         // south-east: both sides apart
		{MinLon: -122.34, MinLat: 48, MaxLon: -122.32, MaxLat: 49}, // north: the latitudes only
		{MinLon: -121, MinLat: 47, MaxLon: -120, MaxLat: 48},       // east: the longitudes only
	} {
		q := readmodel.PermitQuery{Limit: 10, Filter: readmodel.PermitFilter{Near: &near, RadiusM: 1000, BBox: &box}}
		if got := walkIDs(t, s, q); len(got) != 0 {
			t.Errorf("box %+v: %v, want none", box, got)
		}
	}
	// The circle alone and a box that holds it find the permit.
	box := readmodel.BBox{MinLon: -123, MinLat: 47, MaxLon: -122, MaxLat: 48}
	q := readmodel.PermitQuery{Limit: 10, Filter: readmodel.PermitFilter{Near: &near, RadiusM: 1000, BBox: &box}}
	if got := walkIDs(t, s, q); !slices.Equal(got, []string{"test:a"}) {
		t.Errorf("box that holds the circle: %v", got)
	}
}

// walkIDs pages q to its end and returns the permits' ids in order.
func walkIDs(t *testing.T, s *memory.Store, q readmodel.PermitQuery) []string {
	t.Helper()
	var out []string
	for {
		res, err := s.SearchPermits(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Permits {
			out = append(out, h.Permit.PermitID)
		}
		if res.Next == nil {
			return out
		}
		q.After = res.Next
	}
}
