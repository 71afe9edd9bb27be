package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/internal/syncbuf"
)

// counter is the value of permitd_http_requests_total with exactly labels.
func counter(t *testing.T, reg *prometheus.Registry, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "permitd_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsAre(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelsAre(m *dto.Metric, want map[string]string) bool {
	if len(m.GetLabel()) != len(want) {
		return false
	}
	for _, l := range m.GetLabel() {
		if want[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return true
}

func TestHTTPMetricsLabelRoutesNotPaths(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := apitest.New(t, apitest.Params{Server: api.Params{HTTPMetrics: api.NewHTTPMetrics(reg)}})
	h.Get("/v1/locations/gabc")
	h.Get("/v1/locations/gdef")
	h.Do("/v1/locations/gabc", nil) // no key: 403
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/v1/no/such/route", nil),
		httptest.NewRequest(http.MethodGet, "/v1/another/unknown", nil),
		httptest.NewRequest("BREW", "/v1/nothing/here", nil),
	} {
		h.Handler.ServeHTTP(httptest.NewRecorder(), r)
	}

	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"route": "/v1/locations/:geo_id", "method": "GET", "code": "404"}, 2},
		{map[string]string{"route": "/v1/locations/:geo_id", "method": "GET", "code": "403"}, 1},
		{map[string]string{"route": api.RouteUnmatched, "method": "GET", "code": "404"}, 2},
		{map[string]string{"route": api.RouteUnmatched, "method": "OTHER", "code": "404"}, 1},
	} {
		if got := counter(t, reg, c.labels); got != c.want {
			t.Errorf("%v: %v, want %v", c.labels, got, c.want)
		}
	}
	out, _ := reg.Gather()
	var b strings.Builder
	for _, mf := range out {
		b.WriteString(mf.String())
	}
	if s := b.String(); strings.Contains(s, "gabc") || strings.Contains(s, "no/such") || strings.Contains(s, "BREW") {
		t.Fatalf("a path or method token leaked into a label: %s", s)
	}
}

func TestCORSOffByDefault(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	r := h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {apitest.Key}, "Origin": {"https://dash.example.com"}})
	if v := r.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Fatalf("CORS header %q with CORS off", v)
	}
}

func TestCORSListedOrigins(t *testing.T) {
	const origin = "https://dash.example.com"
	h := apitest.New(t, apitest.Params{Server: api.Params{CORS: api.CORS{Origins: []string{origin}}}})

	r := h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {apitest.Key}, "Origin": {origin}})
	if r.Header.Get("Access-Control-Allow-Origin") != origin || r.Status != http.StatusNotFound {
		t.Fatalf("listed origin: %d %v", r.Status, r.Header)
	}
	if exp := r.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(exp, "Etag") && !strings.Contains(exp, "ETag") || !strings.Contains(exp, "Retry-After") {
		t.Fatalf("exposed headers %q", exp)
	}
	if r.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatal("credentials must not be allowed")
	}

	// An unlisted origin is served as without CORS: the spec's answer, no
	// header (the browser keeps it from the page).
	r = h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {apitest.Key}, "Origin": {"https://evil.example.com"}})
	if r.Status != http.StatusNotFound || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("unlisted origin: %d %v", r.Status, r.Header)
	}

	// Preflight: the key header may be sent.
	req := httptest.NewRequest(http.MethodOptions, "/v1/permits/search?geo_id=gabc", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "GET")
	req.Header.Set("Access-Control-Request-Headers", "x-api-key")
	rec := httptest.NewRecorder()
	h.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(strings.ToLower(rec.Header().Get("Access-Control-Allow-Headers")), "x-api-key") {
		t.Fatalf("preflight: %d %v", rec.Code, rec.Header())
	}
}

// TestTraceIDInAccessLog: with tracing on, the request continues the
// caller's trace, its server span is named after the route, and the
// access-log line carries the trace id.
func TestTraceIDInAccessLog(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	spans := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(spans))
	var logs bytes.Buffer
	h := apitest.New(t, apitest.Params{Server: api.Params{
		Logger:  slog.New(slog.NewJSONHandler(&logs, nil)),
		Tracing: &api.Tracing{Provider: tp},
	}})
	h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {apitest.Key}, "Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"}})

	var line map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line); err != nil || line["trace_id"] != traceID {
		t.Fatalf("access log line %q, want trace_id %s", logs.String(), traceID)
	}
	ended := spans.Ended()
	if len(ended) != 1 || ended[0].Name() != "GET /v1/locations/:geo_id" || ended[0].SpanContext().TraceID().String() != traceID {
		t.Fatalf("spans %v", ended)
	}

	// Tracing off: no trace id is made up.
	logs.Reset()
	h = apitest.New(t, apitest.Params{Server: api.Params{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}})
	h.Get("/v1/locations/gabc")
	if strings.Contains(logs.String(), "trace_id") {
		t.Fatalf("trace_id with tracing off: %s", logs.String())
	}
}

