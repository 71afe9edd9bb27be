package gen

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/pipeline/data"
)

// place is one gazetteer place permits are generated in.
type place struct {
	city     string // normalised: "SEATTLE"
	state    string // USPS code
	lat, lon float64
	zips     []string // real ZIPs of the place that GeoNames knows
	weight   float64  // population
}

// loadPlaces reads the simplemaps places with a population and at least
// one ZIP that the GeoNames file (and so the gazetteer) knows, in file
// order; with states, only the places of those states.
func loadPlaces(open func(string) (io.ReadCloser, error), states []string) ([]place, error) {
	known, err := geonamesZips(open)
	if err != nil {
		return nil, err
	}
	var out []place
	err = data.EachCSV(open, data.Cities, []string{"city_ascii", "state_id", "lat", "lng", "population", "zips"}, func(f []string) error {
		pop, err := strconv.ParseFloat(f[4], 64)
		if err != nil || pop <= 0 {
			return nil
		}
		lat, err1 := strconv.ParseFloat(f[2], 64)
		lon, err2 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil {
			return nil
		}
		var zips []string
		for _, z := range strings.Fields(f[5]) {
			if known[z] {
				zips = append(zips, z)
			}
		}
		city := address.NormalizeCity(f[0])
		state := f[1]
		if len(zips) == 0 || city == "" || len(state) != 2 || !inStates(state, states) {
			return nil
		}
		out = append(out, place{city: city, state: state, lat: lat, lon: lon, zips: zips, weight: pop})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gen: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("gen: no usable places in %s", data.Cities)
	}
	return out, nil
}

// inStates reports whether state is one of states (any case), or states
// is empty.
func inStates(state string, states []string) bool {
	if len(states) == 0 {
		return true
	}
	for _, s := range states {
		if strings.EqualFold(s, state) {
			return true
		}
	}
	return false
}

func geonamesZips(open func(string) (io.ReadCloser, error)) (map[string]bool, error) {
	rc, err := open(data.PostalCodes)
	if err != nil {
		return nil, fmt.Errorf("gen: open %s: %w", data.PostalCodes, err)
	}
	defer rc.Close()
	out := make(map[string]bool, 42000)
	sc := bufio.NewScanner(rc)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) >= 2 && len(f[1]) == 5 {
			out[f[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gen: read %s: %w", data.PostalCodes, err)
	}
	return out, nil
}
