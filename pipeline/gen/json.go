package gen

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/permitd/permitd/events"
)

// The generator encodes its payloads by hand: encoding/json's reflection
// was two thirds of the cost of a permit. The output is byte-identical to
// json.Marshal of the same value (TestJSONMatchesEncodingJSON checks every
// field), so events.DecodeData and the schemas see no difference.

// envelope is events.New with a payload already encoded.
func envelope(t events.Type, entityID string, occurred time.Time, data []byte) events.Envelope {
	return events.Envelope{
		SchemaVersion: events.SchemaVersion,
		EventID:       events.EventID(t, entityID, Version),
		Type:          t,
		EntityID:      entityID,
		EntityVersion: Version,
		OccurredAt:    occurred,
		Source:        Source,
		Data:          data,
	}
}

func appendPermit(b []byte, p *events.Permit) []byte {
	b = append(b, `{"permit_number":`...)
	b = appendString(b, p.PermitNumber)
	b = append(b, `,"permit_type":`...)
	b = appendString(b, p.PermitType)
	b = appendOptString(b, `,"work_type":`, p.WorkType)
	b = appendOptString(b, `,"action_type":`, p.ActionType)
	b = appendOptString(b, `,"status":`, p.Status)
	b = appendOptString(b, `,"application_date":`, p.ApplicationDate)
	b = appendOptString(b, `,"issue_date":`, p.IssueDate)
	b = appendOptString(b, `,"completion_date":`, p.CompletionDate)
	b = appendOptString(b, `,"expiration_date":`, p.ExpirationDate)
	b = appendOptString(b, `,"description":`, p.Description)
	if p.DescriptionDerived {
		b = append(b, `,"description_derived":true`...)
	}
	b = appendOptString(b, `,"contractor":`, p.Contractor)
	b = append(b, `,"valuation":`...)
	b = appendFloatPtr(b, p.Valuation)
	b = appendOptString(b, `,"valuation_note":`, p.ValuationNote)
	if p.HousingUnits != nil {
		b = append(b, `,"housing_units":`...)
		b = strconv.AppendInt(b, int64(*p.HousingUnits), 10)
	}
	b = append(b, `,"address":{"line":`...)
	a := &p.Address
	b = appendString(b, a.Line)
	b = appendOptString(b, `,"city":`, a.City)
	b = append(b, `,"state":`...)
	b = appendString(b, a.State)
	b = appendOptString(b, `,"zipcode":`, a.Zipcode)
	b = appendOptString(b, `,"zip_source":`, a.ZipSource)
	if a.ZipConfidence != 0 {
		b = append(b, `,"zip_confidence":`...)
		b = appendFloat(b, a.ZipConfidence)
	}
	b = append(b, `},"lat":`...)
	b = appendFloatPtr(b, p.Lat)
	b = append(b, `,"lon":`...)
	b = appendFloatPtr(b, p.Lon)
	b = appendOptString(b, `,"property_id":`, p.PropertyID)
	b = append(b, `,"source":`...)
	b = appendString(b, p.Source)
	b = appendOptString(b, `,"source_url":`, p.SourceURL)
	return append(b, '}')
}

func appendProperty(b []byte, p *events.Property) []byte {
	b = append(b, `{"canonical_address":`...)
	b = appendString(b, p.CanonicalAddress)
	b = append(b, `,"normalized_address":`...)
	b = appendString(b, p.NormalizedAddress)
	b = append(b, `,"city":`...)
	b = appendString(b, p.City)
	b = append(b, `,"state":`...)
	b = appendString(b, p.State)
	b = appendOptString(b, `,"zipcode":`, p.Zipcode)
	b = appendOptString(b, `,"parcel_id":`, p.ParcelID)
	b = append(b, `,"lat":`...)
	b = appendFloatPtr(b, p.Lat)
	b = append(b, `,"lon":`...)
	b = appendFloatPtr(b, p.Lon)
	return append(b, '}')
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

// appendString quotes s as encoding/json does: plain printable ASCII
// directly, anything else through encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendFloatPtr(b []byte, f *float64) []byte {
	if f == nil {
		return append(b, "null"...)
	}
	return appendFloat(b, *f)
}

// appendFloat formats f as encoding/json does: shortest representation,
// exponent form only for very small or very large magnitudes.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		q, _ := json.Marshal(f)
		return append(b, q...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}
