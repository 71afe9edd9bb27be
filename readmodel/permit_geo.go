package readmodel

import "math"

// GeoPoint is a WGS 84 position.
type GeoPoint struct{ Lat, Lon float64 }

// BBox is a box of longitudes and latitudes (MinLon <= MaxLon: it does
// not cross the antimeridian).
type BBox struct{ MinLon, MinLat, MaxLon, MaxLat float64 }

// Contains reports whether the box holds lat, lon (edges included).
func (b *BBox) Contains(lat, lon float64) bool {
	return lat >= b.MinLat && lat <= b.MaxLat && lon >= b.MinLon && lon <= b.MaxLon
}

// SortDistance orders permit pages by distance from PermitFilter.Near,
// nearest first, then permit_id; cursor keys carry the distance
// (PermitKey.DistanceM).
const SortDistance PermitSort = "distance"

// earthRadiusM is the mean earth radius OpenSearch's arc distance uses.
const earthRadiusM = 6371008.7714

// DistanceM is the great-circle (haversine) distance in metres, as
// OpenSearch's geo_distance computes it with distance_type arc.
func DistanceM(a, b GeoPoint) float64 {
	rad := math.Pi / 180
	dLat, dLon := (b.Lat-a.Lat)*rad, (b.Lon-a.Lon)*rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(a.Lat*rad)*math.Cos(b.Lat*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * earthRadiusM * math.Asin(math.Min(1, math.Sqrt(h)))
}

// HasGeometry reports whether f has a near or bbox condition.
func (f *PermitFilter) HasGeometry() bool { return f.Near != nil || f.BBox != nil }

// geoMatch: a permit without coordinates fails every geometry condition.
func (f *PermitFilter) geoMatch(p *Permit) bool {
	if !f.HasGeometry() {
		return true
	}
	if p.Lat == nil || p.Lon == nil {
		return false
	}
	if f.BBox != nil && !f.BBox.Contains(*p.Lat, *p.Lon) {
		return false
	}
	return f.Near == nil || DistanceM(*f.Near, GeoPoint{*p.Lat, *p.Lon}) <= f.RadiusM
}
