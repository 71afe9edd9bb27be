package gazetteer

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/permitd/permitd/pipeline/data"
)

// Source rows, as parsed. Every row a parser does not keep is counted in
// the Report with its file, line and reason.

type countyRow struct {
	line     int
	fips     string // 5 digits
	state    string // USPS code
	name     string // "King County"
	lat, lon float64
	landSqmi float64
}

type placeRow struct {
	line         int
	id           string // simplemaps id
	name         string // "La Cañada Flintridge"
	ascii        string // "La Canada Flintridge"
	state        string
	stateName    string
	countyFIPS   string // 5 digits, after remapping
	lat, lon     float64
	population   int64
	incorporated bool
	zips         []string
}

type postalRow struct {
	line       int
	zip        string
	place      string
	state      string
	stateName  string
	countyCode string // 3 digits, may be empty
	lat, lon   float64
}

// zipCountyRow is one USDA (zip, county) pair.
type zipCountyRow struct {
	line int
	zip  string
	fips string
}

// countyRemap maps county FIPS codes that the 2017 Census file does not
// know to the 2017 county that covers them:
//   - 02063 Chugach and 02066 Copper River Census Areas were split from
//     02261 Valdez-Cordova Census Area in 2019 (simplemaps, GeoNames);
//   - 02270 Wade Hampton Census Area was renamed 02158 Kusilvak (2015);
//   - 46113 Shannon County was renamed 46102 Oglala Lakota (2015).
//
// Connecticut's 2022 planning regions (091xx, GeoNames) have no one-to-one
// county; ZIPs there fall back to the USDA county (see buildZips).
var countyRemap = map[string]string{
	"02063": "02261",
	"02066": "02261",
	"02270": "02158",
	"46113": "46102",
}

func openSource(open func(string) (io.ReadCloser, error), name string) (io.ReadCloser, error) {
	rc, err := open(name)
	if err != nil {
		return nil, fmt.Errorf("gazetteer: open %s: %w", name, err)
	}
	return rc, nil
}

func isDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < n; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseLatLon(lat, lon string) (float64, float64, bool) {
	la, err1 := strconv.ParseFloat(strings.TrimSpace(lat), 64)
	lo, err2 := strconv.ParseFloat(strings.TrimSpace(lon), 64)
	if err1 != nil || err2 != nil || la < -90 || la > 90 || lo < -180 || lo > 180 {
		return 0, 0, false
	}
	return la, lo, true
}

const countiesHeader = "USPS|GEOID|ANSICODE|NAME|ALAND|AWATER|ALAND_SQMI|AWATER_SQMI|INTPTLAT|INTPTLONG"

func readCounties(r io.Reader, rep *Report) ([]countyRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []countyRow
	seen := map[string]bool{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			if text != countiesHeader {
				return nil, fmt.Errorf("gazetteer: %s: unexpected header %q", data.Counties, text)
			}
			continue
		}
		f := strings.Split(text, "|")
		if len(f) != 10 {
			rep.skip(data.Counties, "malformed_row", line)
			continue
		}
		c := countyRow{line: line, state: f[0], fips: f[1], name: strings.TrimSpace(f[3])}
		if !isDigits(c.fips, 5) || len(c.state) != 2 || c.name == "" {
			rep.skip(data.Counties, "malformed_row", line)
			continue
		}
		var ok bool
		if c.lat, c.lon, ok = parseLatLon(f[8], f[9]); !ok {
			rep.skip(data.Counties, "bad_coordinates", line)
			continue
		}
		c.landSqmi, _ = strconv.ParseFloat(f[6], 64)
		if seen[c.fips] {
			rep.skip(data.Counties, "duplicate_fips", line)
			continue
		}
		seen[c.fips] = true
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gazetteer: read %s: %w", data.Counties, err)
	}
	return out, nil
}

// eachCSVRow reads the CSV file named file from r: it checks the header
// line against header and calls row for every data record with its
// 1-based line (rec is reused between calls). A record the CSV reader
// cannot parse is counted as a malformed_row.
func eachCSVRow(r io.Reader, file string, header []string, rep *Report, row func(line int, rec []string)) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				rep.skip(file, "malformed_row", pe.StartLine)
				continue
			}
			return fmt.Errorf("gazetteer: read %s: %w", file, err)
		}
		line, _ := cr.FieldPos(0)
		if line == 1 {
			if !slices.Equal(rec, header) {
				return fmt.Errorf("gazetteer: %s: unexpected header %q", file, rec)
			}
			continue
		}
		row(line, rec)
	}
}

