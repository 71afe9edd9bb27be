package api_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

func init() {
	// The document's export bodies are text; the validator reads them as
	// strings.
	text := func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		return string(b), err
	}
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", text)
	openapi3filter.RegisterBodyDecoder("text/csv", text)
}

func TestPermitExport(t *testing.T) {
	h := filterHarness(t)
	r := h.Get("/v1/permits/export?geo_id=" + geo98101 + "&status=issued,completed")
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %s %.300s", r.Status, r.Header, r.Body)
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		var rec filterRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if *rec.Status == "Permit Closed" {
			t.Fatalf("filter not applied: %+v", rec)
		}
		ids = append(ids, rec.PermitID)
	}
	want := walkFiltered(t, h, map[string][]string{"geo_id": {geo98101}, "status": {"issued,completed"}, "limit": {"100"}})
	if len(ids) != len(want) || len(ids) != 40 {
		t.Fatalf("%d lines, search pages %d", len(ids), len(want))
	}
	for i := range ids {
		if ids[i] != want[i].PermitID {
			t.Fatalf("line %d is %s, search has %s", i, ids[i], want[i].PermitID)
		}
	}
	if got := r.Header.Get("X-Export-Rows"); got != "40" || r.Header.Get("X-Export-Truncated") != "" {
		t.Errorf("trailers: rows %q truncated %q", got, r.Header.Get("X-Export-Truncated"))
	}

	r = h.Get("/v1/permits/export?format=csv&geo_id=" + geo98101 + "&q=permit")
	rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil || r.Status != http.StatusOK || len(rows) != 61 || rows[0][0] != "permit_id" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %v %d rows %.200s", err, len(rows), r.Body)
	}

	for _, tc := range []struct{ query, param string }{
		{"geo_id=" + geo98101 + "&format=xml", "format"},
		{"geo_id=" + geo98101 + "&limit=5", "limit"},
		{"geo_id=" + geo98101 + "&min_valuation=abc", "min_valuation"},
		{"format=csv", "geo_id"},
	} {
		r := h.Get("/v1/permits/export?" + tc.query)
		if !namesParam(r, tc.param) {
			t.Errorf("%s: %d %s", tc.query, r.Status, r.Body)
		}
	}
	if r := h.Get("/v1/permits/export?geo_id=gnosuchgeo000000"); r.Status != http.StatusNotFound {
		t.Errorf("unknown geo: %d", r.Status)
	}
}

// exportCountingReader counts SearchPermits calls.
type exportCountingReader struct {
	readmodel.Reader
	calls atomic.Int64
}

func (c *exportCountingReader) SearchPermits(ctx context.Context, q readmodel.PermitQuery) (readmodel.PermitPage, error) {
	c.calls.Add(1)
	return c.Reader.SearchPermits(ctx, q)
}

// cancelWriter is a client that goes away after the first write.
type cancelWriter struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (w cancelWriter) Write(b []byte) (int, error) {
	w.cancel()
	return w.ResponseRecorder.Write(b)
}

func (w cancelWriter) Flush() {}

