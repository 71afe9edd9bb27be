package api

import (
	"strings"
	"time"

	jx "github.com/permitd/permitd/api/internal/jsonenc"
	"github.com/permitd/permitd/readmodel"
)

// The v1 response encoders. Each appends one response body exactly as
// encoding/json would write the reference structs kept in
// reference_test.go (TestEncodersAgree compares them), without reflection
// and without an allocation per item.

func appendResolve(b []byte, text string, cands []readmodel.Candidate) []byte {
	b = append(b, `{"query":`...)
	b = jx.String(b, text)
	b = append(b, `,"count":`...)
	b = jx.Int(b, int64(len(cands)))
	b = append(b, `,"candidates":[`...)
	for i := range cands {
		cd := &cands[i]
		l := &cd.Location
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLocationHead(b, l)
		b = append(b, `,"score":`...)
		b = jx.Float(b, round4(cd.Score))
		b = append(b, `,"confidence":`...)
		b = jx.Float(b, round4(cd.Confidence))
		b = append(b, `,"match_method":`...)
		b = jx.String(b, cd.MatchMethod)
		b = append(b, `,"decision":`...)
		b = jx.String(b, cd.Decision)
		b = append(b, `,"reasons":`...)
		b = jx.Strings(b, cd.Reasons)
		b = appendPlace(b, l)
		// lat and lon are null for a location without coordinates (both
		// 0: no US location lies there).
		if l.Lat == 0 && l.Lon == 0 {
			b = append(b, `,"lat":null,"lon":null}`...)
			continue
		}
		b = append(b, `,"lat":`...)
		b = jx.Float(b, l.Lat)
		b = append(b, `,"lon":`...)
		b = jx.Float(b, l.Lon)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendLocationHead opens a location object with the members that name
// it: geo_id, geo_type and display_name.
func appendLocationHead(b []byte, l *readmodel.Location) []byte {
	b = append(b, `{"geo_id":`...)
	b = jx.String(b, l.GeoID)
	b = append(b, `,"geo_type":`...)
	b = jx.String(b, string(l.GeoType))
	b = append(b, `,"display_name":`...)
	return jx.String(b, l.DisplayName)
}

func appendLocation(b []byte, l *readmodel.Location) []byte {
	b = appendLocationHead(b, l)
	b = append(b, `,"full_address":`...)
	b = jx.NullString(b, l.FullAddress)
	b = appendPlace(b, l)
	b = append(b, `,"lat":`...)
	b = jx.Float(b, l.Lat)
	b = append(b, `,"lon":`...)
	b = jx.Float(b, l.Lon)
	b = append(b, `,"permit_count":`...)
	b = jx.Int(b, l.PermitCount)
	b = append(b, `,"latest_permit_date":`...)
	b = jx.NullString(b, l.LatestPermitDate)
	return append(b, '}')
}

// appendPlace appends the members that place a location, state to
// jurisdiction, each null when unknown.
func appendPlace(b []byte, l *readmodel.Location) []byte {
	b = append(b, `,"state":`...)
	b = jx.NullString(b, l.State)
	b = append(b, `,"county":`...)
	b = jx.NullString(b, l.County)
	b = append(b, `,"city":`...)
	b = jx.NullString(b, l.City)
	b = append(b, `,"zipcode":`...)
	b = jx.NullString(b, l.Zipcode)
	b = append(b, `,"jurisdiction":`...)
	return jx.NullString(b, l.Jurisdiction)
}

// appendCursor appends the next_cursor member's value.
func appendCursor(b []byte, next *string) []byte {
	if next == nil {
		return append(b, "null"...)
	}
	return jx.String(b, *next)
}

// appendPermitHead opens a permit record and writes the members every
// permit record starts with, permit_id to source.
func appendPermitHead(b []byte, p *readmodel.Permit) []byte {
	b = append(b, `{"permit_id":`...)
	b = jx.String(b, p.PermitID)
	b = append(b, `,"permit_type":`...)
	b = jx.NullString(b, p.PermitType)
	b = append(b, `,"work_type":`...)
	b = jx.NullString(b, p.WorkType)
	b = append(b, `,"status":`...)
	b = jx.NullString(b, p.Status)
	b = append(b, `,"issue_date":`...)
	b = jx.NullString(b, p.IssueDate)
	b = append(b, `,"completion_date":`...)
	b = jx.NullString(b, p.CompletionDate)
	b = append(b, `,"contractor":`...)
	b = jx.NullString(b, p.Contractor)
	b = append(b, `,"valuation":`...)
	b = jx.NullFloat(b, p.Valuation)
	b = append(b, `,"raw_description":`...)
	b = jx.NullString(b, p.RawDescription)
	b = append(b, `,"source":`...)
	b = jx.String(b, p.Source)
	return b
}

func appendPermits(b []byte, geoID string, hits []readmodel.PermitHit, next *string) []byte {
	b = append(b, `{"geo_id":`...)
	b = jx.NullString(b, geoID) // null: a geometry without geo_id
	b = append(b, `,"count":`...)
	b = jx.Int(b, int64(len(hits)))
	b = append(b, `,"permits":[`...)
	for i := range hits {
		p, m := &hits[i].Permit, &hits[i].Match
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPermitHead(b, p)
		b = append(b, `,"location":{"full_address":`...)
		b = jx.NullString(b, p.Address.FullAddress)
		b = append(b, `,"city":`...)
		b = jx.NullString(b, p.Address.City)
		b = append(b, `,"state":`...)
		b = jx.NullString(b, p.Address.State)
		b = append(b, `,"zipcode":`...)
		b = jx.NullString(b, p.Address.Zipcode)
		b = append(b, `,"county":`...)
		b = jx.NullString(b, p.Address.County)
		b = append(b, `,"jurisdiction":`...)
		b = jx.NullString(b, p.Address.Jurisdiction)
		b = append(b, `},"lat":`...)
		b = jx.NullFloat(b, p.Lat)
		b = append(b, `,"lon":`...)
		b = jx.NullFloat(b, p.Lon)
		b = append(b, `,"distance_m":`...)
		b = jx.NullFloat(b, hits[i].DistanceM)
		if geoID == "" {
			b = append(b, `,"geo_match":null}`...)
			continue
		}
		b = append(b, `,"geo_match":{"geo_id":`...)
		b = jx.String(b, m.GeoID)
		b = append(b, `,"geo_type":`...)
		b = jx.String(b, string(m.GeoType))
		b = append(b, `,"confidence":`...)
		b = jx.Float(b, round4(clamp01(m.Confidence)))
		b = append(b, "}}"...)
	}
	b = append(b, `],"next_cursor":`...)
	b = appendCursor(b, next)
	return append(b, '}')
}

func appendProperty(b []byte, addr string, m *readmodel.PropertyMatch) []byte {
	p := &m.Property
	b = append(b, `{"property_id":`...)
	b = jx.String(b, p.PropertyID)
	b = append(b, `,"canonical_address":`...)
	b = jx.String(b, p.CanonicalAddress)
	b = append(b, `,"match_confidence":`...)
	b = jx.Float(b, round4(clamp01(m.MatchConfidence)))
	b = append(b, `,"match_metadata":{"match_type":`...)
	b = jx.String(b, m.MatchType)
	b = append(b, `,"input_address":`...)
	b = jx.String(b, addr)
	b = append(b, `,"normalized_input_address":`...)
	b = jx.String(b, m.NormalizedInput)
	b = append(b, `,"matched_fields":`...)
	b = jx.Strings(b, m.MatchedFields)
	b = append(b, `},"lat":`...)
	b = jx.NullFloat(b, p.Lat)
	b = append(b, `,"lon":`...)
	b = jx.NullFloat(b, p.Lon)
	b = append(b, `,"state":`...)
	b = jx.NullString(b, p.State)
	b = append(b, `,"city":`...)
	b = jx.NullString(b, p.City)
	b = append(b, `,"parcel_id":`...)
	b = jx.NullString(b, p.ParcelID)
	return append(b, '}')
}

func appendPropertyPermits(b []byte, id string, hits []readmodel.PermitHit, next *string) []byte {
	b = append(b, `{"property_id":`...)
	b = jx.String(b, id)
	b = append(b, `,"count":`...)
	b = jx.Int(b, int64(len(hits)))
	b = append(b, `,"permits":[`...)
	for i := range hits {
		p := &hits[i].Permit
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPermitHead(b, p)
		b = append(b, '}')
	}
	b = append(b, `],"next_cursor":`...)
	b = appendCursor(b, next)
	return append(b, '}')
}

func appendCatalog(b []byte, state string, entries []readmodel.CatalogEntry) []byte {
	b = append(b, `{"state":`...)
	b = jx.String(b, state)
	b = append(b, `,"count":`...)
	b = jx.Int(b, int64(len(entries)))
	b = append(b, `,"signals":[`...)
	for i := range entries {
		e := &entries[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"signal_key":`...)
		b = jx.String(b, e.SignalKey)
		b = append(b, `,"active_signal_version":`...)
		b = jx.String(b, e.ActiveSignalVersion)
		b = append(b, `,"active_weights_profile_id":`...)
		b = jx.String(b, e.ActiveWeightsProfileID)
		b = append(b, `,"status":`...)
		b = jx.String(b, e.Status)
		b = append(b, `,"spec":`...)
		b = jx.Raw(b, e.Spec, "{}")
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendGeoSignalFields appends a geo signal row's members without the
// closing brace.
func appendGeoSignalFields(b []byte, g *readmodel.GeoSignal) []byte {
	b = append(b, `{"signal_key":`...)
	b = jx.String(b, g.SignalKey)
	b = append(b, `,"value":`...)
	b = jx.Raw(b, g.Value, "{}")
	b = append(b, `,"score":`...)
	b = jx.Float(b, g.Score)
	b = append(b, `,"confidence":`...)
	b = jx.Float(b, g.Confidence)
	b = append(b, `,"decision":`...)
	b = jx.String(b, g.Decision)
	b = append(b, `,"reasons":`...)
	b = jx.Strings(b, g.Reasons)
	b = append(b, `,"computed_at":"`...)
	b = g.ComputedAt.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

func appendGeoLocationSignals(b []byte, id string, ls *readmodel.LocationSignals, keys []string) []byte {
	b = append(b, `{"geo_id":`...)
	b = jx.String(b, id)
	b = append(b, `,"geo_type":`...)
	b = jx.String(b, string(ls.GeoType))
	b = append(b, `,"state":`...)
	b = jx.NullString(b, strings.ToUpper(ls.State))
	b = append(b, `,"count":`...)
	b = jx.Int(b, int64(len(ls.Signals)))
	b = append(b, `,"signals":[`...)
	for i := range ls.Signals {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendGeoSignalFields(b, &ls.Signals[i])
		b = append(b, '}')
	}
	b = append(b, `],"missing_signal_keys":[`...)
	n := 0
	for _, k := range keys {
		found := false
		for j := range ls.Signals {
			if ls.Signals[j].SignalKey == k {
				found = true
				break
			}
		}
		if !found {
			if n > 0 {
				b = append(b, ',')
			}
			b = jx.String(b, k)
			n++
		}
	}
	return append(b, "]}"...)
}

func appendGeoSearch(b []byte, state string, rows []readmodel.GeoSignal, next *string) []byte {
	b = append(b, `{"state":`...)
	b = jx.String(b, state)
	b = append(b, `,"count":`...)
	b = jx.Int(b, int64(len(rows)))
	b = append(b, `,"signals":[`...)
	for i := range rows {
		g := &rows[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendGeoSignalFields(b, g)
		b = append(b, `,"geo_id":`...)
		b = jx.String(b, g.GeoID)
		b = append(b, `,"geo_type":`...)
		b = jx.String(b, string(g.GeoType))
		b = append(b, `,"display_name":`...)
		b = jx.String(b, g.DisplayName)
		b = append(b, '}')
	}
	b = append(b, `],"next_cursor":`...)
	b = appendCursor(b, next)
	return append(b, '}')
}

func appendErrorBody(b []byte, code, msg, requestID string) []byte {
	b = append(b, `{"error":{"code":`...)
	b = jx.String(b, code)
	b = append(b, `,"message":`...)
	b = jx.String(b, msg)
	b = append(b, `,"request_id":`...)
	b = jx.String(b, requestID)
	return append(b, "}}"...)
}

func appendGatewayBody(b []byte, msg string) []byte {
	b = append(b, `{"message":`...)
	b = jx.String(b, msg)
	return append(b, '}')
}

// freshnessLagDays is whole days from a YYYY-MM-DD date to today, clamped
// at 0; false for an empty or malformed date (as time.Parse with
// time.DateOnly would reject it).
func freshnessLagDays(date string, today time.Time) (int, bool) {
	if len(date) != 10 || date[4] != '-' || date[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(date[0:4])
	m, ok2 := digits(date[5:7])
	d, ok3 := digits(date[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(time.Month(m), y) {
		return 0, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	return max(int(today.Sub(t).Hours()/24), 0), true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
