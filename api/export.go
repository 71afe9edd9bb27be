package api

import (
	"context"
	"encoding/csv"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	jx "github.com/permitd/permitd/api/internal/jsonenc"
	"github.com/permitd/permitd/readmodel"
)

// exportQuotaRows: an export is charged one request of the monthly quota
// per started block of this many rows (the first block is the request
// itself). Row caps per plan: readmodel.ExportRowCap.
const exportQuotaRows = 1000

// exportParams are the parameters of GET /v1/permits/export.
var exportParams = append([]string{"geo_id", "format", "from_date", "to_date"}, append(permitFilterParams, permitGeometryParams...)...)

// Trailers of an export: the rows sent and, when the stream stopped
// early, why (row_cap, monthly_quota, error).
const (
	trailerRows      = "X-Export-Rows"
	trailerTruncated = "X-Export-Truncated"
)

// exportPermits: GET /v1/permits/export. It streams every permit search
// would page (issue date descending) as NDJSON (one permit record per
// line) or CSV, one page at a time: from the backend's snapshot scan
// when it has one (OpenSearch: a point in time), else through the search
// cursor key, so no reader holds the store between pages. A client that
// goes away stops the scan at the next page.
func (s *server) exportPermits(c *gin.Context) error {
	q := queryOf(c)
	var filter readmodel.PermitFilter
	if _, err := q.geometry(&filter); err != nil {
		return err
	}
	geo, err := q.geo("geo_id")
	if err != nil {
		return err
	}
	pf, _, err := q.permitFilter(&filter)
	if err != nil {
		return err
	}
	format, err := q.enum("ndjson", []string{"ndjson", "csv"}, "format")
	if err != nil {
		return err
	}
	from, to, err := q.dateWindow()
	if err != nil {
		return err
	}
	st := state(c)
	principal := st.principal
	rowCap := readmodel.ExportRowCap(principal.Plan.Name)
	query := readmodel.PermitQuery{Geo: geo, Desc: true, FromDate: from, ToDate: to, Limit: readmodel.ExportPage, Filter: pf}
	if err := query.Validate(); err != nil {
		return err
	}
	// The stream is not bounded by the business request deadline (a large
	// export takes longer than any one request should; the route is
	// registered outside withDeadline); each read is, on its own (step).
	// The client going away still cancels the request's context.
	step := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(c.Request.Context(), s.RequestTimeout)
	}
	// The first page decides the status: a bad geo_id is still a 404, a
	// backend unavailable past the request deadline a 503. The scan
	// (export_scan.go) is closed however the stream ends.
	first, cancel := step()
	reads := rowCap + 1 // the row past the cap says the stream was cut
	if c.Request.Method == http.MethodHead {
		reads = readmodel.ExportPage // HEAD reads the first page only
	}
	scan, err := s.openPermitScan(first, query, reads)
	if err != nil {
		cancel()
		return asNotFound(err, "location "+geo.ID())
	}
	defer func() { _ = scan.Close() }()
	page, err := scan.Next(first)
	cancel()
	if err != nil {
		return asNotFound(err, "location "+geo.ID())
	}
	// A conditional request on a backend that is not Versioned had only
	// its rate charged by withQuota (the monthly quota waits for a 200 in
	// send, which an export never calls): charge it here, before the 200.
	if st.deferred {
		if !s.admit(c, monthlyOnly(principal)) {
			return nil
		}
	}
	h := c.Writer.Header()
	h.Set("Trailer", trailerRows+", "+trailerTruncated)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Export-Row-Cap", strconv.Itoa(rowCap))
	if format == "csv" {
		h.Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/x-ndjson")
	}
	c.Status(http.StatusOK)
	if c.Request.Method == http.MethodHead {
		// HEAD: the status and headers of the first page; no scan.
		return nil
	}
	var cw *csv.Writer
	if format == "csv" {
		cw = csv.NewWriter(c.Writer)
		_ = cw.Write(exportColumns)
	}
	rows, truncated := 0, ""
	buf := getBuf()
	defer putBuf(buf)
	rec := make([]string, len(exportColumns))
scan:
	for {
		for i := range page.Permits {
			if rows == rowCap {
				truncated = "row_cap"
				break scan
			}
			if rows > 0 && rows%exportQuotaRows == 0 {
				ctx, cancel := step()
				d, err := s.Limiter.Allow(ctx, monthlyOnly(principal))
				cancel()
				if err == nil && !d.Allowed {
					truncated = "monthly_quota"
					break scan
				}
			}
			hit := &page.Permits[i]
			if cw != nil {
				_ = cw.Write(csvRecord(rec, hit))
			} else {
				*buf = appendExportLine((*buf)[:0], geo.ID(), hit)
				if _, err := c.Writer.Write(*buf); err != nil {
					truncated = "error"
					break scan
				}
			}
			rows++
		}
		if cw != nil {
			cw.Flush()
			if cw.Error() != nil {
				truncated = "error"
				break
			}
		}
		c.Writer.Flush()
		if page.Next == nil || c.Request.Context().Err() != nil {
			if c.Request.Context().Err() != nil {
				truncated = "error"
			}
			break
		}
		ctx, cancel := step()
		page, err = scan.Next(ctx)
		cancel()
		if err != nil {
			s.log.Error("export stopped", "request_id", requestID(c), "err", err)
			truncated = "error"
			break
		}
	}
	h.Set(trailerRows, strconv.Itoa(rows))
	if truncated != "" {
		h.Set(trailerTruncated, truncated)
	}
	return nil
}

// appendExportLine is one NDJSON line: the permit record of search
// (encode.go's encoder, cut out of a one-permit page).
func appendExportLine(b []byte, geoID string, hit *readmodel.PermitHit) []byte {
	b = appendPermits(b, geoID, []readmodel.PermitHit{*hit}, nil)
	// {"geo_id":ID,"count":1,"permits":[RECORD],"next_cursor":null}
	head := len(`{"geo_id":,"count":1,"permits":[`) + len(jx.NullString(nil, geoID))
	const tail = len(`],"next_cursor":null}`)
	n := copy(b, b[head:len(b)-tail])
	return append(b[:n], '\n')
}

var exportColumns = []string{
	"permit_id", "permit_type", "work_type", "status", "issue_date", "completion_date", "contractor", "valuation",
	"raw_description", "source", "full_address", "city", "state", "zipcode", "county", "jurisdiction", "lat", "lon",
}

func csvRecord(rec []string, hit *readmodel.PermitHit) []string {
	p := &hit.Permit
	num := func(f *float64) string {
		if f == nil {
			return ""
		}
		return string(jx.Float(nil, *f))
	}
	rec[0], rec[1], rec[2], rec[3], rec[4], rec[5] = p.PermitID, p.PermitType, p.WorkType, p.Status, p.IssueDate, p.CompletionDate
	rec[6], rec[7], rec[8], rec[9] = p.Contractor, num(p.Valuation), p.RawDescription, p.Source
	rec[10], rec[11], rec[12], rec[13], rec[14], rec[15] = p.Address.FullAddress, p.Address.City, p.Address.State, p.Address.Zipcode, p.Address.County, p.Address.Jurisdiction
	rec[16], rec[17] = num(p.Lat), num(p.Lon)
	return rec
}