// TestPermitExportStopsWhenTheClientLeaves: a client that disconnects
// after the first bytes stops the scan at the next page.
func TestPermitExportStopsWhenTheClientLeaves(t *testing.T) {
	base := apitest.New(t, apitest.Params{})
	base.Publish(gazetteer()...)
	var envs []events.Envelope
	for i := range 350 { // four pages of the export
		v := float64(i)
		envs = append(envs, filterEvent(t, fmt.Sprintf("F%03d", i), "2024-03-01", "Building", "New", "Issued", "", &v))
	}
	base.Publish(envs...)
	cr := &exportCountingReader{Reader: base.Store}
	srv, err := api.NewServer(api.Params{Reader: cr, Auth: apikey.NewDevKeys([]string{apitest.Key}, apikey.DefaultDevPlan),
		CursorSecret: []byte("apitest-cursor-secret-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodGet, "/v1/permits/export?geo_id="+geo98101, nil).WithContext(ctx)
	req.Header.Set("X-API-Key", apitest.Key)
	w := cancelWriter{httptest.NewRecorder(), cancel}
	srv.ServeHTTP(w, req)
	if n := cr.calls.Load(); n != 1 {
		t.Errorf("%d pages read after the client left, want 1", n)
	}
	if got := w.Header().Get("X-Export-Truncated"); got != "error" {
		t.Errorf("truncated %q", got)
	}
}

// exportLimiter admits everything and counts the monthly-quota charges.
type exportLimiter struct{ monthly atomic.Int64 }

func (l *exportLimiter) Allow(_ context.Context, p apikey.Principal) (quota.Decision, error) {
	if p.Plan.MonthlyQuota > 0 {
		if l.monthly.Add(1) > 3 {
			return quota.Decision{Allowed: false, Reason: quota.ReasonMonthlyQuota}, nil
		}
	}
	return quota.Decision{Allowed: true}, nil
}

// TestPermitExportQuota: one charge for the request, one per started
// block of 1,000 rows after the first; the stream ends when the quota is
// gone.
func TestPermitExportQuota(t *testing.T) {
	lim := &exportLimiter{}
	plan := apikey.Plan{Name: "standard", MonthlyQuota: 1000}
	h := apitest.New(t, apitest.Params{Server: api.Params{Limiter: lim, Auth: apikey.NewDevKeys([]string{apitest.Key}, plan)}})
	h.Publish(gazetteer()...)
	var envs []events.Envelope
	for i := range 3500 {
		envs = append(envs, filterEvent(t, fmt.Sprintf("E%04d", i), "2024-03-01", "Building", "New", "Issued", "", nil))
	}
	h.Publish(envs...)
	r := h.Get("/v1/permits/export?geo_id=" + geo98101 + "&format=csv")
	lines := bytes.Count(r.Body, []byte("\n"))
	// charges: request (1), rows 1001.. (2), rows 2001.. (3), rows 3001.. denied
	if r.Status != http.StatusOK || lines != 3001 || r.Header.Get("X-Export-Rows") != "3000" || r.Header.Get("X-Export-Truncated") != "monthly_quota" {
		t.Fatalf("%d: %d lines, rows %q truncated %q", r.Status, lines, r.Header.Get("X-Export-Rows"), r.Header.Get("X-Export-Truncated"))
	}
	if n := lim.monthly.Load(); n != 4 {
		t.Errorf("%d monthly charges, want 4 (the last denied)", n)
	}
}

// slowReader makes every permit page take delay, the pages from the
// slowFrom-th call on take slow (0: never); a read ends early when its
// context does, failing as a timed-out backend would. Atomics: the test
// changes them between requests.
type slowReader struct {
	readmodel.Reader
	delay, slow     atomic.Int64 // nanoseconds
	slowFrom, calls atomic.Int64
}

func (s *slowReader) SearchPermits(ctx context.Context, q readmodel.PermitQuery) (readmodel.PermitPage, error) {
	n := s.calls.Add(1)
	d := time.Duration(s.delay.Load())
	if f := s.slowFrom.Load(); f > 0 && n >= f {
		d = time.Duration(s.slow.Load())
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return readmodel.PermitPage{}, ctx.Err()
	}
	return s.Reader.SearchPermits(ctx, q)
}

// exportPermits is a harness holding the filter gazetteer and 350
// permits (four export pages) numbered prefix000 to prefix349, issued
// 2024-03-01, each valued at its number.
func exportPermits(t *testing.T, prefix string) *apitest.Harness {
	t.Helper()
	base := apitest.New(t, apitest.Params{})
	base.Publish(gazetteer()...)
	var envs []events.Envelope
	for i := range 350 {
		v := float64(i)
		envs = append(envs, filterEvent(t, fmt.Sprintf("%s%03d", prefix, i), "2024-03-01", "Building", "New", "Issued", "", &v))
	}
	base.Publish(envs...)
	return base
}

// exportServer is a real HTTP server (gzip wrapper, trailers, HEAD as
// net/http does them) over 350 permits (four export pages) read through
// a slowReader with delay per page, under the request timeout given.
func exportServer(t *testing.T, delay, timeout time.Duration) (*httptest.Server, *slowReader) {
	t.Helper()
	base := exportPermits(t, "T")
	sr := &slowReader{Reader: base.Store}
	sr.delay.Store(int64(delay))
	h, err := api.NewServer(api.Params{Reader: sr, Auth: apikey.NewDevKeys([]string{apitest.Key}, apikey.DefaultDevPlan),
		CursorSecret: []byte("apitest-cursor-secret-0123456789"), RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, sr
}

func exportGet(t *testing.T, method, url string, gzip bool) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("X-API-Key", apitest.Key)
	if gzip {
		// Set by hand, the transport leaves the body compressed.
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body) // trailers are read with the body
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestPermitExportOutlivesTheRequestTimeout: the business request timeout
// bounds each page read of an export, not the stream: four pages of 80 ms
// under a 200 ms timeout all arrive (320 ms in all), gzipped, with the
// trailers; a page slower than the timeout ends the stream with
// X-Export-Truncated: error; HEAD reads one page and sends no body.
func TestPermitExportOutlivesTheRequestTimeout(t *testing.T) {
	srv, sr := exportServer(t, 80*time.Millisecond, 200*time.Millisecond)
	url := srv.URL + "/v1/permits/export?geo_id=" + geo98101

	resp, body := exportGet(t, http.MethodGet, url, true)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(plain, []byte("\n")); n != 350 {
		t.Errorf("%d lines, want 350", n)
	}
	if rows, tr := resp.Trailer.Get("X-Export-Rows"), resp.Trailer.Get("X-Export-Truncated"); rows != "350" || tr != "" {
		t.Errorf("trailers over gzip: rows %q truncated %q", rows, tr)
	}
	if n := sr.calls.Load(); n != 4 {
		t.Errorf("%d page reads, want 4", n)
	}

	sr.calls.Store(0)
	resp, body = exportGet(t, http.MethodHead, url, false)
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("Content-Type") != "application/x-ndjson" ||
		resp.Header.Get("X-Export-Row-Cap") == "" {
		t.Errorf("HEAD: %d %v %d bytes", resp.StatusCode, resp.Header, len(body))
	}
	if n := sr.calls.Load(); n != 1 {
		t.Errorf("HEAD read %d pages, want 1", n)
	}

	// A page read slower than the timeout: the first one is a 503 before
	// any byte, a later one ends the stream.
	sr.delay.Store(int64(300 * time.Millisecond))
	resp, body = exportGet(t, http.MethodGet, url, false)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("slow first page: %d %s", resp.StatusCode, body)
	}
}

// TestPermitExportSlowLaterPage: a page after the first that takes longer
// than the request timeout ends the stream, flagged in the trailer.
func TestPermitExportSlowLaterPage(t *testing.T) {
	srv, sr := exportServer(t, 0, 200*time.Millisecond)
	sr.slowFrom.Store(2)
	sr.slow.Store(int64(300 * time.Millisecond))
	resp, body := exportGet(t, http.MethodGet, srv.URL+"/v1/permits/export?geo_id="+geo98101+"&format=csv", false)
	lines := bytes.Count(body, []byte("\n"))
	if resp.StatusCode != http.StatusOK || lines != 101 || resp.Trailer.Get("X-Export-Truncated") != "error" ||
		resp.Trailer.Get("X-Export-Rows") != "100" {
		t.Errorf("%d: %d lines (header and one page expected), trailers %v", resp.StatusCode, lines, resp.Trailer)
	}
}

// TestPermitExportConditionalIsCharged: an If-None-Match on a backend
// that is not Versioned defers the request's monthly charge to the 200;
// the export (which never answers 304) charges it before streaming.
func TestPermitExportConditionalIsCharged(t *testing.T) {
	base := apitest.New(t, apitest.Params{})
	base.Publish(gazetteer()...)
	base.Publish(filterEvent(t, "C001", "2024-03-01", "Building", "New", "Issued", "", nil))
	lim := &exportLimiter{}
	plan := apikey.Plan{Name: "standard", MonthlyQuota: 1000}
	srv, err := api.NewServer(api.Params{Reader: &exportCountingReader{Reader: base.Store}, Limiter: lim,
		Auth: apikey.NewDevKeys([]string{apitest.Key}, plan), CursorSecret: []byte("apitest-cursor-secret-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/permits/export?geo_id="+geo98101, nil)
	req.Header.Set("X-API-Key", apitest.Key)
	req.Header.Set("If-None-Match", `"anything"`)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusOK || bytes.Count(w.Body.Bytes(), []byte("\n")) != 1 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if n := lim.monthly.Load(); n != 1 {
		t.Errorf("%d monthly charges, want 1", n)
	}
}
