package api

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/events"
)

// BenchmarkEndpoints serves each v1 endpoint in process (no network) over
// the bundled data: the API's own cost (middleware, encoding, cursors)
// beside the read's. Profile with -cpuprofile to split them.
func BenchmarkEndpoints(b *testing.B) {
	store := bundledStoreB(b)
	h, err := NewServer(Params{
		Reader: store, Auth: apikey.NewDevKeys([]string{"bench-key-0123456789"}, apikey.DefaultDevPlan),
		CursorSecret: []byte("bench-cursor-secret-0123456789"), Now: func() time.Time { return encNow },
	})
	if err != nil {
		b.Fatal(err)
	}
	seattle := events.GeoID("city", "1840021117")
	wa := events.GeoID("state", "WA")
	paths := []struct{ name, path string }{
		{"resolve", "/v1/locations/resolve?query=" + url.QueryEscape("Spokane Valley")},
		{"location", "/v1/locations/" + seattle},
		{"permits", "/v1/permits/search?limit=25&geo_id=" + seattle},
		{"catalog", "/v1/signals/catalog?state=WA"},
		{"geo_location", "/v1/signals/geo/location/" + seattle},
		{"geo_search", "/v1/signals/geo/search?state=WA&limit=25"},
		{"leads", "/v1/signals/permit/leads?include_stale=true&geo_id=" + seattle},
		{"stats", "/v1/signals/permit/stats?include_stale=true&geo_id=" + wa},
	}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, p.path, nil)
			req.Header.Set("X-API-Key", "bench-key-0123456789")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", p.path, rec.Code, rec.Body)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := discardRecorder{h: http.Header{}}
				h.ServeHTTP(&rec, req)
			}
		})
	}
}

// discardRecorder is a ResponseWriter that keeps nothing.
type discardRecorder struct {
	h    http.Header
	code int
}

func (d *discardRecorder) Header() http.Header         { return d.h }
func (d *discardRecorder) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardRecorder) WriteHeader(code int)        { d.code = code }
