package indexer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// Geo matching of permits and properties.
//
// A permit is linked to the geographies its ZIP code belongs to. The ZIP's
// location (geo_id events.GeoID("zip", zip), written by the gazetteer)
// carries its hierarchy: city, jurisdiction, main county and state. Each
// link has a confidence in 0..1 and a method naming how it was made:
//
//	zip           zc                    method source_zip or derived_zip
//	city          zc, x0.85 when the    zip_city
//	              permit's own city names another place
//	jurisdiction  as city               zip_jurisdiction
//	county        zc, x0.9 when the ZIP zip_county
//	              spans several counties
//	state         1 (the address's own  source_state
//	              state; not derived from the ZIP)
//	property      1                     address (the producer's PropertyID)
//
// zc is the producer's zip_confidence; when absent it is 1 for a ZIP the
// source gave and 0.6 for a derived one (zip_source "nearest_zip"). A
// derived ZIP therefore lowers the confidence of every ZIP-derived link.
//
// A ZIP without a location (not in the gazetteer, or not yet indexed) is
// not an error: the permit is linked to what can be known without it (its
// state and property) and keeps its source address. Re-publishing the
// permit after the ZIP exists links it fully.
//
// Errors: a payload that breaks the contract wraps events.ErrInvalid (dead
// letter); a lookup failure other than readmodel.ErrNotFound is returned
// as is (transient: the batch is retried).

// Link methods.
const (
	MethodSourceZip       = "source_zip"
	MethodDerivedZip      = "derived_zip"
	MethodZipCity         = "zip_city"
	MethodZipJurisdiction = "zip_jurisdiction"
	MethodZipCounty       = "zip_county"
	MethodSourceState     = "source_state"
	MethodAddress         = "address"
)

// Confidence factors of the geo matching (see the table above).
const (
	derivedZipConfidence = 0.6
	otherCityFactor      = 0.85
	multiCountyFactor    = 0.9
)

// isStateCode reports whether s is two ASCII letters (either case: the
// projection upper-cases it).
func isStateCode(s string) bool {
	return len(s) == 2 && isLetter(s[0]) && isLetter(s[1])
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// isZip reports whether s is five ASCII digits.
func isZip(s string) bool {
	if len(s) != 5 {
		return false
	}
	for i := range 5 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ProjectPermit maps a permit.upserted envelope to its document, linked to
// its geographies (see the package comment on geo matching).
func ProjectPermit(ctx context.Context, env events.Envelope, look Lookup) (readmodel.Permit, error) {
	d, err := events.Payload[events.Permit](env)
	if err != nil {
		return readmodel.Permit{}, err
	}
	if err := validatePermit(env, d); err != nil {
		return readmodel.Permit{}, fmt.Errorf("%w: permit %s: %v", events.ErrInvalid, env.EntityID, err)
	}
	state := strings.ToUpper(d.Address.State)
	p := readmodel.Permit{
		PermitID:        env.EntityID,
		PermitNumber:    d.PermitNumber,
		PermitType:      d.PermitType,
		WorkType:        d.WorkType,
		Status:          d.Status,
		ApplicationDate: d.ApplicationDate,
		IssueDate:       d.IssueDate,
		CompletionDate:  d.CompletionDate,
		RawDescription:  d.Description,
		Contractor:      d.Contractor,
		Valuation:       d.Valuation,
		Source:          d.Source,
		Address: readmodel.Address{
			FullAddress: fullAddress(d.Address),
			City:        d.Address.City,
			State:       state,
			Zipcode:     d.Address.Zipcode,
		},
		Lat:        d.Lat,
		Lon:        d.Lon,
		PropertyID: d.PropertyID,
		Version:    env.EntityVersion,
	}
	p.GeoLinks = make([]readmodel.GeoLink, 0, 6) // property, ZIP, city, jurisdiction, county, state
	if d.PropertyID != "" {
		p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{
			GeoID: d.PropertyID, GeoType: readmodel.GeoProperty, Confidence: 1, Method: MethodAddress,
		})
	}
	zc := zipConfidence(d.Address)
	links, zipLoc, found, err := matchZip(ctx, look, p.GeoLinks, d.Address.Zipcode, d.Address.City, d.Address.ZipSource, zc)
	if err != nil {
		return readmodel.Permit{}, err
	}
	p.GeoLinks = links
	if found {
		p.Address.Zipcode = tableCopy(p.Address.Zipcode, zipLoc.Zipcode)
		if p.Address.City == "" {
			p.Address.City = zipLoc.City
		}
		p.Address.County = zipLoc.County
		p.Address.Jurisdiction = zipLoc.Jurisdiction
	}
	p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{
		GeoID: stateIDs.of(state), GeoType: readmodel.GeoState, Confidence: 1, Method: MethodSourceState,
	})
	return p, nil
}

