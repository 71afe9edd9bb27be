package readmodel

import (
	"encoding/json"
	"time"
)

// GeoType is a geo scope type of the spec.
type GeoType string

// The spec's geo scope types.
const (
	GeoProperty     GeoType = "property"
	GeoJurisdiction GeoType = "jurisdiction"
	GeoCity         GeoType = "city"
	GeoZip          GeoType = "zip"
	GeoCounty       GeoType = "county"
	GeoState        GeoType = "state"
)

// GeoTypes lists every scope in the spec's order.
var GeoTypes = []GeoType{GeoProperty, GeoJurisdiction, GeoCity, GeoZip, GeoCounty, GeoState}

// ParseGeoType accepts a scope name exactly as the spec spells it.
func ParseGeoType(s string) (GeoType, bool) {
	for _, t := range GeoTypes {
		if string(t) == s {
			return t, true
		}
	}
	return "", false
}

// Location is one geography: a state, county, city or place, ZIP code or
// permitting jurisdiction.
type Location struct {
	GeoID       string
	GeoType     GeoType
	Name        string // bare name: "Seattle", "King County", "98101", "Washington"
	DisplayName string // "Seattle, WA", "King County, WA", "98101 (Seattle, WA)"
	FullAddress string // "Seattle, King County, WA", used as location detail full_address

	State     string // USPS code, "WA"
	StateName string // "Washington"
	County    string // "King County"; for a ZIP spanning counties, its main county
	City      string // "Seattle"; for a ZIP its preferred place name
	Zipcode   string // ZIP locations only

	// Jurisdiction is the permitting authority: the incorporated city, else
	// the county ("City of Seattle", "King County").
	Jurisdiction string

	// Hierarchy by geo_id; empty when not applicable.
	StateGeoID        string
	CountyGeoID       string
	CountyGeoIDs      []string // every county a ZIP touches
	CityGeoID         string
	JurisdictionGeoID string

	Aliases      []string // extra names the resolver matches ("Mount Vernon" for "Mt Vernon")
	Lat, Lon     float64
	Population   int64 // prior for ranking same-named places; 0 when unknown
	Incorporated bool

	// Maintained by the backend from the permits linked to this geo_id.
	PermitCount      int64
	LatestPermitDate string // YYYY-MM-DD, "" when no dated permit

	Version int64
}

// Clone returns a deep copy.
func (l Location) Clone() Location {
	l.CountyGeoIDs = cloneStrings(l.CountyGeoIDs)
	l.Aliases = cloneStrings(l.Aliases)
	return l
}

// GeoLink ties a permit to one geography with a confidence in 0..1.
type GeoLink struct {
	GeoID      string
	GeoType    GeoType
	Confidence float64
	Method     string // how the link was made: "source_zip", "derived_latlon", ...
}

// Address is a permit's address as the source gave it, completed by geo
// matching.
type Address struct {
	FullAddress  string
	City         string
	State        string
	Zipcode      string
	County       string
	Jurisdiction string
}

// Permit is one building permit, denormalised with its geo links.
type Permit struct {
	PermitID        string // stable document id
	PermitNumber    string // the source's number
	PermitType      string
	WorkType        string
	Status          string
	ApplicationDate string // YYYY-MM-DD or ""
	IssueDate       string
	CompletionDate  string
	RawDescription  string
	Contractor      string
	Valuation       *float64 // nil: unknown
	Source          string
	Address         Address
	Lat, Lon        *float64
	PropertyID      string
	GeoLinks        []GeoLink
	Version         int64
}

// Clone returns a deep copy.
func (p Permit) Clone() Permit {
	p.Valuation = cloneFloat(p.Valuation)
	p.Lat = cloneFloat(p.Lat)
	p.Lon = cloneFloat(p.Lon)
	p.GeoLinks = append([]GeoLink(nil), p.GeoLinks...)
	return p
}

// Link returns the permit's link to geoID.
func (p Permit) Link(geoID string) (GeoLink, bool) {
	for _, l := range p.GeoLinks {
		if l.GeoID == geoID {
			return l, true
		}
	}
	return GeoLink{}, false
}

// Property is one addressable property (a normalised address, or a parcel).
type Property struct {
	PropertyID        string // prop_ + 32 hex
	CanonicalAddress  string // "600 UNIVERSITY ST, SEATTLE, WA 98101"
	NormalizedAddress string // street line in normalised form: "600 UNIVERSITY ST"
	City              string
	State             string
	Zipcode           string
	ParcelID          string
	Lat, Lon          *float64
	GeoLinks          []GeoLink
	Version           int64
}

