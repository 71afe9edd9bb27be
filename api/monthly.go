package api

import (
	"time"

	"github.com/gin-gonic/gin"

	jx "github.com/permitd/permitd/api/internal/jsonenc"
	"github.com/permitd/permitd/readmodel"
)

// monthlyParams are the parameters of GET /v1/permits/stats/monthly.
var monthlyParams = append([]string{"geo_id", "from_date", "to_date"}, append(permitFilterParams, permitGeometryParams...)...)

// permitMonthly: GET /v1/permits/stats/monthly. The window is from_date
// .. to_date (inclusive issue dates); to_date defaults to today, from_date
// to the first day of the month 23 months before to_date's (24 months),
// not before 0000-01-01. More than 120 months: 422.
func (s *server) permitMonthly(c *gin.Context) error {
	q := queryOf(c)
	geo, err := q.geo("geo_id")
	if err != nil {
		return err
	}
	var filter readmodel.PermitFilter
	if _, err := q.geometry(&filter); err != nil {
		return err
	}
	pf, _, err := q.permitFilter(&filter)
	if err != nil {
		return err
	}
	from, to, err := q.dateWindow()
	if err != nil {
		return err
	}
	if to == "" {
		to = s.today().Format(time.DateOnly)
	}
	if from == "" {
		t, _ := time.Parse(time.DateOnly, to)
		first := time.Date(t.Year(), t.Month()-readmodel.DefaultMonths+1, 1, 0, 0, 0, 0, time.UTC)
		// Dates are YYYY-MM-DD from year 0000 (readmodel.IsDay): a
		// to_date in year 0000 or 0001 starts the window there, not in a
		// negative year no date parser takes (a 500, found by FuzzQuery).
		if first.Year() < 0 {
			first = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		from = first.Format(time.DateOnly)
	}
	if err := dateRange(from, to); err != nil {
		return err
	}
	if n := len(readmodel.MonthsOf(from, to)); n > readmodel.MaxMonths {
		return invalid("from_date", "the window spans %d months; the maximum is %d", n, readmodel.MaxMonths)
	}
	mr, ok := s.Reader.(readmodel.PermitMonthlyReader)
	if !ok {
		return readmodel.ErrUnsupported
	}
	mq := readmodel.MonthlyQuery{Geo: geo, Filter: pf, FromDate: from, ToDate: to}
	months, err := mr.PermitMonthly(c.Request.Context(), mq)
	if err != nil {
		return asNotFound(err, "location "+geo.ID())
	}
	buf := getBuf()
	*buf = appendMonthly(*buf, geo.ID(), from, to, months)
	s.send(c, buf)
	return nil
}

func appendMonthly(b []byte, geoID, from, to string, months []readmodel.MonthBucket) []byte {
	b = append(b, `{"geo_id":`...)
	b = jx.String(b, geoID)
	b = append(b, `,"from_date":`...)
	b = jx.String(b, from)
	b = append(b, `,"to_date":`...)
	b = jx.String(b, to)
	b = append(b, `,"months":[`...)
	for i := range months {
		m := &months[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"month":`...)
		b = jx.String(b, m.Month)
		b = append(b, `,"permit_count":`...)
		b = jx.Int(b, m.Count)
		b = append(b, `,"total_valuation":`...)
		b = jx.Float(b, m.TotalValuation)
		b = append(b, `,"median_valuation":`...)
		b = jx.NullFloat(b, m.MedianValuation)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
