package gazetteer

import (
	"math"

	"github.com/permitd/permitd/events"
)

// The location events of the hierarchy's levels, built from the joined
// rows (build.go) and the ZIPs (zips.go).

func cityJurisdictionName(name string) string { return "City of " + name }

func stateLocation(s *state) located {
	// Land-area-weighted mean of the county internal points. Longitudes
	// east of 0 (the Aleutians past the antimeridian) are unwrapped first.
	var sumW, sumLat, sumLon float64
	for _, c := range s.counties {
		w := c.row.landSqmi
		if w <= 0 {
			w = 1
		}
		lon := c.row.lon
		if lon > 0 {
			lon -= 360
		}
		sumW += w
		sumLat += w * c.row.lat
		sumLon += w * lon
	}
	var lat, lon float64
	if sumW > 0 {
		lat, lon = round4(sumLat/sumW), sumLon/sumW
		if lon < -180 {
			lon += 360
		}
		lon = round4(lon)
	}
	return located{id: s.id, loc: events.Location{
		GeoType:     TypeState,
		Name:        s.name,
		DisplayName: s.name,
		FullAddress: s.name + ", US",
		State:       s.code,
		StateName:   s.name,
		Aliases:     []string{s.code},
		Lat:         lat,
		Lon:         lon,
		Population:  s.pop,
	}}
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

func countyLocation(c *county) located {
	name := c.row.name
	return located{id: c.id, loc: events.Location{
		GeoType:           TypeCounty,
		Name:              name,
		DisplayName:       name + ", " + c.state.code,
		FullAddress:       name + ", " + c.state.code,
		State:             c.state.code,
		StateName:         c.state.name,
		County:            name,
		Jurisdiction:      name,
		StateGeoID:        c.state.id,
		JurisdictionGeoID: c.juris,
		Aliases:           placeAliases(name, fold(name)),
		Lat:               c.row.lat,
		Lon:               c.row.lon,
		Population:        c.pop,
	}}
}

// countyJurisdiction is the unincorporated area of a county, governed by
// the county: its county location renamed, pointing at the county.
func countyJurisdiction(c *county) located {
	l := countyLocation(c).loc
	name, f := c.row.name, fold(c.row.name)
	l.Aliases = append(l.Aliases, "Unincorporated "+name)
	if f != name {
		l.Aliases = append(l.Aliases, "Unincorporated "+f)
	}
	l.GeoType = TypeJurisdiction
	l.DisplayName = name + ", " + c.state.code + " (unincorporated)"
	l.CountyGeoID = c.id
	l.Population = c.uninc
	return located{id: c.juris, loc: l}
}

// cityJurisdiction is the "City of <name>" authority of an incorporated
// place: its city location renamed, pointing at the city.
func cityJurisdiction(p *place) located {
	l := cityLocation(p).loc
	var aliases []string
	for _, a := range l.Aliases {
		aliases = append(aliases, cityJurisdictionName(a))
	}
	l.GeoType = TypeJurisdiction
	l.Name = p.jname
	l.DisplayName = p.jname + ", " + l.State
	l.FullAddress = p.jname + ", " + l.County + ", " + l.State
	l.CityGeoID = p.id
	l.Aliases = aliases
	return located{id: p.juris, loc: l}
}

func cityLocation(p *place) located {
	r, c := p.row, p.county
	return located{id: p.id, loc: events.Location{
		GeoType:           TypeCity,
		Name:              r.name,
		DisplayName:       r.name + ", " + r.state,
		FullAddress:       r.name + ", " + c.row.name + ", " + r.state,
		State:             r.state,
		StateName:         c.state.name,
		County:            c.row.name,
		City:              r.name,
		Jurisdiction:      p.jname,
		StateGeoID:        c.state.id,
		CountyGeoID:       c.id,
		JurisdictionGeoID: p.juris,
		Aliases:           placeAliases(r.name, r.ascii),
		Lat:               r.lat,
		Lon:               r.lon,
		Population:        r.population,
		Incorporated:      r.incorporated,
	}}
}
