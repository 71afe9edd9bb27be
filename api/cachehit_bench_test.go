package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/api/quota"
)

// servingParams is the middleware chain `permitd serve` runs: request
// metrics, a buffered text access log at info (one line per request), the
// in-process limiter (a plan it never denies here, so every request pays
// the decision), the response cache.
func servingParams(tb testing.TB) api.Params {
	buf := api.NewBufferedWriter(io.Discard, 0)
	tb.Cleanup(func() { _ = buf.Flush() })
	// The load's development plan (a rate, no monthly quota), at a rate
	// no benchmark reaches.
	plan := apikey.Plan{Name: "bench", RatePerSecond: 1_000_000, Burst: apikey.DefaultDevPlan.Burst}
	return api.Params{
		Auth:        apikey.NewDevKeys([]string{apitest.Key}, plan),
		Limiter:     quota.NewMemory(nil, quota.NewMetrics(prometheus.NewRegistry())),
		AccessLog:   slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})),
		HTTPMetrics: api.NewHTTPMetrics(prometheus.NewRegistry()),
	}
}

// reusableWriter is an http.ResponseWriter that keeps nothing and whose
// header map is cleared, not reallocated, between requests: what it costs
// is not counted against the API.
type reusableWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *reusableWriter) Header() http.Header         { return w.h }
func (w *reusableWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
func (w *reusableWriter) WriteHeader(code int)        { w.code = code }
func (w *reusableWriter) reset()                      { clear(w.h); w.code, w.n = 0, 0 }

// BenchmarkCacheHit is the whole router on a response-cache hit, the
// state of every endpoint under `make load` once warm: the serving chain
// of `permitd serve` (metrics, access log, key check, limiter, ETag, cache
// lookup, gzip wrapper) and nothing of the read model. allocs/op is the
// number to drive to zero: each allocated byte makes the collector mark
// the read model's heap sooner. Variants: a path without a query, a query
// already in canonical order, the same query in another order, a client
// that accepts gzip (the body is under the gzip threshold), a revalidation
// answered 304, and tracing on (every span dropped by the exporter; the
// always_off sampler; and that sampler declared, so no span is started).
func BenchmarkCacheHit(b *testing.B) {
	env := seattle()
	// As OTEL_TRACES_EXPORTER=discard: every span sampled and handed, as
	// it ends, to an exporter that drops it.
	sampled := sdktrace.NewTracerProvider(sdktrace.WithSyncer(discardSpans{}))
	b.Cleanup(func() { _ = sampled.Shutdown(b.Context()) })
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	newHarness := func(tr *api.Tracing) *apitest.Harness {
		d := servingParams(b)
		d.Tracing = tr
		h := apitest.New(b, apitest.Params{Server: d})
		h.Publish(env)
		return h
	}
	plain := newHarness(nil)
	traced := newHarness(&api.Tracing{Provider: sampled})
	tracedOff := newHarness(&api.Tracing{Provider: unsampled})
	tracedRootsOff := newHarness(&api.Tracing{Provider: unsampled, RootsUnsampled: true})
	location := "/v1/locations/" + env.EntityID
	for _, c := range []struct {
		name   string
		h      *apitest.Harness
		path   string
		header http.Header
		code   int
	}{
		{"location", plain, location, nil, http.StatusOK},
		{"query_canonical", plain, "/v1/signals/geo/search?limit=25&state=WA", nil, http.StatusOK},
		{"query_unordered", plain, "/v1/signals/geo/search?state=WA&limit=25", nil, http.StatusOK},
		{"accepts_gzip", plain, location, http.Header{"Accept-Encoding": {"gzip, deflate, br"}}, http.StatusOK},
		{"revalidated_304", plain, location, nil, http.StatusNotModified},
		{"traced_discard", traced, location, nil, http.StatusOK},
		{"traced_sampler_off", tracedOff, location, nil, http.StatusOK},
		{"traced_roots_unsampled", tracedRootsOff, location, nil, http.StatusOK},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, c.path, nil)
			req.Header.Set("X-API-Key", apitest.Key)
			for k, v := range c.header {
				req.Header[k] = v
			}
			w := &reusableWriter{h: http.Header{}}
			c.h.Handler.ServeHTTP(w, req) // fills the cache
			if w.code != http.StatusOK {
				b.Fatalf("%s: %d", c.path, w.code)
			}
			if c.code == http.StatusNotModified {
				req.Header.Set("If-None-Match", w.h.Get("ETag"))
			}
			w.reset()
			c.h.Handler.ServeHTTP(w, req)
			if w.code != c.code {
				b.Fatalf("%s: %d, want %d", c.path, w.code, c.code)
			}
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				w.reset()
				c.h.Handler.ServeHTTP(w, req)
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/1000, "µs/req")
		})
	}
}
