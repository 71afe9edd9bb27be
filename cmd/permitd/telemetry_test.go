package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota/redistest"
	"github.com/permitd/permitd/readmodel/opensearch"
)

func testTelemetry() (telemetry, *tracetest.SpanRecorder, *prometheus.Registry) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reg := prometheus.NewRegistry()
	return telemetry{metrics: newBackendMetrics(reg), tracer: tp, prop: propagation.TraceContext{}}, spans, reg
}

// TestTraceReachesOpenSearch: one API request over the OpenSearch backend
// (an httptest stand-in) gives a server span and, under it, a client span
// per OpenSearch call; the stand-in receives the same trace in
// traceparent, and the call is in the backend metrics.
func TestTraceReachesOpenSearch(t *testing.T) {
	stand, seen := standIn(t, "Traceparent", http.StatusNotFound, `{"error":{"type":"index_not_found_exception","reason":"no such index [stand-in]"},"status":404}`)

	tel, spans, reg := testTelemetry()
	store, err := opensearch.New(opensearch.Params{Addresses: []string{stand.URL}, WrapTransport: tel.openSearchTransport})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	h, err := api.NewServer(api.Params{
		Reader: store, Auth: apikey.NewDevKeys([]string{"trace-test-key"}, apikey.DefaultDevPlan),
		CursorSecret: []byte("0123456789abcdef0123"), Tracing: tel.apiTracing(),
	})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/locations/gabc", nil)
	req.Header.Set("X-API-Key", "trace-test-key")
	h.ServeHTTP(httptest.NewRecorder(), req)

	var server sdktrace.ReadOnlySpan
	var clients []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			server = s
		case trace.SpanKindClient:
			clients = append(clients, s)
		}
	}
	if server == nil || server.Name() != "GET /v1/locations/:geo_id" {
		t.Fatalf("no server span for the route in %v", spans.Ended())
	}
	if len(clients) == 0 {
		t.Fatal("no client span: the trace does not reach OpenSearch")
	}
	tid := server.SpanContext().TraceID()
	for _, c := range clients {
		if c.Parent().SpanID() != server.SpanContext().SpanID() || c.SpanContext().TraceID() != tid || !strings.HasPrefix(c.Name(), "opensearch ") {
			t.Errorf("client span %q (parent %s) is not under the server span %s", c.Name(), c.Parent().SpanID(), server.SpanContext().SpanID())
		}
	}
	parents := seen()
	if len(parents) == 0 || !strings.Contains(parents[0], tid.String()) {
		t.Fatalf("OpenSearch got traceparent %q, want trace %s", parents, tid)
	}
	if n := testutil.CollectAndCount(reg, "permitd_backend_request_duration_seconds"); n == 0 {
		t.Fatal("no backend duration series after an OpenSearch call")
	}
}

// TestRedisHooks: a Redis command in a traced request is a child span
// (go-redis' redisotel hook) and a backend metrics observation; a miss
// (redis.Nil) is not an error, a dead server is.
func TestRedisHooks(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer rdb.Close()
	tel, spans, reg := testTelemetry()
	if err := tel.instrumentRedis(rdb); err != nil {
		t.Fatal(err)
	}
	ctx, parent := tel.tracer.Tracer("test").Start(context.Background(), "request")
	if err := rdb.Get(ctx, "missing").Err(); err != redis.Nil {
		t.Fatalf("get: %v", err)
	}
	parent.End()
	var child sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			child = s
		}
	}
	if child == nil {
		t.Fatalf("no Redis span under the request: %v", spans.Ended())
	}
	if n := testutil.ToFloat64(tel.metrics.errors.WithLabelValues("redis", "get")); n != 0 {
		t.Fatalf("a miss counted as %v errors", n)
	}
	srv.Stop()
	_ = rdb.Get(context.Background(), "k").Err()
	if n := testutil.ToFloat64(tel.metrics.errors.WithLabelValues("redis", "get")); n != 1 {
		t.Fatalf("errors after the server stopped: %v, want 1", n)
	}
	if n := histogramCount(t, reg, "permitd_backend_request_duration_seconds", "redis", "get"); n != 2 {
		t.Fatalf("redis get durations observed %d, want 2", n)
	}
}

func TestTracingIsOffUnlessAnExporterIsSet(t *testing.T) {
	for name, c := range map[string]struct {
		env     map[string]string
		on      bool
		wantErr string
	}{
		"nothing":          {env: map[string]string{}},
		"none":             {env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		"disabled":         {env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		"endpoint":         {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		"otlp":             {env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		"discard":          {env: map[string]string{"OTEL_TRACES_EXPORTER": "discard"}, on: true},
		"unknown exporter": {env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: "zipkin"},
		"grpc":             {env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "http/protobuf"},
	} {
		t.Run(name, func(t *testing.T) {
			tp, err := newTracerProvider(context.Background(), func(k string) string { return c.env[k] })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tp != nil) != c.on {
				t.Fatalf("tracing on: %v, want %v", tp != nil, c.on)
			}
			if tp != nil {
				_ = tp.Shutdown(context.Background())
			}
		})
	}
}

// TestDiscardRecordsSpans: OTEL_TRACES_EXPORTER=discard exports nothing
// but still samples and records every span, so trace ids reach the access
// log and traceparent the backends (what a collector would receive).
func TestDiscardRecordsSpans(t *testing.T) {
	tp, err := newTracerProvider(context.Background(), func(k string) string {
		return map[string]string{"OTEL_TRACES_EXPORTER": "discard"}[k]
	})
	if err != nil || tp == nil {
		t.Fatalf("discard: %v %v", tp, err)
	}
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "root")
	_, child := tp.Tracer("test").Start(ctx, "child")
	if !span.IsRecording() || !span.SpanContext().IsSampled() || !child.IsRecording() ||
		child.SpanContext().TraceID() != span.SpanContext().TraceID() {
		t.Fatalf("root %v recording %v, child %v recording %v", span.SpanContext(), span.IsRecording(), child.SpanContext(), child.IsRecording())
	}
	child.End()
	span.End()
	if span.IsRecording() {
		t.Fatal("an ended span still records")
	}
}

// histogramCount is the sample count of the backend histogram series.
func histogramCount(t *testing.T, reg *prometheus.Registry, name, backend, op string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["backend"] == backend && l["operation"] == op {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// TestServeExportsSpansOverOTLP: `permitd serve` with
// OTEL_EXPORTER_OTLP_ENDPOINT sends its spans to that collector
// (OTLP/HTTP protobuf on /v1/traces).
func TestServeExportsSpansOverOTLP(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: export soon after the request
	var mu sync.Mutex
	posts := 0
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			mu.Lock()
			posts++
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	base, key, _ := startServeAdminEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}, "-data", "none")
	get(t, base+"/v1/locations/gabc", key)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := posts
		mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no span export reached the collector within 10s")
}
