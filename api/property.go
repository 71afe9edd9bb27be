package api

import (
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/internal/cursor"
	"github.com/permitd/permitd/readmodel"
)

var zipParamRe = regexp.MustCompile(`^[0-9]{5}(-[0-9]{4})?$`)

// searchProperty: GET /v1/search/property. The best match only; 404 when
// nothing plausible matches (see readmodel.Reader.SearchProperties for
// how matches are made and scored).
func (s *server) searchProperty(c *gin.Context) error {
	q := queryOf(c)
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
	pq := readmodel.PropertyQuery{Address: addr, City: city, State: state, Zipcode: zip, Limit: 1}
	matches, err := s.Reader.SearchProperties(c.Request.Context(), pq)
	if err != nil {
		return err
	}
	if len(matches) == 0 {
		return notFound{what: "property matching the address"}
	}
	buf := getBuf()
	*buf = appendProperty(*buf, addr, &matches[0])
	s.send(c, buf)
	return nil
}

// propertyPermits: GET /v1/property/{property_id}/permits: the permit
// search of the property_id, issue date descending, undated last,
// permit_id ascending, without filters; count is the page's size. The
// cursor is bound to the property_id.
func (s *server) propertyPermits(c *gin.Context) error {
	id := strings.TrimSpace(c.Param("property_id"))
	geo := readmodel.ParseGeoRef(id)
	if !geo.IsProperty() {
		return invalid("property_id", "must match ^prop_[0-9a-f]{32}$; got %q", clip(id))
	}
	q := queryOf(c)
	limit, err := q.intIn("limit", readmodel.DefaultPageLimit, 1, readmodel.MaxPageLimit)
	if err != nil {
		return err
	}
	page, next, err := s.permitPage(c, q, "property_permits", cursor.Binding("property_id", id),
		readmodel.PermitQuery{Geo: geo, Desc: true, Limit: limit}, "property "+id)
	if err != nil {
		return err
	}
	buf := getBuf()
	*buf = appendPropertyPermits(*buf, id, page.Permits, next)
	s.send(c, buf)
	return nil
}
