package gazetteer

import (
	"math"
	"slices"
	"sort"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
)

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
