package events

// Location is the payload of location.upserted. The producer computes the
// hierarchy and display names; the projection copies them into the read
// model. See schemas/location.upserted.json.
type Location struct {
	GeoType     string `json:"geo_type"` // jurisdiction, city, zip, county, state
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	FullAddress string `json:"full_address,omitempty"`

	State     string `json:"state"`
	StateName string `json:"state_name"`
	County    string `json:"county,omitempty"`
	City      string `json:"city,omitempty"`
	Zipcode   string `json:"zipcode,omitempty"`

	Jurisdiction string `json:"jurisdiction,omitempty"`

	StateGeoID        string   `json:"state_geo_id,omitempty"`
	CountyGeoID       string   `json:"county_geo_id,omitempty"`
	CountyGeoIDs      []string `json:"county_geo_ids,omitempty"`
	CityGeoID         string   `json:"city_geo_id,omitempty"`
	JurisdictionGeoID string   `json:"jurisdiction_geo_id,omitempty"`

	Aliases      []string `json:"aliases,omitempty"`
	Lat          float64  `json:"lat"`
	Lon          float64  `json:"lon"`
	Population   int64    `json:"population,omitempty"`
	Incorporated bool     `json:"incorporated,omitempty"`
}