// Clone returns a deep copy.
func (p Property) Clone() Property {
	p.Lat = cloneFloat(p.Lat)
	p.Lon = cloneFloat(p.Lon)
	p.GeoLinks = append([]GeoLink(nil), p.GeoLinks...)
	return p
}

// GeoSignal is one computed signal row for one geography.
type GeoSignal struct {
	GeoID       string
	GeoType     GeoType
	DisplayName string // denormalised at projection time
	State       string
	SignalKey   string
	Value       json.RawMessage // object
	Score       float64
	Confidence  float64
	Decision    string // positive, neutral, negative
	Reasons     []string
	ComputedAt  time.Time
	Version     int64
}

// ID is the document id of a geo signal row.
func (g GeoSignal) ID() string { return g.GeoID + "|" + g.SignalKey }

// Clone returns a deep copy.
func (g GeoSignal) Clone() GeoSignal {
	g.Value = append(json.RawMessage(nil), g.Value...)
	g.Reasons = cloneStrings(g.Reasons)
	return g
}

// LeadLocation is a lead's denormalised location.
type LeadLocation struct {
	FullAddress, City, State, Zipcode, County string
	CityNorm, ZipcodeNorm, CountyNorm         string
}

// Lead is one permit-scoped signal row.
type Lead struct {
	LeadID        string
	SignalKey     string
	EventDateUsed string   // YYYY-MM-DD or "" (null)
	SignalBasis   string   // observed_event, inferred_timing
	Confidence    *float64 // nil: null
	ReasonCodes   []string
	PermitNumber  string
	Jurisdiction  string
	Location      LeadLocation
	MapsURL       string
	// GeoIDs are the non-property geographies the lead is anchored to
	// (jurisdiction, city, zip, county, state).
	GeoIDs  []string
	Version int64
}

// Clone returns a deep copy.
func (l Lead) Clone() Lead {
	l.Confidence = cloneFloat(l.Confidence)
	l.ReasonCodes = cloneStrings(l.ReasonCodes)
	l.GeoIDs = cloneStrings(l.GeoIDs)
	return l
}

// CatalogEntry describes one signal key in one state.
type CatalogEntry struct {
	State                  string
	SignalKey              string
	Family                 string // "geo" or "permit"
	ActiveSignalVersion    string
	ActiveWeightsProfileID string
	Status                 string // CatalogActive, or another status (retired, draft, ...)
	Spec                   json.RawMessage
	Version                int64
}

// CatalogActive is the catalog status of a signal key that is served:
// listed by the catalog by default, and the only status whose geo signal
// rows are returned.
const CatalogActive = "active"

// ID is the document id of a catalog entry.
func (c CatalogEntry) ID() string { return c.State + "|" + c.SignalKey }

// Clone returns a deep copy.
func (c CatalogEntry) Clone() CatalogEntry {
	c.Spec = append(json.RawMessage(nil), c.Spec...)
	return c
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func cloneFloat(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}

// PropertyLocation presents a property as a location of the property
// scope (resolve candidates, location detail): its hierarchy names come
// from the linked locations that look finds; links it cannot find are
// left out. Every backend presents properties through it.
func PropertyLocation(p Property, look func(geoID string) (Location, bool), permitCount int64, latestPermitDate string) Location {
	l := Location{
		GeoID: p.PropertyID, GeoType: GeoProperty, Name: p.NormalizedAddress,
		DisplayName: p.CanonicalAddress, FullAddress: p.CanonicalAddress, State: p.State, City: p.City,
		Zipcode: p.Zipcode, PermitCount: permitCount, LatestPermitDate: latestPermitDate, Version: p.Version,
	}
	if p.Lat != nil && p.Lon != nil {
		l.Lat, l.Lon = *p.Lat, *p.Lon
	}
	for _, g := range p.GeoLinks {
		loc, ok := look(g.GeoID)
		if !ok {
			continue
		}
		switch g.GeoType {
		case GeoState:
			l.StateGeoID, l.StateName = g.GeoID, loc.StateName
		case GeoCounty:
			l.CountyGeoID, l.County = g.GeoID, loc.Name
		case GeoCity:
			l.CityGeoID = g.GeoID
			if loc.Name != "" {
				l.City = loc.Name
			}
		case GeoJurisdiction:
			l.JurisdictionGeoID, l.Jurisdiction = g.GeoID, loc.Name
		}
	}
	return l
}
