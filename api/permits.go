package api

import (
	"math"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/internal/cursor"
	"github.com/permitd/permitd/readmodel"
)

// permitCursorKey is the search_after position of permit pages inside a
// cursor: issue date ("" for undated) and permit id.
type permitCursorKey struct {
	IssueDate string   `json:"d"`
	PermitID  string   `json:"i"`
	Valuation *float64 `json:"v,omitempty"` // sort=valuation_desc: nil for unknown
	DistanceM float64  `json:"m,omitempty"` // sort=distance
}

// validPosition: a permit position names a permit and a real date (or
// none, for undated permits).
func (k *permitCursorKey) validPosition() bool {
	return k.PermitID != "" && (k.IssueDate == "" || readmodel.IsDay(k.IssueDate)) &&
		(k.Valuation == nil || !math.IsNaN(*k.Valuation) && !math.IsInf(*k.Valuation, 0)) &&
		k.DistanceM >= 0 && k.DistanceM <= 2*maxRadiusM
}

// readPermitCursor reads a permit page position.
func (s *server) readPermitCursor(q query, endpoint, binding string) (*readmodel.PermitKey, error) {
	k, err := readCursor[permitCursorKey](s, q, endpoint, binding)
	if err != nil || k == nil {
		return nil, err
	}
	pk := &readmodel.PermitKey{IssueDate: k.IssueDate, PermitID: k.PermitID, DistanceM: k.DistanceM}
	if k.Valuation != nil {
		pk.HasValuation, pk.Valuation = true, *k.Valuation
	}
	return pk, nil
}

// nextPermitCursor signs the position after a permit page.
func (s *server) nextPermitCursor(endpoint, binding string, next *readmodel.PermitKey) (*string, error) {
	if next == nil {
		return nil, nil
	}
	k := &permitCursorKey{IssueDate: next.IssueDate, PermitID: next.PermitID, DistanceM: next.DistanceM}
	if next.HasValuation {
		v := next.Valuation
		k.Valuation = &v
	}
	return nextCursor(s, endpoint, binding, k)
}

// permitPage reads one page of permit search for pq, resuming after the
// request's cursor (bound to binding), and signs the cursor of the next
// page. what names the geography in a 404.
func (s *server) permitPage(c *gin.Context, q query, endpoint, binding string, pq readmodel.PermitQuery, what string) (readmodel.PermitPage, *string, error) {
	after, err := s.readPermitCursor(q, endpoint, binding)
	if err != nil {
		return readmodel.PermitPage{}, nil, err
	}
	pq.After = after
	page, err := s.Reader.SearchPermits(c.Request.Context(), pq)
	if err != nil {
		return readmodel.PermitPage{}, nil, asNotFound(err, what)
	}
	next, err := s.nextPermitCursor(endpoint, binding, page.Next)
	return page, next, err
}

// searchPermits: GET /v1/permits/search.
//
// Any scope's geo_id is accepted, a property_id included (the property's
// permits, geo_match the property link). The cursor is bound to geo_id,
// order, from_date, to_date and the filters (permits_filters.go); limit
// may change between pages.
func (s *server) searchPermits(c *gin.Context) error {
	q := queryOf(c)
	var filter readmodel.PermitFilter
	gb, err := q.geometry(&filter)
	if err != nil {
		return err
	}
	var geo readmodel.GeoRef // zero: the geometry alone
	if _, given, _ := q.get("geo_id"); given || !filter.HasGeometry() {
		if geo, err = q.geo("geo_id"); err != nil {
			return err
		}
	}
	order, err := q.enum("desc", []string{"asc", "desc"}, "order")
	if err != nil {
		return err
	}
	from, to, err := q.dateWindow()
	if err != nil {
		return err
	}
	limit, err := q.intIn("limit", readmodel.DefaultPageLimit, 1, readmodel.MaxPageLimit)
	if err != nil {
		return err
	}
	filter, fb, err := q.permitFilter(&filter)
	if err != nil {
		return err
	}
	fb = append(fb, gb...)
	sort, err := q.enum("issue_date", []string{"issue_date", "valuation_desc", "distance"}, "sort")
	if err != nil {
		return err
	}
	if sort == "distance" && filter.Near == nil {
		return invalid("sort", "distance needs near")
	}
	if _, given, _ := q.get("order"); given && sort != "issue_date" {
		return invalid("order", "applies to sort=issue_date only; got sort=%s", sort)
	}
	const endpoint = "permits_search"
	bind := []string{"geo_id", geo.ID(), "order", order, "from_date", from, "to_date", to}
	if !filter.IsZero() { // unfiltered cursors keep their binding
		bind = append(bind, fb...)
	}
	if sort != "issue_date" {
		bind = append(bind, "sort", sort)
	}
	page, next, err := s.permitPage(c, q, endpoint, cursor.Binding(bind...), readmodel.PermitQuery{
		Geo: geo, Desc: order == "desc", FromDate: from, ToDate: to, Limit: limit,
		Filter: filter, Sort: readmodel.PermitSort(strings.TrimPrefix(sort, "issue_date")),
	}, "location "+geo.ID())
	if err != nil {
		return err
	}
	buf := getBuf()
	*buf = appendPermits(*buf, geo.ID(), page.Permits, next)
	s.send(c, buf)
	return nil
}

func clamp01(f float64) float64 { return min(max(f, 0), 1) }