// TestServerSpanAttributes: the server span is a SERVER span with the HTTP
// semantic-convention attributes, child of the caller's span; a 404 of
// an unknown route is named "GET unmatched". With ClientAttributes it
// also has client.address and http.response.body.size; without, only the
// required five.
func TestServerSpanAttributes(t *testing.T) {
	t.Run("client", func(t *testing.T) { testServerSpanAttributes(t, true) })
	t.Run("required", func(t *testing.T) { testServerSpanAttributes(t, false) })
}

func testServerSpanAttributes(t *testing.T, client bool) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	spans := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(spans))
	h := apitest.New(t, apitest.Params{Server: api.Params{Tracing: &api.Tracing{Provider: tp, ClientAttributes: client}}})
	h.Publish(seattle())
	h.Do("/v1/locations/"+seattle().EntityID, http.Header{"X-Api-Key": {apitest.Key}, "Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"}})
	h.Handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/nowhere", nil))
	ended := spans.Ended()
	if len(ended) != 2 {
		t.Fatalf("spans %v", ended)
	}
	s := ended[0]
	if s.SpanKind() != oteltrace.SpanKindServer || s.Parent().SpanID().String() != "00f067aa0ba902b7" || !s.Parent().IsRemote() {
		t.Fatalf("span kind %v parent %v", s.SpanKind(), s.Parent())
	}
	got := map[string]string{}
	for _, a := range s.Attributes() {
		got[string(a.Key)] = a.Value.Emit()
	}
	want := map[string]string{
		"http.request.method": "GET", "http.route": "/v1/locations/:geo_id", "url.path": "/v1/locations/" + seattle().EntityID,
		"url.scheme": "http", "http.response.status_code": "200",
	}
	if client {
		want["client.address"] = "192.0.2.1"
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if client && (got["http.response.body.size"] == "" || got["http.response.body.size"] == "0") {
		t.Errorf("http.response.body.size = %q", got["http.response.body.size"])
	}
	if wantN := len(want) + map[bool]int{true: 1}[client]; len(got) != wantN {
		t.Errorf("%d attributes, want %d: %v", len(got), wantN, got)
	}
	if ended[1].Name() != "GET unmatched" {
		t.Errorf("unmatched route span %q", ended[1].Name())
	}
}

// recordOnly is a sampler whose spans record without being sampled.
type recordOnly struct{}

func (recordOnly) ShouldSample(p trace.SamplingParameters) trace.SamplingResult {
	return trace.SamplingResult{Decision: trace.RecordOnly, Tracestate: oteltrace.SpanContextFromContext(p.ParentContext).TraceState()}
}
func (recordOnly) Description() string { return "recordOnly" }

// TestServerSpanAttributesRecordOnly: a span that records but is not
// sampled (a RecordOnly sampler) still gets its attributes and, on a 5xx,
// its status.
func TestServerSpanAttributesRecordOnly(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSampler(recordOnly{}), trace.WithSpanProcessor(spans))
	h := apitest.New(t, apitest.Params{Server: api.Params{Tracing: &api.Tracing{Provider: tp}}})
	h.Handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/nowhere", nil))
	ended := spans.Ended()
	if len(ended) != 1 || ended[0].SpanContext().IsSampled() {
		t.Fatalf("spans %v", ended)
	}
	got := map[string]string{}
	for _, a := range ended[0].Attributes() {
		got[string(a.Key)] = a.Value.Emit()
	}
	if len(got) != 5 || got["http.response.status_code"] != "404" || got["http.route"] != api.RouteUnmatched {
		t.Fatalf("attributes %v", got)
	}
}

