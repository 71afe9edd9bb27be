package memory

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// Geometry (near + radius_m, bbox). The side keeps every permit with
// coordinates in a grid of cells of cellDeg degrees (about 1.1 km by
// 0.75 km in Washington): a geometry query reads only the cells its
// rectangle overlaps, checks each permit exactly (distance, box, geo
// link, filters, date window) and orders the few it keeps. The API bounds
// a radius to 50 km and a box to 2 degrees a side, so a query's rectangle
// covers at most ~40,000 cells away from the poles. Near a pole a circle
// spans every longitude (near=89.9,0 with 50 km: 36,000 by 90 cells): a
// rectangle of more cells than hold permits visits the permits' cells
// instead, so no valid query is refused for its size. A near circle and a
// bbox that do not meet hold nothing.

const cellDeg = 0.01

type cellKey uint64

func cellOf(lat, lon float64) (int32, int32) {
	return int32(math.Floor(lat / cellDeg)), int32(math.Floor(lon / cellDeg))
}

func keyOfCell(la, lo int32) cellKey { return cellKey(uint64(uint32(la))<<32 | uint64(uint32(lo))) }

// cell is keyOfCell's inverse.
func (k cellKey) cell() (la, lo int32) { return int32(uint32(k >> 32)), int32(uint32(k)) }

func (s *side) indexCell(c *cpermit) {
	if math.IsNaN(c.lat) || math.IsNaN(c.lon) {
		return
	}
	k := keyOfCell(cellOf(c.lat, c.lon))
	s.pf.cells[k] = s.insertPermit(s.pf.cells[k], c)
}

func (s *side) unindexCell(c *cpermit) {
	if math.IsNaN(c.lat) || math.IsNaN(c.lon) {
		return
	}
	k := keyOfCell(cellOf(c.lat, c.lon))
	if l := removeSorted(s.pi.slab, s.pf.cells[k], c); len(l) > 0 {
		s.pf.cells[k] = l
	} else {
		delete(s.pf.cells, k)
	}
}

// geoRect is the rectangle a geometry can hold (near's circle bounding box
// intersected with bbox). A circle that holds a pole or crosses the
// antimeridian (near=47,179.99 reaches -179.99) takes every longitude:
// its rectangle in one piece would leave out the part past ±180, and
// the hits are checked exactly (their distance) in any case.
func geoRect(f *readmodel.PermitFilter) (minLat, minLon, maxLat, maxLon float64) {
	minLat, minLon, maxLat, maxLon = -90, -180, 90, 180
	if b := f.BBox; b != nil {
		minLat, minLon, maxLat, maxLon = b.MinLat, b.MinLon, b.MaxLat, b.MaxLon
	}
	if n := f.Near; n != nil {
		dLat := f.RadiusM / 111195.0 * 1.001 // metres per degree of latitude, with a margin
		minLat, maxLat = math.Max(minLat, n.Lat-dLat), math.Min(maxLat, n.Lat+dLat)
		if far := math.Abs(n.Lat) + dLat; far < 90 {
			// The circle's widest longitude is at most dLat over the
			// cosine of its latitude farthest from the equator.
			dLon := dLat / math.Cos(far*math.Pi/180)
			if lo, hi := n.Lon-dLon, n.Lon+dLon; lo >= -180 && hi <= 180 {
				minLon, maxLon = math.Max(minLon, lo), math.Min(maxLon, hi)
			}
		}
	}
	return
}

type geoHit struct {
	c    *cpermit
	dist float64
}

