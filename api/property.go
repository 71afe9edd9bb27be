package api

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/cursor"
	"github.com/permitd/permitd/readmodel"
)

type matchMetadataJSON struct {
	MatchType              string   `json:"match_type"`
	InputAddress           string   `json:"input_address"`
	NormalizedInputAddress string   `json:"normalized_input_address"`
	MatchedFields          []string `json:"matched_fields"`
}

type propertyMatchJSON struct {
	PropertyID       string            `json:"property_id"`
	CanonicalAddress string            `json:"canonical_address"`
	MatchConfidence  float64           `json:"match_confidence"`
	MatchMetadata    matchMetadataJSON `json:"match_metadata"`
	Lat              *float64          `json:"lat"`
	Lon              *float64          `json:"lon"`
	State            *string           `json:"state"`
	City             *string           `json:"city"`
	ParcelID         *string           `json:"parcel_id"`
}

var zipParamRe = regexp.MustCompile(`^[0-9]{5}(-[0-9]{4})?$`)

// searchProperty: GET /v1/search/property. The best match only; 404 when
// nothing plausible matches (see readmodel.Reader.SearchProperties for
// how matches are made and scored).
func (s *server) searchProperty(c *gin.Context) error {
	q := newQuery(c.Request.URL)
	addr, err := q.text(true, 300, "address")
	if err != nil {
		return err
	}
	city, err := q.text(false, 100, "city")
	if err != nil {
		return err
	}
	state, err := q.state("state", "")
	if err != nil {
		return err
	}
	zip, err := q.text(false, 10, "zipcode")
	if err != nil {
		return err
	}
	if zip != "" && !zipParamRe.MatchString(zip) {
		return invalid("zipcode", "must be a 5-digit ZIP code or ZIP+4; got %q", clip(zip))
	}
	matches, err := s.Reader.SearchProperties(c.Request.Context(), readmodel.PropertyQuery{
		Address: addr, City: city, State: state, Zipcode: zip, Limit: 1,
	})
	if err != nil {
		return err
	}
	if len(matches) == 0 {
		return notFound{what: "property matching the address"}
	}
	m := matches[0]
	p := m.Property
	fields := m.MatchedFields
	if fields == nil {
		fields = []string{}
	}
	c.JSON(http.StatusOK, propertyMatchJSON{
		PropertyID:       p.PropertyID,
		CanonicalAddress: p.CanonicalAddress,
		MatchConfidence:  round4(clamp01(m.MatchConfidence)),
		MatchMetadata: matchMetadataJSON{
			MatchType:              m.MatchType,
			InputAddress:           addr,
			NormalizedInputAddress: m.NormalizedInput,
			MatchedFields:          fields,
		},
		Lat:      p.Lat,
		Lon:      p.Lon,
		State:    nullable(p.State),
		City:     nullable(p.City),
		ParcelID: nullable(p.ParcelID),
	})
	return nil
}

type propertyPermitJSON struct {
	PermitID       string   `json:"permit_id"`
	PermitType     *string  `json:"permit_type"`
	WorkType       *string  `json:"work_type"`
	Status         *string  `json:"status"`
	IssueDate      *string  `json:"issue_date"`
	CompletionDate *string  `json:"completion_date"`
	Contractor     *string  `json:"contractor"`
	Valuation      *float64 `json:"valuation"`
	RawDescription *string  `json:"raw_description"`
	Source         string   `json:"source"`
}

type propertyPermitsResponse struct {
	PropertyID string               `json:"property_id"`
	Count      int                  `json:"count"`
	Permits    []propertyPermitJSON `json:"permits"`
	NextCursor *string              `json:"next_cursor"`
}

// propertyPermits: GET /v1/property/{property_id}/permits. Issue date
// descending, undated last, permit_id ascending; count is the page's
// size. The cursor is bound to the property_id.
func (s *server) propertyPermits(c *gin.Context) error {
	id := strings.TrimSpace(c.Param("property_id"))
	if !readmodel.IsPropertyID(id) {
		return invalid("property_id", "must match ^prop_[0-9a-f]{32}$; got %q", clip(id))
	}
	q := newQuery(c.Request.URL)
	limit, err := q.intIn("limit", 25, 1, 100)
	if err != nil {
		return err
	}
	const endpoint = "property_permits"
	binding := cursor.Binding("property_id", id)
	after, err := s.readPermitCursor(q, endpoint, binding)
	if err != nil {
		return err
	}
	page, err := s.Reader.PropertyPermits(c.Request.Context(), readmodel.PropertyPermitsQuery{PropertyID: id, Limit: limit, After: after})
	if err != nil {
		return asNotFound(err, "property "+id)
	}
	out := propertyPermitsResponse{PropertyID: id, Count: len(page.Permits), Permits: make([]propertyPermitJSON, 0, len(page.Permits))}
	for _, p := range page.Permits {
		out.Permits = append(out.Permits, propertyPermitJSON{
			PermitID:       p.PermitID,
			PermitType:     nullable(p.PermitType),
			WorkType:       nullable(p.WorkType),
			Status:         nullable(p.Status),
			IssueDate:      nullable(p.IssueDate),
			CompletionDate: nullable(p.CompletionDate),
			Contractor:     nullable(p.Contractor),
			Valuation:      p.Valuation,
			RawDescription: nullable(p.RawDescription),
			Source:         p.Source,
		})
	}
	if out.NextCursor, err = s.nextPermitCursor(endpoint, binding, page.Next); err != nil {
		return err
	}
	c.JSON(http.StatusOK, out)
	return nil
}