// TestRootsUnsampledStartNoSpan: with a sampler that drops every root,
// a request without a caller's trace gets no span and no trace id; a
// caller's sampled trace is still continued, and a caller's unsampled
// context still reaches the handlers (and so the backends).
func TestRootsUnsampledStartNoSpan(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	spans := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(spans), trace.WithSampler(trace.ParentBased(trace.NeverSample())))
	var logs bytes.Buffer
	var seen []oteltrace.SpanContext
	h := apitest.New(t, apitest.Params{Server: api.Params{
		AccessLog: slog.New(slog.NewJSONHandler(&logs, nil)),
		Tracing:   &api.Tracing{Provider: tp, RootsUnsampled: true},
		Auth: authFunc(func(ctx context.Context, key string) (apikey.Principal, error) {
			seen = append(seen, oteltrace.SpanContextFromContext(ctx))
			return apikey.NewDevKeys([]string{apitest.Key}, apikey.DefaultDevPlan).Authenticate(ctx, key)
		}),
	}})
	h.Get("/v1/locations/gabc")
	if len(spans.Ended()) != 0 || strings.Contains(logs.String(), "trace_id") || seen[0].IsValid() {
		t.Fatalf("a root the sampler drops: spans %v, log %s, context %v", spans.Ended(), logs.String(), seen[0])
	}
	h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {apitest.Key}, "Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-00"}})
	if len(spans.Ended()) != 0 || seen[1].TraceID().String() != traceID {
		t.Fatalf("an unsampled caller: spans %v, context %v", spans.Ended(), seen[1])
	}
	h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {apitest.Key}, "Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"}})
	if len(spans.Ended()) != 1 || spans.Ended()[0].SpanContext().TraceID().String() != traceID {
		t.Fatalf("a sampled caller: spans %v", spans.Ended())
	}
}

type authFunc func(ctx context.Context, key string) (apikey.Principal, error)

func (f authFunc) Authenticate(ctx context.Context, key string) (apikey.Principal, error) {
	return f(ctx, key)
}

// TestConcurrentTracedRequests: requests served at once, each through a
// pooled request and pooled state, get their own server span, and every
// access-log line carries the trace id of a span of its own; the
// handlers (here the key check) see the request's span.
func TestConcurrentTracedRequests(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(spans))
	var logs syncbuf.Buffer
	var mu sync.Mutex
	seen := map[string]bool{}
	h := apitest.New(t, apitest.Params{Server: api.Params{
		AccessLog: slog.New(slog.NewJSONHandler(&logs, nil)),
		Tracing:   &api.Tracing{Provider: tp},
		Auth: authFunc(func(ctx context.Context, key string) (apikey.Principal, error) {
			mu.Lock()
			seen[oteltrace.SpanContextFromContext(ctx).TraceID().String()] = true
			mu.Unlock()
			return apikey.NewDevKeys([]string{apitest.Key}, apikey.DefaultDevPlan).Authenticate(ctx, key)
		}),
	}})
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				req := httptest.NewRequest(http.MethodGet, "/v1/locations/gabc", nil)
				req.Header.Set("X-API-Key", apitest.Key)
				h.Handler.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
	wg.Wait()
	ended := map[string]bool{}
	for _, s := range spans.Ended() {
		ended[s.SpanContext().TraceID().String()] = true
	}
	logged := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil || line["msg"] != "request" {
			continue
		}
		id, _ := line["trace_id"].(string)
		if !ended[id] || logged[id] {
			t.Fatalf("access log trace_id %q: not a span's, or logged twice", id)
		}
		logged[id] = true
	}
	if n := workers * each; len(ended) != n || len(logged) != n || len(seen) != n {
		t.Fatalf("%d spans, %d logged trace ids, %d seen by the key check; want %d each", len(ended), len(logged), len(seen), n)
	}
	for id := range seen {
		if !ended[id] {
			t.Fatalf("the key check saw trace %s, no span's", id)
		}
	}
}

// wrappedHandler is a slog handler other than the standard ones: the
// access log does not format its lines in place for it.
type wrappedHandler struct{ slog.Handler }

// TestAccessLogLineSameInPlace: the access-log line of a traced,
// authenticated request reads the same, field for field and in order,
// whether its handler formats in place (the standard text handler: the
// attributes after the fifth are passed as a group with no key, which the
// handler inlines) or not.
func TestAccessLogLineSameInPlace(t *testing.T) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	tp := trace.NewTracerProvider()
	var lines []string
	for _, wrap := range []bool{false, true} {
		var logs bytes.Buffer
		var lh slog.Handler = slog.NewTextHandler(&logs, nil)
		if wrap {
			lh = wrappedHandler{lh}
		}
		h := apitest.New(t, apitest.Params{Server: api.Params{Logger: slog.New(lh), Tracing: &api.Tracing{Provider: tp}}})
		h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {"req-1"},
			"Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"}})
		line := strings.SplitN(logs.String(), "\n", 2)[0]
		lines = append(lines, regexp.MustCompile(`(time|duration)=\S+`).ReplaceAllString(line, "$1=x"))
	}
	const want = `time=x level=INFO msg=request request_id=req-1 method=GET route=/v1/locations/:geo_id path=/v1/locations/gabc status=404 bytes=`
	if lines[0] != lines[1] || !strings.HasPrefix(lines[0], want) ||
		!regexp.MustCompile(` duration=x key_id=\S+ trace_id=`+traceID+`$`).MatchString(lines[0]) {
		t.Fatalf("in place:\n%s\nnot in place:\n%s", lines[0], lines[1])
	}
}
