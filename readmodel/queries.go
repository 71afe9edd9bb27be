package readmodel

// ResolveQuery asks for location candidates for free text.
type ResolveQuery struct {
	Text    string  // trimmed, 1..200 characters
	State   string  // upper-case USPS code, "" for all states
	GeoType GeoType // "" for every scope
	Limit   int     // 1..20
	// Focus, when non-nil, lifts candidates near the point (a bounded
	// boost that decays with distance; see package resolve); nil for none.
	Focus *Point
}

// Point is a WGS84 position in degrees.
type Point struct {
	Lat, Lon float64
}

// Candidate is one ranked resolve result.
type Candidate struct {
	Location    Location // for the property scope: GeoType property, GeoID the property_id
	Score       float64  // 0..1, ranking score
	Confidence  float64  // 0..1, how sure the match is right
	MatchMethod string   // exact, alias, prefix, fuzzy, postal_code, address, parcel
	Decision    string   // accept, review, reject
	Reasons     []string // snake_case codes
}

// PermitKey is the search_after key of permit pages: issue date (""
// for undated) then permit id.
type PermitKey struct {
	IssueDate string
	PermitID  string
	// Valuation position, for SortValuationDesc pages only: HasValuation
	// false is a permit of unknown valuation.
	HasValuation bool
	Valuation    float64
	// DistanceM is the position of SortDistance pages.
	DistanceM float64
}

// PermitQuery pages the permits of one geography.
type PermitQuery struct {
	// Geo may be zero when Filter has a geometry (near or bbox): every
	// permit the geometry holds; hits then carry a zero Match. A property
	// (Geo.IsProperty) pages that property's permits.
	Geo      GeoRef
	Desc     bool   // issue_date descending when true
	FromDate string // inclusive lower bound on issue_date, "" for none
	ToDate   string // inclusive upper bound on issue_date, "" for none
	Limit    int    // 1..100
	After    *PermitKey
	Filter   PermitFilter // permit_filters.go; the zero value filters nothing
	Sort     PermitSort   // permit_filters.go; "" is by issue date (Desc)
}

// PermitHit is a permit with its link to the queried geography.
type PermitHit struct {
	Permit Permit
	Match  GeoLink
	// DistanceM is the great-circle distance in metres from the query's
	// Near point; nil when the query has none.
	DistanceM *float64
}

// PermitPage is one page of permits.
type PermitPage struct {
	Permits []PermitHit
	Next    *PermitKey
}

// PropertyQuery looks up properties by address.
type PropertyQuery struct {
	Address string // free-form street address, may include city, state, ZIP
	City    string
	State   string
	Zipcode string
	Limit   int // 1..20
}

// PropertyMatch is one property search result.
type PropertyMatch struct {
	Property          Property
	MatchConfidence   float64 // 0..1
	MatchType         string  // exact, normalized, fuzzy
	NormalizedInput   string
	MatchedFields     []string
	InputAddressShown string
}

// GeoSignalKey is the search_after key of geo signal pages.
type GeoSignalKey struct {
	Score     float64
	SignalKey string
	GeoID     string
}

// GeoSignalQuery searches geo signal rows across one state.
type GeoSignalQuery struct {
	State      string   // upper-case USPS code
	SignalKeys []string // hard filter when non-empty
	GeoType    GeoType  // "" for all
	Decision   string   // "" for all
	MinScore   *float64 // inclusive
	Limit      int      // 1..100
	After      *GeoSignalKey
}

// GeoSignalPage is one page of geo signal rows.
type GeoSignalPage struct {
	Signals []GeoSignal
	Next    *GeoSignalKey
}

// CatalogQuery lists catalog entries.
type CatalogQuery struct {
	State           string   // upper-case USPS code
	SignalKeys      []string // restrict to these keys when non-empty
	IncludeInactive bool
}

// LeadSort is the order of lead pages.
type LeadSort string

// Lead orders. Both end with lead_id ascending.
const (
	// SortEventDateDesc: event_date_used descending (null last), then
	// confidence descending (null last).
	SortEventDateDesc LeadSort = "event_date_desc"
	// SortConfidenceDesc: confidence descending (null last), then
	// event_date_used descending (null last).
	SortConfidenceDesc LeadSort = "confidence_desc"
)

// LeadFilter selects leads; PermitLeads and PermitStats apply it
// identically.
type LeadFilter struct {
	Geo        GeoRef   // the anchor: a location (a property anchors no lead)
	SignalKeys []string // any of these when non-empty
	FromDate   string   // inclusive bound on event_date_used; excludes null dates
	ToDate     string   // inclusive bound on event_date_used; excludes null dates
	// MinConfidence is inclusive and excludes null confidence.
	MinConfidence *float64
	// FreshSince, when set, keeps leads with event_date_used >= FreshSince
	// (freshness lag <= window) and excludes null dates.
	FreshSince string
}

// LeadKey is the search_after key of lead pages. A null event date is
// the empty EventDate; a null confidence is HasConfidence false.
type LeadKey struct {
	EventDate     string
	HasConfidence bool
	Confidence    float64
	LeadID        string
}

// LeadQuery pages leads.
type LeadQuery struct {
	Filter LeadFilter
	Sort   LeadSort
	Limit  int // 1..100
	After  *LeadKey
}

// LeadPage is one page of leads.
type LeadPage struct {
	GeoType GeoType // of the anchor, Filter.Geo
	Leads   []Lead
	Next    *LeadKey
}

// LocationSignals are the active geo signal rows of one geography, with
// the geography's type and state.
type LocationSignals struct {
	GeoType GeoType
	State   string
	Signals []GeoSignal
}

// StatsQuery aggregates leads.
type StatsQuery struct {
	Filter LeadFilter
	// Today is the service clock's date (YYYY-MM-DD), the reference for
	// freshness buckets.
	Today string
	// TopN bounds top_counties, top_cities and top_zips (the API asks
	// for StatsTopN); a negative TopN keeps the whole lists.
	TopN int
}

// ValueCount is one bucket of a top list.
type ValueCount struct {
	Value string
	Count int64
}

// PermitStats aggregates leads. Every distribution sums to Total.
type PermitStats struct {
	GeoType  GeoType // of the anchor, Filter.Geo
	Total    int64
	BySignal []ValueCount // every signal key with at least one lead, count desc then key asc
	// TopCounties, TopCities and TopZips count leads under their *_norm
	// keys, count desc then value asc, null values omitted. A backend with
	// conformance's CapStatsNames names cities and counties as their
	// locations spell them ("King County"; a key no location spells stays
	// as it is); one without it lists the keys ("king county").
	TopCounties      []ValueCount
	TopCities        []ValueCount
	TopZips          []ValueCount
	ConfidenceHigh   int64 // >= 0.75
	ConfidenceMedium int64 // >= 0.5
	ConfidenceLow    int64 // < 0.5 or null
	Fresh0to7        int64
	Fresh8to14       int64
	Fresh15to30      int64
	Fresh31Plus      int64 // > 30 or null
}