// ProjectProperty maps a property.upserted envelope to its document,
// linked to its ZIP's geographies like a permit with a source ZIP.
func ProjectProperty(ctx context.Context, env events.Envelope, look Lookup) (readmodel.Property, error) {
	d, err := events.Payload[events.Property](env)
	if err != nil {
		return readmodel.Property{}, err
	}
	if err := validateProperty(env, d); err != nil {
		return readmodel.Property{}, fmt.Errorf("%w: property %s: %v", events.ErrInvalid, env.EntityID, err)
	}
	state := strings.ToUpper(d.State)
	p := readmodel.Property{
		PropertyID:        env.EntityID,
		CanonicalAddress:  d.CanonicalAddress,
		NormalizedAddress: d.NormalizedAddress,
		City:              d.City,
		State:             state,
		Zipcode:           d.Zipcode,
		ParcelID:          d.ParcelID,
		Lat:               d.Lat,
		Lon:               d.Lon,
		Version:           env.EntityVersion,
	}
	links, zipLoc, found, err := matchZip(ctx, look, make([]readmodel.GeoLink, 0, 5), d.Zipcode, d.City, "source", 1)
	if err != nil {
		return readmodel.Property{}, err
	}
	if found {
		p.Zipcode = tableCopy(p.Zipcode, zipLoc.Zipcode)
	}
	p.GeoLinks = append(links, readmodel.GeoLink{
		GeoID: stateIDs.of(state), GeoType: readmodel.GeoState, Confidence: 1, Method: MethodSourceState,
	})
	return p, nil
}

// tableCopy returns canon, the location table's string, when it equals
// s, and s otherwise. The memory backend interns a document's ZIP (and a
// lead's) through a cache keyed by the string's address
// (readmodel/memory's symCache): the table's string is one address per
// ZIP, where an event's is a new one unless the decoder's small cache
// kept it. Counted over a BenchmarkHandleMix round (491,489 events): the
// symbols that missed that cache and were looked up in the side's map
// fell from 391,769 to 197,872, five-byte ones from 225,049 to 40,452
// (docs/kafka-history.md, "Sixty-second session").
func tableCopy(s, canon string) string {
	if s == canon {
		return canon
	}
	return s
}

// zipConfidence is the confidence of the permit's ZIP.
func zipConfidence(a events.PermitAddress) float64 {
	if a.ZipConfidence > 0 {
		return a.ZipConfidence
	}
	if derivedZip(a.ZipSource) {
		return derivedZipConfidence
	}
	return 1
}

func derivedZip(source string) bool { return source != "" && source != "source" }

