package api

import (
	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/cursor"
	"github.com/permitd/permitd/readmodel"
)

// permitCursorKey is the search_after position of permit pages inside a
// cursor: issue date ("" for undated) and permit id.
type permitCursorKey struct {
	IssueDate string `json:"d"`
	PermitID  string `json:"i"`
}

// validPosition: a permit position names a permit and a real date (or
// none, for undated permits).
func (k *permitCursorKey) validPosition() bool {
	return k.PermitID != "" && (k.IssueDate == "" || isDate(k.IssueDate))
}

// readPermitCursor reads a permit page position.
func (s *server) readPermitCursor(q query, endpoint, binding string) (*readmodel.PermitKey, error) {
	k, err := readCursor[permitCursorKey](s, q, endpoint, binding)
	if err != nil || k == nil {
		return nil, err
	}
	return &readmodel.PermitKey{IssueDate: k.IssueDate, PermitID: k.PermitID}, nil
}

// nextPermitCursor signs the position after a permit page.
func (s *server) nextPermitCursor(endpoint, binding string, next *readmodel.PermitKey) (*string, error) {
	if next == nil {
		return nil, nil
	}
	return nextCursor(s, endpoint, binding, &permitCursorKey{IssueDate: next.IssueDate, PermitID: next.PermitID})
}

// searchPermits: GET /v1/permits/search.
//
// Any scope's geo_id is accepted, a property_id included (the property's
// permits, geo_match the property link). The cursor is bound to geo_id,
// order, from_date, to_date and the filters (permits_filters.go); limit
// may change between pages.
func (s *server) searchPermits(c *gin.Context) error {
	q := queryOf(c)
	geoID, err := q.id("geo_id")
	if err != nil {
		return err
	}
	order, err := q.enum("desc", []string{"asc", "desc"}, "order")
	if err != nil {
		return err
	}
	from, err := q.date("from_date")
	if err != nil {
		return err
	}
	to, err := q.date("to_date")
	if err != nil {
		return err
	}
	if err := dateRange(from, to); err != nil {
		return err
	}
	limit, err := q.intIn("limit", 25, 1, 100)
	if err != nil {
		return err
	}
	filter, fb, err := q.permitFilter()
	if err != nil {
		return err
	}
	const endpoint = "permits_search"
	bind := []string{"geo_id", geoID, "order", order, "from_date", from, "to_date", to}
	if !filter.IsZero() { // unfiltered cursors keep their binding
		bind = append(bind, fb...)
	}
	binding := cursor.Binding(bind...)
	after, err := s.readPermitCursor(q, endpoint, binding)
	if err != nil {
		return err
	}
	page, err := s.Reader.SearchPermits(c.Request.Context(), readmodel.PermitQuery{
		GeoID: geoID, Desc: order == "desc", FromDate: from, ToDate: to, Limit: limit, After: after,
		Filter: filter,
	})
	if err != nil {
		return asNotFound(err, "location "+geoID)
	}
	next, err := s.nextPermitCursor(endpoint, binding, page.Next)
	if err != nil {
		return err
	}
	buf := getBuf()
	*buf = appendPermits(*buf, geoID, page.Permits, next)
	s.send(c, buf)
	return nil
}

func clamp01(f float64) float64 { return min(max(f, 0), 1) }
