package gazetteer

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
)

// located is one location with its geo_id, in emission order.
type located struct {
	id  string
	loc events.Location
}

type state struct {
	code, name string
	id         string
	fips       string    // 2-digit state FIPS, from the county file
	pop        int64     // sum over places
	counties   []*county // in FIPS order
}

type county struct {
	row    countyRow
	id     string
	state  *state
	juris  string // geo_id of the county jurisdiction
	pop    int64  // sum over places
	uninc  int64  // sum over unincorporated places
	places int
}

type place struct {
	row    placeRow
	id     string
	county *county
	juris  string // geo_id of the governing jurisdiction
	jname  string // its name
}

func build(ctx context.Context, open func(string) (io.ReadCloser, error), rep *Report) ([]located, error) {
	var (
		countyRows []countyRow
		placeRows  []placeRow
		postalRows []postalRow
		zipCounty  []zipCountyRow
	)
	readers := []struct {
		name string
		read func(io.Reader) error
	}{
		{data.Counties, func(r io.Reader) (err error) { countyRows, err = readCounties(r, rep); return }},
		{data.Cities, func(r io.Reader) (err error) { placeRows, err = readPlaces(r, rep); return }},
		{data.PostalCodes, func(r io.Reader) (err error) { postalRows, err = readPostal(r, rep); return }},
		{data.ZipCounties, func(r io.Reader) (err error) { zipCounty, err = readZipCounties(r, rep); return }},
	}
	for _, rd := range readers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rc, err := openSource(open, rd.name)
		if err != nil {
			return nil, err
		}
		err = rd.read(rc)
		if cerr := rc.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("gazetteer: %s: %w", rd.name, cerr)
		}
		if err != nil {
			return nil, err
		}
	}

	// States: every (state_id, state_name) of the places file.
	states := map[string]*state{}
	for _, p := range placeRows {
		if s, ok := states[p.state]; ok {
			if s.name != p.stateName {
				return nil, fmt.Errorf("gazetteer: %s: state %s named both %q and %q", data.Cities, p.state, s.name, p.stateName)
			}
			continue
		}
		states[p.state] = &state{code: p.state, name: p.stateName, id: events.GeoID(TypeState, p.state)}
	}

	// Counties.
	counties := map[string]*county{}
	for _, r := range countyRows {
		s, ok := states[r.state]
		if !ok {
			rep.skip(data.Counties, "unknown_state", r.line)
			continue
		}
		if s.fips == "" {
			s.fips = r.fips[:2]
		} else if s.fips != r.fips[:2] {
			return nil, fmt.Errorf("gazetteer: %s: state %s has FIPS %s and %s", data.Counties, r.state, s.fips, r.fips[:2])
		}
		counties[r.fips] = &county{
			row: r, id: events.GeoID(TypeCounty, r.fips), state: s,
			juris: events.GeoID(TypeJurisdiction, "county:"+r.fips),
		}
	}

	// Places, with their county and jurisdiction.
	var places []*place
	for i := range placeRows {
		r := placeRows[i]
		c, ok := counties[r.countyFIPS]
		if !ok || c.state.code != r.state {
			rep.skip(data.Cities, "unknown_county", r.line)
			continue
		}
		p := &place{row: r, id: events.GeoID(TypeCity, r.id), county: c}
		if r.incorporated {
			p.juris = events.GeoID(TypeJurisdiction, "city:"+r.id)
			p.jname = cityJurisdictionName(r.name)
		} else {
			p.juris = c.juris
			p.jname = c.row.name
			c.uninc += r.population
		}
		c.pop += r.population
		c.state.pop += r.population
		c.places++
		places = append(places, p)
	}
	sort.Slice(places, func(i, j int) bool { return places[i].row.id < places[j].row.id })

	zips := buildZips(postalRows, zipCounty, states, counties, places, rep)

	// Emission order: states, counties, jurisdictions, cities, zips.
	out := make([]located, 0, len(states)+2*len(counties)+2*len(places)+len(zips))
	stateCodes := make([]string, 0, len(states))
	for code := range states {
		stateCodes = append(stateCodes, code)
	}
	sort.Strings(stateCodes)
	fipsList := make([]string, 0, len(counties))
	for f := range counties {
		fipsList = append(fipsList, f)
	}
	sort.Strings(fipsList)
	for _, f := range fipsList {
		c := counties[f]
		c.state.counties = append(c.state.counties, c)
	}

	for _, code := range stateCodes {
		out = append(out, stateLocation(states[code]))
	}
	for _, f := range fipsList {
		out = append(out, countyLocation(counties[f]))
	}
	// Jurisdiction identities sort "city:<id>" before "county:<fips>";
	// places and counties are already in id order.
	for _, p := range places {
		if p.row.incorporated {
			out = append(out, cityJurisdiction(p))
		}
	}
	for _, f := range fipsList {
		out = append(out, countyJurisdiction(counties[f]))
	}
	for _, p := range places {
		out = append(out, cityLocation(p))
	}
	out = append(out, zips...)
	return out, nil
}

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