// matchZip appends the links of a ZIP and its hierarchy to links, and
// returns the ZIP's location (by value: a pointer would cost a heap copy
// of it per permit). It appends none (and returns found false) when zip
// is empty or has no location.
func matchZip(ctx context.Context, look Lookup, links []readmodel.GeoLink, zip, city, zipSource string, zc float64) (_ []readmodel.GeoLink, loc readmodel.Location, found bool, err error) {
	if zip == "" {
		return links, loc, false, nil
	}
	if look == nil {
		return links, loc, false, errors.New("indexer: permit projection needs a Lookup")
	}
	loc, err = look.Location(ctx, readmodel.ParseGeoRef(zipIDs.of(zip)))
	if errors.Is(err, readmodel.ErrNotFound) {
		return links, loc, false, nil
	}
	if err != nil {
		return links, loc, false, fmt.Errorf("indexer: look up ZIP %s: %w", zip, err)
	}
	method := MethodSourceZip
	if derivedZip(zipSource) {
		method = MethodDerivedZip
	}
	links = append(links, readmodel.GeoLink{GeoID: loc.GeoID, GeoType: readmodel.GeoZip, Confidence: zc, Method: method})
	cityConf := zc
	if city != "" && loc.City != "" && !sameName(city, loc.City) {
		cityConf = zc * otherCityFactor
	}
	if loc.CityGeoID != "" {
		links = append(links, readmodel.GeoLink{GeoID: loc.CityGeoID, GeoType: readmodel.GeoCity, Confidence: round6(cityConf), Method: MethodZipCity})
	}
	if loc.JurisdictionGeoID != "" {
		links = append(links, readmodel.GeoLink{GeoID: loc.JurisdictionGeoID, GeoType: readmodel.GeoJurisdiction, Confidence: round6(cityConf), Method: MethodZipJurisdiction})
	}
	if loc.CountyGeoID != "" {
		c := zc
		if len(loc.CountyGeoIDs) > 1 {
			c = zc * multiCountyFactor
		}
		links = append(links, readmodel.GeoLink{GeoID: loc.CountyGeoID, GeoType: readmodel.GeoCounty, Confidence: round6(c), Method: MethodZipCounty})
	}
	return links, loc, true, nil
}

// sameName compares place names ignoring case, dots and runs of spaces
// ("St. Paul" = "ST PAUL"), without allocating for ASCII names.
func sameName(a, b string) bool {
	// Names that differ at most in the case of ASCII letters, byte for
	// byte ("SEATTLE" and "Seattle", the common case), are the same name
	// however it is normalised: one pass, no skipping.
	if len(a) == len(b) {
		k := 0
		for k < len(a) && upper(a[k]) == upper(b[k]) {
			k++
		}
		if k == len(a) {
			return true
		}
	}
	i, j := 0, 0
	for {
		i, j = skipName(a, i), skipName(b, j)
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		ca, cb := a[i], b[j]
		if ca >= 0x80 || cb >= 0x80 {
			return sameNameSlow(a, b)
		}
		if isSpace(ca) || isSpace(cb) {
			// a run of spaces (inner: skipName drops leading and
			// trailing ones) matches a run of spaces only.
			if isSpace(ca) != isSpace(cb) {
				return false
			}
			for i < len(a) && (isSpace(a[i]) || a[i] == '.') {
				i++
			}
			for j < len(b) && (isSpace(b[j]) || b[j] == '.') {
				j++
			}
			if (i == len(a)) != (j == len(b)) {
				return sameNameSlow(a, b)
			}
			continue
		}
		if upper(ca) != upper(cb) {
			return false
		}
		i++
		j++
	}
}