var citiesHeader = []string{"city", "city_ascii", "state_id", "state_name", "county_fips", "county_name", "lat", "lng", "population", "density", "source", "military", "incorporated", "timezone", "ranking", "zips", "id"}

// readPlaces parses the simplemaps file. County codes are zero-padded
// (simplemaps drops the leading zero) and remapped; whether the county
// exists is checked by the builder.
func readPlaces(r io.Reader, rep *Report) ([]placeRow, error) {
	var out []placeRow
	seen := map[string]bool{}
	err := eachCSVRow(r, data.Cities, citiesHeader, rep, func(line int, rec []string) {
		if len(rec) != len(citiesHeader) {
			rep.skip(data.Cities, "malformed_row", line)
			return
		}
		if strings.Join(rec, "") == "" {
			rep.skip(data.Cities, "empty_row", line)
			return
		}
		p := placeRow{
			line: line, name: strings.TrimSpace(rec[0]), ascii: strings.TrimSpace(rec[1]),
			state: rec[2], stateName: strings.TrimSpace(rec[3]), id: rec[16],
		}
		if p.id == "" || p.name == "" || p.stateName == "" {
			rep.skip(data.Cities, "malformed_row", line)
			return
		}
		if !isStateCode(p.state) {
			rep.skip(data.Cities, "bad_state_code", line)
			return
		}
		if seen[p.id] {
			rep.skip(data.Cities, "duplicate_id", line)
			return
		}
		fips := rec[4]
		if len(fips) == 4 {
			fips = "0" + fips
		}
		if !isDigits(fips, 5) {
			rep.skip(data.Cities, "malformed_county_fips", line)
			return
		}
		if to, ok := countyRemap[fips]; ok {
			rep.adjust("city_county_remapped")
			fips = to
		}
		p.countyFIPS = fips
		var ok bool
		if p.lat, p.lon, ok = parseLatLon(rec[6], rec[7]); !ok {
			rep.skip(data.Cities, "bad_coordinates", line)
			return
		}
		if rec[8] != "" {
			pop, err := strconv.ParseFloat(rec[8], 64)
			if err != nil || pop < 0 {
				rep.skip(data.Cities, "bad_population", line)
				return
			}
			p.population = int64(pop)
		}
		switch rec[12] {
		case "TRUE":
			p.incorporated = true
		case "FALSE":
		default:
			rep.skip(data.Cities, "bad_incorporated_flag", line)
			return
		}
		if p.ascii == "" {
			p.ascii = fold(p.name)
		}
		p.zips = strings.Fields(rec[15])
		seen[p.id] = true
		out = append(out, p)
	})
	return out, err
}

// isStateCode reports whether s is a USPS code as the event contract has
// it: two upper-case ASCII letters.
func isStateCode(s string) bool {
	return len(s) == 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z'
}

// readPostal parses the GeoNames file (no header). State and county
// checks are the builder's.
func readPostal(r io.Reader, rep *Report) ([]postalRow, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []postalRow
	line := 0
	for sc.Scan() {
		line++
		f := strings.Split(strings.TrimRight(sc.Text(), "\r"), "\t")
		if len(f) != 12 || f[0] != "US" || !isDigits(f[1], 5) {
			rep.skip(data.PostalCodes, "malformed_row", line)
			continue
		}
		p := postalRow{
			line: line, zip: f[1], place: strings.TrimSpace(f[2]),
			stateName: strings.TrimSpace(f[3]), state: f[4], countyCode: f[6],
		}
		var ok bool
		if p.lat, p.lon, ok = parseLatLon(f[9], f[10]); !ok {
			rep.skip(data.PostalCodes, "bad_coordinates", line)
			continue
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gazetteer: read %s: %w", data.PostalCodes, err)
	}
	return out, nil
}

// readZipCounties parses the USDA file; remapping and existence checks are
// the builder's.
func readZipCounties(r io.Reader, rep *Report) ([]zipCountyRow, error) {
	var out []zipCountyRow
	err := eachCSVRow(r, data.ZipCounties, zipCountiesHeader, rep, func(line int, rec []string) {
		if len(rec) != 4 || !isDigits(rec[0], 5) || !isDigits(rec[1], 5) {
			rep.skip(data.ZipCounties, "malformed_row", line)
			return
		}
		out = append(out, zipCountyRow{line: line, zip: rec[0], fips: rec[1]})
	})
	return out, err
}

var zipCountiesHeader = []string{"zip", "fips", "county", "state"}
