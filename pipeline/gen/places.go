package gen

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/readmodel/address"
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
	rc, err := open(data.Cities)
	if err != nil {
		return nil, fmt.Errorf("gen: open %s: %w", data.Cities, err)
	}
	defer rc.Close()
	cr := csv.NewReader(rc)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("gen: read %s: %w", data.Cities, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	need := []string{"city_ascii", "state_id", "lat", "lng", "population", "zips"}
	for _, c := range need {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("gen: %s: no %s column", data.Cities, c)
		}
	}
	var out []place
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("gen: read %s: %w", data.Cities, err)
		}
		if len(rec) != len(header) {
			continue
		}
		pop, err := strconv.ParseFloat(rec[col["population"]], 64)
		if err != nil || pop <= 0 {
			continue
		}
		lat, err1 := strconv.ParseFloat(rec[col["lat"]], 64)
		lon, err2 := strconv.ParseFloat(rec[col["lng"]], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		var zips []string
		for _, z := range strings.Fields(rec[col["zips"]]) {
			if known[z] {
				zips = append(zips, z)
			}
		}
		city := address.NormalizeCity(rec[col["city_ascii"]])
		state := rec[col["state_id"]]
		if len(zips) == 0 || city == "" || len(state) != 2 || !inStates(state, states) {
			continue
		}
		out = append(out, place{city: city, state: state, lat: lat, lon: lon, zips: zips, weight: pop})
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
