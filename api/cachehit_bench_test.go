package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
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
		AccessLog:   api.AccessLogger(buf, false, &slog.HandlerOptions{Level: slog.LevelInfo}),
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
// answered 304, and tracing on (every span sampled, recorded and dropped
// as it ends, as OTEL_TRACES_EXPORTER=discard; every span handed to an
// exporter that drops it; the always_off sampler; and that sampler
// declared, so no span is started).
func BenchmarkCacheHit(b *testing.B) {
	env := seattle()
	// As OTEL_TRACES_EXPORTER=discard: every span sampled and recorded,
	// and dropped as it ends (no span processor).
	sampled := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = sampled.Shutdown(b.Context()) })
	// Every span sampled and handed, as it ends, to an exporter that drops
	// it: the SDK's export path (a snapshot of the span per span).
	exported := sdktrace.NewTracerProvider(sdktrace.WithSyncer(discardSpans{}))
	b.Cleanup(func() { _ = exported.Shutdown(b.Context()) })
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
	tracedExported := newHarness(&api.Tracing{Provider: exported})
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
		{"traced_exporter", tracedExported, location, nil, http.StatusOK},
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

// BenchmarkCacheHitTracing is the cost of a server span on a response-
// cache hit, the serving chain of BenchmarkCacheHit: the router without
// tracing and with it (every span sampled and recorded; dropped as it
// ends, as OTEL_TRACES_EXPORTER=discard; or handed to an exporter that
// drops it), in interleaved chunks so that the machine's noise and the
// collector's cycles fall on every variant alike. It reports each
// variant's mean µs per request (collections included) and what tracing
// adds to the untraced mean, in µs and as a share of it.
//
// PERMITD_BENCH_HEAP_MB=n holds a live, pointer-rich heap of about n MB
// through the run (small objects linked by pointers, standing in for the
// memory backend's read model), so that each collection marks a heap like
// permitd's and a request's bytes cost about what they cost there: the
// bytes allocated times the marking cost per live byte, over GOGC's
// percentage, whatever n is (docs/operations.md, "Garbage collection").
// Without it the benchmark's heap is a few MB, collections are almost
// free, and what is measured is the span's CPU. Run it with -cpu 1, as
// `make load` runs permitd: with a second P the collector marks on the
// P the benchmark leaves idle, and little of its cost is charged.
func BenchmarkCacheHitTracing(b *testing.B) {
	env := seattle()
	if mb, _ := strconv.Atoi(os.Getenv("PERMITD_BENCH_HEAP_MB")); mb > 0 {
		heap := newBallast(mb)
		runtime.GC()
		b.Cleanup(func() { runtime.KeepAlive(heap) })
		b.ReportMetric(float64(mb), "heap-MB")
	}
	discard := sdktrace.NewTracerProvider()
	exported := sdktrace.NewTracerProvider(sdktrace.WithSyncer(discardSpans{}))
	b.Cleanup(func() { _ = exported.Shutdown(b.Context()) })
	variants := []struct {
		name string
		tr   *api.Tracing
	}{{"untraced", nil}, {"discard", &api.Tracing{Provider: discard}}, {"exporter", &api.Tracing{Provider: exported}}}
	req := httptest.NewRequest(http.MethodGet, "/v1/locations/"+env.EntityID, nil)
	req.Header.Set("X-API-Key", apitest.Key)
	handlers := make([]http.Handler, len(variants))
	w := &reusableWriter{h: http.Header{}}
	for i, v := range variants {
		d := servingParams(b)
		d.Tracing = v.tr
		h := apitest.New(b, apitest.Params{Server: d})
		h.Publish(env)
		handlers[i] = h.Handler
		h.Handler.ServeHTTP(w, req) // fills the cache
		if w.code != http.StatusOK {
			b.Fatalf("%s: %d", v.name, w.code)
		}
		w.reset()
	}
	const chunk = 100
	elapsed := make([]time.Duration, len(variants))
	n := 0
	for b.Loop() {
		for i, h := range handlers {
			start := time.Now()
			for range chunk {
				w.reset()
				h.ServeHTTP(w, req)
			}
			elapsed[i] += time.Since(start)
		}
		n += chunk
	}
	us := func(i int) float64 { return float64(elapsed[i].Nanoseconds()) / float64(n) / 1000 }
	for i, v := range variants {
		b.ReportMetric(us(i), "µs/req_"+v.name)
		if i > 0 {
			b.ReportMetric(us(i)-us(0), "µs_added_"+v.name)
			b.ReportMetric(us(i)/us(0)-1, "share_added_"+v.name)
		}
	}
}

// ballastNode is one object of newBallast's heap: 112 bytes, a pointer
// to the next node and a string of its own (16 bytes), a density of
// pointers at which marking costs about what the read model's does per
// live MB (GODEBUG=gctrace=1: 0.8 to 1.1 ms of collector CPU per MB for
// 430 MB of ballast, 1.1 to 1.5 ms for permitd with the bundled data).
type ballastNode struct {
	next *ballastNode
	key  string
	n    [11]int64
}

// newBallast builds about mb MB of live ballastNodes, a chain that the
// first keeps live.
func newBallast(mb int) *ballastNode {
	var first *ballastNode
	for i := range mb << 20 / 128 {
		first = &ballastNode{next: first, key: strconv.Itoa(1_000_000_000_000 + i)}
	}
	return first
}
