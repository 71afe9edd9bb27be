package events

// Permit is the payload of permit.upserted: one source record, as the
// source gave it, plus what the producer derived (and how). The projection
// links it to its geographies and property. See schemas/permit.upserted.json.
//
// Entity id: PermitDocID(source, permit_number). Entity version: the
// producer's snapshot version of the record (for the Seattle importer the
// export date as YYYYMMDD, for the generator 1); a newer snapshot wins.
type Permit struct {
	PermitNumber string `json:"permit_number"`
	PermitType   string `json:"permit_type"`
	WorkType     string `json:"work_type,omitempty"`
	ActionType   string `json:"action_type,omitempty"`
	Status       string `json:"status,omitempty"`

	ApplicationDate string `json:"application_date,omitempty"` // YYYY-MM-DD
	IssueDate       string `json:"issue_date,omitempty"`
	CompletionDate  string `json:"completion_date,omitempty"`
	ExpirationDate  string `json:"expiration_date,omitempty"`

	Description string `json:"description,omitempty"`
	// DescriptionDerived: the source had none; the producer built it from
	// action and work type.
	DescriptionDerived bool   `json:"description_derived,omitempty"`
	Contractor         string `json:"contractor,omitempty"`

	// Valuation in USD; null when unknown (missing, or a placeholder such as
	// 1, in which case ValuationNote says so).
	Valuation     *float64 `json:"valuation"`
	ValuationNote string   `json:"valuation_note,omitempty"`
	HousingUnits  *int     `json:"housing_units,omitempty"`

	Address PermitAddress `json:"address"`
	Lat     *float64      `json:"lat"`
	Lon     *float64      `json:"lon"`

	// PropertyID is the property the permit belongs to (PropertyID of the
	// normalised address or parcel); "" when the address cannot be
	// normalised.
	PropertyID string `json:"property_id,omitempty"`

	Source    string `json:"source"` // "seattle_sdci_commercial", "seattle_sdci_multifamily", "synthetic"
	SourceURL string `json:"source_url,omitempty"`
}

// Work types: the vocabulary of Permit.WorkType that producers map their
// source's action into (schemas/permit.upserted.json lists it; values are
// not enumerated there, so a producer may add one).
const (
	WorkNewConstruction = "New Construction"
	WorkAdditionAlter   = "Addition/Alteration"
	WorkDemolition      = "Demolition"
	WorkGrading         = "Grading/Site Prep"
	WorkMEP             = "Mechanical/Electrical/Plumbing"
	WorkTemporary       = "Temporary"
	WorkNoConstruction  = "No Construction"
	WorkCurbCut         = "Curb Cut"
	WorkRelocation      = "Relocation"
)

// PermitAddress is a permit's address. ZipSource records where the ZIP
// came from: "source" (the record had it), "nearest_zip" (derived from
// lat/lon against the gazetteer's ZIP points), or "" when unknown.
type PermitAddress struct {
	Line      string `json:"line"`
	City      string `json:"city,omitempty"`
	State     string `json:"state"`
	Zipcode   string `json:"zipcode,omitempty"`
	ZipSource string `json:"zip_source,omitempty"`
	// ZipConfidence is the producer's confidence in the ZIP, 0..1.
	ZipConfidence float64 `json:"zip_confidence,omitempty"`
}

// Property is the payload of property.upserted: one addressable property.
// Entity id: PropertyID("parcel:<id>") when a parcel is known, else
// PropertyID("addr:<normalised street line>|<city>|<state>").
type Property struct {
	CanonicalAddress  string   `json:"canonical_address"`  // "600 UNIVERSITY ST, SEATTLE, WA 98101"
	NormalizedAddress string   `json:"normalized_address"` // street line, normalised: "600 UNIVERSITY ST"
	City              string   `json:"city"`
	State             string   `json:"state"`
	Zipcode           string   `json:"zipcode,omitempty"`
	ParcelID          string   `json:"parcel_id,omitempty"`
	Lat               *float64 `json:"lat"`
	Lon               *float64 `json:"lon"`
}