// skipName skips dots, and spaces at the start or the end of s.
func skipName(s string, i int) int {
	for i < len(s) && s[i] == '.' {
		i++
	}
	if i == 0 || onlySpace(s[i:]) {
		for i < len(s) && (isSpace(s[i]) || s[i] == '.') {
			i++
		}
	}
	return i
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func onlySpace(s string) bool {
	for k := 0; k < len(s); k++ {
		if !isSpace(s[k]) && s[k] != '.' {
			return false
		}
	}
	return true
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func sameNameSlow(a, b string) bool {
	norm := func(s string) string {
		s = strings.ToUpper(strings.TrimSpace(s))
		s = strings.ReplaceAll(s, ".", "")
		return strings.Join(strings.Fields(s), " ")
	}
	return norm(a) == norm(b)
}

func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

func fullAddress(a events.PermitAddress) string {
	line, state := strings.TrimSpace(a.Line), strings.ToUpper(a.State)
	n := len(line) // the length, so that the builder allocates once
	if a.City != "" {
		n += len(", ") + len(a.City)
	}
	if state != "" {
		n += len(", ") + len(state)
	}
	if a.Zipcode != "" {
		n += len(" ") + len(a.Zipcode)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(line)
	if a.City != "" {
		b.WriteString(", ")
		b.WriteString(a.City)
	}
	if state != "" {
		b.WriteString(", ")
		b.WriteString(state)
	}
	if a.Zipcode != "" {
		b.WriteString(" ")
		b.WriteString(a.Zipcode)
	}
	return b.String()
}

func validatePermit(env events.Envelope, d *events.Permit) error {
	switch {
	case strings.TrimSpace(d.PermitNumber) == "":
		return errors.New("permit_number is required")
	case d.Source == "":
		return errors.New("source is required")
	case !events.IsPermitDocID(env.EntityID, d.Source, d.PermitNumber):
		return fmt.Errorf("entity_id must be %q", events.PermitDocID(d.Source, d.PermitNumber))
	case d.PermitType == "":
		return errors.New("permit_type is required")
	case !isStateCode(d.Address.State):
		return fmt.Errorf("address.state %q is not a two-letter code", d.Address.State)
	case d.Address.Zipcode != "" && !isZip(d.Address.Zipcode):
		return fmt.Errorf("address.zipcode %q is not 5 digits", d.Address.Zipcode)
	case d.Address.ZipConfidence < 0 || d.Address.ZipConfidence > 1 || math.IsNaN(d.Address.ZipConfidence):
		return errors.New("address.zip_confidence must be in 0..1")
	case d.PropertyID != "" && !readmodel.IsPropertyID(d.PropertyID):
		return fmt.Errorf("property_id %q does not match prop_ + 32 hex", d.PropertyID)
	case d.Valuation != nil && (*d.Valuation < 0 || math.IsInf(*d.Valuation, 0) || math.IsNaN(*d.Valuation)):
		return errors.New("valuation must be a finite non-negative number or null")
	}
	for _, f := range [...]struct{ name, v string }{
		{"application_date", d.ApplicationDate}, {"issue_date", d.IssueDate},
		{"completion_date", d.CompletionDate}, {"expiration_date", d.ExpirationDate},
	} {
		if !validDate(f.v) {
			return fmt.Errorf("%s %q is not a YYYY-MM-DD date", f.name, f.v)
		}
	}
	return validLatLon(d.Lat, d.Lon)
}

func validateProperty(env events.Envelope, d *events.Property) error {
	switch {
	case !readmodel.IsPropertyID(env.EntityID):
		return errors.New("entity_id does not match prop_ + 32 hex")
	case strings.TrimSpace(d.CanonicalAddress) == "":
		return errors.New("canonical_address is required")
	case strings.TrimSpace(d.NormalizedAddress) == "":
		return errors.New("normalized_address is required")
	case !isStateCode(d.State):
		return fmt.Errorf("state %q is not a two-letter code", d.State)
	case d.Zipcode != "" && !isZip(d.Zipcode):
		return fmt.Errorf("zipcode %q is not 5 digits", d.Zipcode)
	}
	return validLatLon(d.Lat, d.Lon)
}

// validDate reports whether s is empty or a calendar date YYYY-MM-DD.
func validDate(s string) bool { return s == "" || readmodel.IsDay(s) }

func validLatLon(lat, lon *float64) error {
	if (lat == nil) != (lon == nil) {
		return errors.New("lat and lon must both be given or both be null")
	}
	if lat != nil && (*lat < -90 || *lat > 90 || *lon < -180 || *lon > 180 || math.IsNaN(*lat) || math.IsNaN(*lon)) {
		return errors.New("lat/lon out of range")
	}
	return nil
}