// geometryHits is permitHits for a query with a geometry, in any order.
func (s *side) geometryHits(_ context.Context, q *readmodel.PermitQuery, n int) ([]geoHit, uint32, error) {
	f := &q.Filter
	geo := uint32(0)
	var propSet map[*cpermit]bool
	var set permitSet
	if !q.Geo.IsZero() {
		var sym uint32
		var err error
		set, sym, err = s.geoSet(q.Geo)
		if err != nil || set == nil {
			return nil, sym, err
		}
		geo = sym
		if geo == selfProperty {
			propSet = make(map[*cpermit]bool, set.size())
			set.ascend(&cpermit{ik: minIK}, func(c *cpermit) bool { propSet[c] = true; return true })
		}
	}
	plan := s.planOf(f)
	ikLo, ikHi := int32(math.MinInt32), int32(undated)
	dated := q.FromDate != "" || q.ToDate != ""
	if q.FromDate != "" {
		ikHi = -parseDay(q.FromDate)
	}
	if q.ToDate != "" {
		ikLo = -parseDay(q.ToDate)
	}
	minLat, minLon, maxLat, maxLon := geoRect(f)
	if minLat > maxLat || minLon > maxLon {
		return nil, geo, nil // near's circle and bbox do not meet
	}
	la0, lo0 := cellOf(minLat, minLon)
	la1, lo1 := cellOf(maxLat, maxLon)
	inRect := func(la, lo int32) bool { return la >= la0 && la <= la1 && lo >= lo0 && lo <= lo1 }
	var hits []geoHit
	visit := func(c *cpermit) {
		if dated && (c.ik == undated || c.ik < ikLo || c.ik > ikHi) {
			return
		}
		if f.BBox != nil && !f.BBox.Contains(c.lat, c.lon) {
			return
		}
		d := 0.0
		if f.Near != nil {
			if d = readmodel.DistanceM(*f.Near, readmodel.GeoPoint{Lat: c.lat, Lon: c.lon}); d > f.RadiusM {
				return
			}
		}
		switch {
		case propSet != nil && !propSet[c]:
			return
		case propSet == nil && geo != 0 && !s.linked(c, geo):
			return
		case !s.match(plan, c):
			return
		}
		hits = append(hits, geoHit{c, d})
	}
	if s.lean {
		// No cell index yet (permit_bulk.go): the permits of the cells
		// are taken from the geo's set, or from every permit.
		inCells := func(c *cpermit) {
			if math.IsNaN(c.lat) || math.IsNaN(c.lon) {
				return
			}
			if inRect(cellOf(c.lat, c.lon)) {
				visit(c)
			}
		}
		if set != nil {
			set.ascend(&cpermit{ik: minIK}, func(c *cpermit) bool { inCells(c); return true })
		} else {
			s.permits.each(func(_ string, _ int64, c *cpermit) { inCells(c) })
		}
	} else if int64(la1-la0+1)*int64(lo1-lo0+1) > int64(len(s.pf.cells)) {
		// More cells in the rectangle than hold permits (near a pole):
		// the permits' cells, in any order (the hits are sorted below).
		for key, slots := range s.pf.cells {
			if inRect(key.cell()) {
				for _, k := range slots {
					visit(s.pi.slab.at(k.slot))
				}
			}
		}
	} else {
		for la := la0; la <= la1; la++ {
			for lo := lo0; lo <= lo1; lo++ {
				for _, k := range s.pf.cells[keyOfCell(la, lo)] {
					visit(s.pi.slab.at(k.slot))
				}
			}
		}
	}
	less := s.geoOrder(*q)
	slices.SortFunc(hits, func(a, b geoHit) int {
		if less(a, b) {
			return -1
		}
		if less(b, a) {
			return 1
		}
		return 0
	})
	start := 0
	if q.After != nil {
		pivot := geoHit{c: &cpermit{ik: ikOf(q.After.IssueDate), id: q.After.PermitID, valuation: math.NaN()}, dist: q.After.DistanceM}
		if q.After.HasValuation {
			pivot.c.valuation = q.After.Valuation
		}
		for start < len(hits) && !less(pivot, hits[start]) {
			start++
		}
	}
	hits = hits[start:]
	return hits[:min(len(hits), n)], geo, nil
}

// geoOrder is the strict order of q's sort over geometry hits.
func (s *side) geoOrder(q readmodel.PermitQuery) func(a, b geoHit) bool {
	switch {
	case q.Sort == readmodel.SortDistance:
		return func(a, b geoHit) bool {
			if a.dist != b.dist {
				return a.dist < b.dist
			}
			return a.c.id < b.c.id
		}
	case q.Sort == readmodel.SortValuationDesc:
		return func(a, b geoHit) bool { return valueLess(a.c, b.c) }
	case q.Desc:
		return func(a, b geoHit) bool { return permitLess(a.c, b.c) }
	}
	return func(a, b geoHit) bool { // issue date ascending, undated last
		x, y := a.c, b.c
		if (x.ik == undated) != (y.ik == undated) {
			return y.ik == undated
		}
		if x.ik != y.ik {
			return x.ik > y.ik
		}
		return strings.Compare(x.id, y.id) < 0
	}
}
