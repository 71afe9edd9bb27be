package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/readmodel"
)

// scanningReader is a backend with its own export scan
// (readmodel.PermitScanner), recording what the export does with it; the
// scan's page failNext (1-based, 0: none) fails.
type scanningReader struct {
	readmodel.Reader
	failNext              int64
	opened, nexts, closed atomic.Int64
	searches              atomic.Int64
	max                   atomic.Int64 // the last scan's bound
}

func (r *scanningReader) SearchPermits(ctx context.Context, q readmodel.PermitQuery) (readmodel.PermitPage, error) {
	r.searches.Add(1)
	return r.Reader.SearchPermits(ctx, q)
}

func (r *scanningReader) OpenPermitScan(_ context.Context, q readmodel.PermitQuery, maxRows int) (readmodel.PermitScan, error) {
	r.opened.Add(1)
	r.max.Store(int64(maxRows))
	return &recordingScan{r: r, inner: readmodel.PagedPermitScan(r.Reader, q)}, nil
}

type recordingScan struct {
	r     *scanningReader
	inner readmodel.PermitScan
}

func (s *recordingScan) Next(ctx context.Context) (readmodel.PermitPage, error) {
	if n := s.r.nexts.Add(1); n == s.r.failNext {
		return readmodel.PermitPage{}, fmt.Errorf("%w: page %d lost", readmodel.ErrUnavailable, n)
	}
	return s.inner.Next(ctx)
}

func (s *recordingScan) Close() error { s.r.closed.Add(1); return s.inner.Close() }

// scanExportServer: 350 permits (four export pages) behind a
// scanningReader.
func scanExportServer(t *testing.T, failNext int64) (http.Handler, *scanningReader) {
	t.Helper()
	base := exportPermits(t, "S")
	sr := &scanningReader{Reader: base.Store, failNext: failNext}
	h, err := api.NewServer(api.Params{Reader: sr, Auth: apikey.NewDevKeys([]string{apitest.Key}, apikey.DefaultDevPlan),
		CursorSecret: []byte("apitest-cursor-secret-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	return h, sr
}

// TestPermitExportUsesTheBackendScan: a backend with its own scan (the
// OpenSearch point in time) is read through it, never through search
// pages, and the scan is closed once however the export ends: at the
// end, after a failed page, when the client leaves, for HEAD and for an
// unknown geography.
func TestPermitExportUsesTheBackendScan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		geo       string
		failNext  int64
		leave     bool
		status    int
		rows      string
		truncated string
		nexts     int64
	}{
		{"whole export", http.MethodGet, geo98101, 0, false, http.StatusOK, "350", "", 4},
		{"a later page fails", http.MethodGet, geo98101, 3, false, http.StatusOK, "200", "error", 3},
		{"the first page fails", http.MethodGet, geo98101, 1, false, http.StatusServiceUnavailable, "", "", 1},
		{"the client leaves", http.MethodGet, geo98101, 0, true, http.StatusOK, "100", "error", 1},
		{"HEAD", http.MethodHead, geo98101, 0, false, http.StatusOK, "", "", 1},
		{"unknown geography", http.MethodGet, "gnosuchgeo000000", 0, false, http.StatusNotFound, "", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, sr := scanExportServer(t, tc.failNext)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := httptest.NewRequest(tc.method, "/v1/permits/export?geo_id="+tc.geo, nil).WithContext(ctx)
			req.Header.Set("X-API-Key", apitest.Key)
			rec := httptest.NewRecorder()
			var w http.ResponseWriter = rec
			if tc.leave {
				w = cancelWriter{rec, cancel}
			}
			h.ServeHTTP(w, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %.300s", rec.Code, tc.status, rec.Body)
			}
			if got := rec.Header().Get("X-Export-Rows"); got != tc.rows {
				t.Errorf("rows %q, want %q", got, tc.rows)
			}
			if got := rec.Header().Get("X-Export-Truncated"); got != tc.truncated {
				t.Errorf("truncated %q, want %q", got, tc.truncated)
			}
			if tc.status == http.StatusOK && tc.method == http.MethodGet {
				if n := int64(strings.Count(rec.Body.String(), "\n")); fmt.Sprint(n) != tc.rows {
					t.Errorf("%d lines, rows trailer %s", n, tc.rows)
				}
			}
			if o, n, c := sr.opened.Load(), sr.nexts.Load(), sr.closed.Load(); o != 1 || n != tc.nexts || c != 1 {
				t.Errorf("scans opened %d, pages %d, closed %d; want 1, %d, 1", o, n, tc.nexts, c)
			}
			// The development plan's row cap is 5,000,000; HEAD reads a page.
			want := int64(5_000_001)
			if tc.method == http.MethodHead {
				want = 100
			}
			if got := sr.max.Load(); got != want {
				t.Errorf("scan bound %d, want %d", got, want)
			}
			if got := sr.searches.Load(); got != 0 {
				t.Errorf("%d SearchPermits calls beside the scan", got)
			}
		})
	}
}

// TestPagedPermitScan: the fallback scan pages SearchPermits to the end
// and then refuses another page.
func TestPagedPermitScan(t *testing.T) {
	h := filterHarness(t)
	s := readmodel.PagedPermitScan(h.Store, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo98101), Desc: true, Limit: 7})
	n := 0
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("scan does not end")
		}
		p, err := s.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(p.Permits)
		if p.Next == nil {
			break
		}
	}
	want := walkFiltered(t, h, map[string][]string{"geo_id": {geo98101}, "limit": {"100"}})
	if n != len(want) {
		t.Errorf("%d permits scanned, search pages %d", n, len(want))
	}
	if _, err := s.Next(context.Background()); err == nil || errors.Is(err, readmodel.ErrNotFound) {
		t.Errorf("Next after the last page: %v", err)
	}
}
