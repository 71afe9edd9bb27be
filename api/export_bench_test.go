package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
)

// BenchmarkPermitExport streams 100,000 permits of one ZIP as NDJSON and
// reports MB/s (issue 14: at least 50 MB/s).
func BenchmarkPermitExport(b *testing.B) {
	h := apitest.New(b, apitest.Params{})
	h.Publish(gazetteer()...)
	const n = 100_000
	envs := make([]events.Envelope, 0, 4096)
	for i := range n {
		v := float64(i)
		envs = append(envs, filterEvent(b, fmt.Sprintf("X%06d", i), fmt.Sprintf("2024-%02d-%02d", 1+i%12, 1+i%28), "Building", "New", "Issued", "ACME", &v))
		if len(envs) == cap(envs) || i == n-1 {
			h.Publish(envs...)
			envs = envs[:0]
		}
	}
	var bytes int64
	var elapsed time.Duration
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest(http.MethodGet, "/v1/permits/export?geo_id="+geo98101, nil)
		req.Header.Set("X-API-Key", apitest.Key)
		rec := httptest.NewRecorder()
		t0 := time.Now()
		h.Handler.ServeHTTP(rec, req)
		elapsed += time.Since(t0)
		if rec.Code != http.StatusOK || rec.Header().Get("X-Export-Rows") != fmt.Sprint(n) {
			b.Fatalf("%d rows %s", rec.Code, rec.Header().Get("X-Export-Rows"))
		}
		bytes += int64(rec.Body.Len())
	}
	b.StopTimer()
	b.ReportMetric(float64(bytes)/1e6/elapsed.Seconds(), "MB/s")
	b.ReportMetric(float64(bytes)/float64(b.N)/n, "bytes/permit")
}