func countyJurisdiction(c *county) located {
	name, f := c.row.name, fold(c.row.name)
	aliases := placeAliases(name, f)
	aliases = append(aliases, "Unincorporated "+name)
	if f != name {
		aliases = append(aliases, "Unincorporated "+f)
	}
	return located{id: c.juris, loc: events.Location{
		GeoType:           TypeJurisdiction,
		Name:              name,
		DisplayName:       name + ", " + c.state.code + " (unincorporated)",
		FullAddress:       name + ", " + c.state.code,
		State:             c.state.code,
		StateName:         c.state.name,
		County:            name,
		Jurisdiction:      name,
		StateGeoID:        c.state.id,
		CountyGeoID:       c.id,
		JurisdictionGeoID: c.juris,
		Aliases:           aliases,
		Lat:               c.row.lat,
		Lon:               c.row.lon,
		Population:        c.uninc,
	}}
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

// buildZips turns the GeoNames rows into ZIP locations sorted by code.
//
// Place: the simplemaps place of the same state whose name has the same
// nameKey (several: the one listing the ZIP, then the one in the ZIP's
// county, then the most populous, then the lowest id); else the most
// populous place of the state whose zips list contains the ZIP; else none.
//
// County: GeoNames' county (state FIPS + its 3-digit code, remapped as in
// countyRemap); else the first USDA county of the ZIP in its state; else
// the matched place's county; else the county of the nearest place of the
// state; else the row is skipped. county_geo_ids is that
// county plus every existing USDA county of the ZIP, ordered by FIPS.
func buildZips(rows []postalRow, usda []zipCountyRow, states map[string]*state, counties map[string]*county, places []*place, rep *Report) []located {
	seenZip := make(map[string]bool, len(rows))
	for _, r := range rows {
		seenZip[r.zip] = true
	}
	usdaByZip := map[string][]*county{}
	for _, u := range usda {
		fips := u.fips
		if to, ok := countyRemap[fips]; ok {
			rep.adjust("usda_county_remapped")
			fips = to
		}
		c, ok := counties[fips]
		switch {
		case !ok:
			rep.skip(data.ZipCounties, "unknown_county", u.line)
			continue
		case !seenZip[u.zip]:
			rep.skip(data.ZipCounties, "zip_not_in_postal_codes", u.line)
			continue
		}
		if slices.Contains(usdaByZip[u.zip], c) {
			rep.skip(data.ZipCounties, "duplicate_pair", u.line)
			continue
		}
		usdaByZip[u.zip] = append(usdaByZip[u.zip], c)
	}

	byName := map[string][]*place{} // state + "|" + nameKey
	byZip := map[string][]*place{}
	for _, p := range places {
		k := p.row.state + "|" + nameKey(p.row.ascii)
		byName[k] = append(byName[k], p)
		for _, z := range p.row.zips {
			byZip[z] = append(byZip[z], p)
		}
	}

	out := make([]located, 0, len(rows))
	emitted := make(map[string]bool, len(rows))
	for _, r := range rows {
		if r.state == "" {
			rep.skip(data.PostalCodes, "no_state_military", r.line)
			continue
		}
		s, ok := states[r.state]
		if !ok {
			rep.skip(data.PostalCodes, "state_not_covered", r.line)
			continue
		}
		if emitted[r.zip] {
			rep.skip(data.PostalCodes, "duplicate_zip", r.line)
			continue
		}
		if r.stateName != s.name {
			rep.adjust("zip_state_name_differs")
		}

		var gnCounty *county
		if isDigits(r.countyCode, 3) && s.fips != "" {
			fips := s.fips + r.countyCode
			if to, ok := countyRemap[fips]; ok {
				fips = to
			}
			gnCounty = counties[fips]
		}

		p, method := matchPlace(r, s, gnCounty, byName, byZip)
		rep.adjust("zip_place_" + method)

		c := gnCounty
		switch {
		case c != nil:
			rep.adjust("zip_county_geonames")
		default:
			for _, uc := range usdaByZip[r.zip] {
				if uc.state == s {
					c = uc
					break
				}
			}
			if c != nil {
				rep.adjust("zip_county_usda")
			} else if p != nil {
				c = p.county
				rep.adjust("zip_county_place")
			} else if np := nearestPlace(places, s.code, r.lat, r.lon); np != nil {
				c = np.county
				rep.adjust("zip_county_nearest_place")
			}
		}
		if c == nil {
			rep.skip(data.PostalCodes, "no_county", r.line)
			continue
		}

		all := []*county{c}
		for _, uc := range usdaByZip[r.zip] {
			if uc != c {
				all = append(all, uc)
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i].row.fips < all[j].row.fips })
		countyIDs := make([]string, len(all))
		for i, x := range all {
			countyIDs[i] = x.id
		}

		loc := events.Location{
			GeoType:      TypeZip,
			Name:         r.zip,
			State:        s.code,
			StateName:    s.name,
			County:       c.row.name,
			City:         r.place,
			Zipcode:      r.zip,
			StateGeoID:   s.id,
			CountyGeoID:  c.id,
			CountyGeoIDs: countyIDs,
			Lat:          r.lat,
			Lon:          r.lon,
		}
		if r.place != "" {
			loc.DisplayName = r.zip + " (" + r.place + ", " + s.code + ")"
			loc.FullAddress = r.zip + ", " + r.place + ", " + s.code
		} else {
			loc.DisplayName = r.zip + " (" + c.row.name + ", " + s.code + ")"
			loc.FullAddress = r.zip + ", " + c.row.name + ", " + s.code
		}
		if p != nil {
			loc.CityGeoID = p.id
			loc.Jurisdiction, loc.JurisdictionGeoID = p.jname, p.juris
		} else {
			loc.Jurisdiction, loc.JurisdictionGeoID = c.row.name, c.juris
		}
		emitted[r.zip] = true
		out = append(out, located{id: events.GeoID(TypeZip, r.zip), loc: loc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].loc.Zipcode < out[j].loc.Zipcode })
	return out
}

