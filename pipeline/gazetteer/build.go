package gazetteer

import (
	"context"
	"fmt"
	"io"
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

	// States: every (state_id, state_name) of the places file. A row
	// that names its state otherwise than the first row of that state
	// did is skipped.
	states := map[string]*state{}
	kept := placeRows[:0]
	for _, p := range placeRows {
		if s, ok := states[p.state]; ok {
			if s.name != p.stateName {
				rep.skip(data.Cities, "state_name_conflict", p.line)
				continue
			}
			kept = append(kept, p)
			continue
		}
		states[p.state] = &state{code: p.state, name: p.stateName, id: events.GeoID(TypeState, p.state)}
		kept = append(kept, p)
	}
	placeRows = kept

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
			// Another state code than its state's first county had.
			rep.skip(data.Counties, "state_fips_conflict", r.line)
			continue
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
