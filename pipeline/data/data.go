// Package data bundles the real public data permitd ships: gzip-compressed
// copies of the US gazetteer sources and the City of Seattle permit
// exports, embedded in the binary so users need no external files. See
// README.md for how the copies were made and NOTICE.md for attribution.
package data

import (
	"compress/gzip"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Names of the bundled files, as Open accepts them (the original file
// names, without the .gz the embedded copies carry).
const (
	// Counties is the US Census Bureau 2017 Gazetteer of counties (3,220
	// rows incl. Puerto Rico municipios), pipe-separated with a header:
	// USPS|GEOID|ANSICODE|NAME|ALAND|AWATER|ALAND_SQMI|AWATER_SQMI|INTPTLAT|INTPTLONG.
	Counties = "us_counties_census_gazetteer_2017.psv"
	// Cities is simplemaps US Cities Basic (cities and CDPs), CSV with a
	// header; zips is a space-separated list.
	Cities = "us_cities_simplemaps_basic.csv"
	// PostalCodes is the GeoNames US postal codes dump: tab-separated, no
	// header: country, zip, place, state_name, state, county_name,
	// county_code (3 digits), admin3, admin3code, lat, lon, accuracy.
	PostalCodes = "us_postal_codes_geonames.tsv"
	// ZipCounties lists every county a ZIP touches (USDA NRCS): CSV
	// zip,fips,county,state with a header.
	ZipCounties = "us_zip_county_fips_usda.csv"
	// SeattleCommercialPermits is the City of Seattle commercial building
	// permits 2010-2015 export.
	SeattleCommercialPermits = "seattle_commercial_permits_2010_2015.csv"
	// SeattleMultifamilyPermits is the City of Seattle SDCI multifamily
	// building permits 2013-2025 snapshot.
	SeattleMultifamilyPermits = "seattle_multifamily_permits_2013_2025.csv"
)

// Names lists every bundled file in a fixed order.
var Names = []string{Counties, Cities, PostalCodes, ZipCounties, SeattleCommercialPermits, SeattleMultifamilyPermits}

//go:embed *.gz
var files embed.FS

// Open returns the decompressed contents of the bundled file name (one of
// the name constants). An unknown name yields an error wrapping
// fs.ErrNotExist. The caller closes the reader; reading it to the end also
// verifies the gzip checksum.
func Open(name string) (io.ReadCloser, error) {
	f, err := files.Open(name + ".gz")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("data: %q is not bundled: %w", name, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("data: open %q: %w", name, err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data: %q: %w", name, err)
	}
	return &reader{zr: zr, f: f}, nil
}

type reader struct {
	zr *gzip.Reader
	f  fs.File
}

func (r *reader) Read(p []byte) (int, error) { return r.zr.Read(p) }

func (r *reader) Close() error {
	return errors.Join(r.zr.Close(), r.f.Close())
}