func matchPlace(r postalRow, s *state, c *county, byName, byZip map[string][]*place) (*place, string) {
	if r.place != "" {
		if cands := byName[s.code+"|"+nameKey(r.place)]; len(cands) > 0 {
			return best(cands, func(p *place) [2]bool {
				return [2]bool{slices.Contains(p.row.zips, r.zip), c != nil && p.county == c}
			}), "by_name"
		}
	}
	var cands []*place
	for _, p := range byZip[r.zip] {
		if p.row.state == s.code {
			cands = append(cands, p)
		}
	}
	if len(cands) > 0 {
		return best(cands, func(*place) [2]bool { return [2]bool{} }), "by_zip_list"
	}
	return nil, "unmatched"
}

// best picks the candidate that ranks first by the two preference flags
// (in order), then population descending, then simplemaps id ascending.
func best(cands []*place, prefer func(*place) [2]bool) *place {
	var top *place
	var topPref [2]bool
	for _, p := range cands {
		pref := prefer(p)
		if top == nil || better(pref, p, topPref, top) {
			top, topPref = p, pref
		}
	}
	return top
}

func better(pa [2]bool, a *place, pb [2]bool, b *place) bool {
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i]
		}
	}
	if a.row.population != b.row.population {
		return a.row.population > b.row.population
	}
	return a.row.id < b.row.id
}

// nearestPlace returns the place of state nearest to (lat, lon), by
// equirectangular distance (ample for a fallback inside one state).
func nearestPlace(places []*place, state string, lat, lon float64) *place {
	var top *place
	bestD := math.Inf(1)
	k := math.Cos(lat * math.Pi / 180)
	for _, p := range places {
		if p.row.state != state {
			continue
		}
		dy, dx := p.row.lat-lat, (p.row.lon-lon)*k
		if d := dy*dy + dx*dx; d < bestD {
			top, bestD = p, d
		}
	}
	return top
}
