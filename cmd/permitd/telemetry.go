package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

// version and revision are set at build time:
//
//	go build -ldflags "-X main.version=v1.4.0 -X main.revision=$(git rev-parse HEAD)"
//
// When empty, the module version and VCS revision Go stamped in the binary
// are used (debug.ReadBuildInfo), else "unknown".
var version, revision string

// buildInfo returns the labels of permitd_build_info.
func buildInfo() (ver, rev, goversion string) {
	ver, rev = version, revision
	if bi, ok := debug.ReadBuildInfo(); ok {
		if ver == "" {
			ver = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if ver == "" {
		ver = "unknown"
	}
	if rev == "" {
		rev = "unknown"
	}
	return ver, rev, runtime.Version()
}

// newBuildInfo is permitd_build_info{version,revision,goversion} 1.
func newBuildInfo() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "permitd_build_info",
		Help: "Always 1; the labels name the build.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(buildInfo()).Set(1)
	return g
}

// serveMetrics are the series serve registers itself (the quota's are
// registered by buildQuota, the read-model size by readModelSize).
type serveMetrics struct {
	indexer *indexer.Metrics
	http    *api.HTTPMetrics
	backend *backendMetrics
}

func newServeMetrics(reg prometheus.Registerer) serveMetrics {
	return serveMetrics{
		indexer: indexer.NewMetrics(reg),
		http:    api.NewHTTPMetrics(reg),
		backend: newBackendMetrics(reg),
	}
}

// readModelSize is permitd_readmodel_documents{kind}: live documents per
// kind, read at scrape time from Reader.Health (the memory backend counts
// in memory; OpenSearch answers one _msearch of counts). A scrape whose
// read fails within two seconds omits the series rather than failing the
// whole scrape; the read-model readiness check reports the error.
type readModelSize struct {
	desc *prometheus.Desc
	r    readmodel.Reader
}

func newReadModelSize(r readmodel.Reader) *readModelSize {
	return &readModelSize{
		desc: prometheus.NewDesc("permitd_readmodel_documents", "Live documents in the read model, by kind.", []string{"kind"}, nil),
		r:    r,
	}
}

func (c *readModelSize) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *readModelSize) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	h, err := c.r.Health(ctx)
	if err != nil {
		return
	}
	for k, n := range h.Counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(k))
	}
}

// backendMetrics are the calls to OpenSearch and Redis:
//
//	permitd_backend_request_duration_seconds{backend,operation}  histogram
//	permitd_backend_errors_total{backend,operation}              counter
//
// backend is opensearch or redis; operation is the OpenSearch API
// (search, msearch, bulk, count, ...; other) or the Redis command (get,
// evalsha, ...; pipeline). An error is a failed call: no answer, or an
// OpenSearch 429 or 5xx (a 404 or 409 is an answer).
type backendMetrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

func newBackendMetrics(reg prometheus.Registerer) *backendMetrics {
	m := &backendMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "permitd_backend_request_duration_seconds",
			Help:    "Duration of calls to a backend (opensearch, redis), by operation.",
			Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"backend", "operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "permitd_backend_errors_total",
			Help: "Failed calls to a backend (no answer, or an OpenSearch 429/5xx), by operation.",
		}, []string{"backend", "operation"}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.errors)
	}
	return m
}

func (m *backendMetrics) observe(backend, op string, d time.Duration, failed bool) {
	m.duration.WithLabelValues(backend, op).Observe(d.Seconds())
	if failed {
		m.errors.WithLabelValues(backend, op).Inc()
	}
}

// openSearchOps are the operation label values; any other API is "other".
var openSearchOps = map[string]bool{
	"search": true, "msearch": true, "bulk": true, "count": true, "doc": true, "mget": true,
	"pit": true, "refresh": true, "alias": true, "aliases": true, "mapping": true,
	"index_template": true, "reindex": true, "tasks": true, "cluster": true, "delete_by_query": true,
}

// openSearchOp names the API of an OpenSearch request path: the first
// segment that starts with "_" (/permitd-permits/_search: search).
func openSearchOp(path string) string {
	for seg := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
		if name, ok := strings.CutPrefix(seg, "_"); ok {
			if openSearchOps[name] {
				return name
			}
			return "other"
		}
	}
	if path == "/" || path == "" {
		return "info"
	}
	return "other"
}

type metricsTransport struct {
	next http.RoundTripper
	m    *backendMetrics
}

func (t metricsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := t.next.RoundTrip(r)
	failed := err != nil || res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500
	t.m.observe("opensearch", openSearchOp(r.URL.Path), time.Since(start), failed)
	return res, err
}

// redisMetricsHook times every Redis command (pipelines as one call).
type redisMetricsHook struct{ m *backendMetrics }

func (h redisMetricsHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisMetricsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.m.observe("redis", cmd.Name(), time.Since(start), err != nil && !errors.Is(err, redis.Nil))
		return err
	}
}

func (h redisMetricsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.m.observe("redis", "pipeline", time.Since(start), err != nil && !errors.Is(err, redis.Nil))
		return err
	}
}

// telemetry wires metrics and traces into the backends' clients.
type telemetry struct {
	metrics *backendMetrics
	// tracer is nil when tracing is off.
	tracer trace.TracerProvider
	prop   propagation.TextMapPropagator
	// rootsUnsampled: OTEL_TRACES_SAMPLER drops every span without a
	// sampled parent (api.Tracing.RootsUnsampled).
	rootsUnsampled bool
}

// openSearchTransport wraps the OpenSearch client's transport: metrics
// innermost (one observation per HTTP attempt), then the client span.
func (t telemetry) openSearchTransport(next http.RoundTripper) http.RoundTripper {
	var rt http.RoundTripper = metricsTransport{next: next, m: t.metrics}
	if t.tracer != nil {
		rt = otelhttp.NewTransport(rt,
			otelhttp.WithTracerProvider(t.tracer), otelhttp.WithPropagators(t.prop),
			otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				return "opensearch " + openSearchOp(r.URL.Path)
			}))
	}
	return rt
}

// instrumentRedis adds the metrics hook and, with tracing on, go-redis'
// own tracing hook (redisotel).
func (t telemetry) instrumentRedis(rdb *redis.Client) error {
	rdb.AddHook(redisMetricsHook{m: t.metrics})
	if t.tracer == nil {
		return nil
	}
	return redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(t.tracer), redisotel.WithDBStatement(false))
}

// apiTracing is the API's tracing, nil when off.
func (t telemetry) apiTracing() *api.Tracing {
	if t.tracer == nil {
		return nil
	}
	return &api.Tracing{Provider: t.tracer, Propagator: t.prop, RootsUnsampled: t.rootsUnsampled}
}

// newTracerProvider configures tracing from the standard OpenTelemetry
// variables; it returns nil (tracing off, no middleware installed) unless
// an exporter is asked for:
//
//	OTEL_SDK_DISABLED=true                      off
//	OTEL_TRACES_EXPORTER=none                   off
//	OTEL_TRACES_EXPORTER=otlp                   OTLP over HTTP/protobuf
//	OTEL_TRACES_EXPORTER=discard                spans are sampled and recorded, and dropped as
//	                                            they end (permitd's own value; no span
//	                                            processor, so no export copy and no queue):
//	                                            trace ids in the access log and traceparent
//	                                            to the backends, and a way to measure
//	                                            tracing's cost without a collector
//	OTEL_TRACES_EXPORTER unset                  otlp when OTEL_EXPORTER_OTLP_ENDPOINT
//	                                            or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//	                                            is set, else off
//
// The exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, certificates), the SDK reads OTEL_TRACES_SAMPLER(_ARG) (default
// parentbased_always_on) and OTEL_BSP_*, and OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override the resource (service.name permitd).
// Only the http/protobuf protocol is built in.
func newTracerProvider(ctx context.Context, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exp == "" && (getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") {
		exp = "otlp"
	}
	switch exp {
	case "", "none":
		return nil, nil
	case "otlp":
	case "discard":
		res, err := traceResource(ctx)
		if err != nil {
			return nil, err
		}
		// No span processor: spans are sampled and recorded as with an
		// exporter (trace ids, propagation, attributes), and the SDK
		// drops each as it ends, without building the read-only copy an
		// exporter is handed.
		return sdktrace.NewTracerProvider(sdktrace.WithResource(res)), nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER %q: want otlp, discard or none", exp)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: only http/protobuf is built in", proto)
	}
	// The endpoint is read here with the command's environment; the
	// exporter reads the other OTEL_EXPORTER_OTLP_* variables itself.
	var opts []otlptracehttp.Option
	if u := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	} else if u := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); u != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(u, "/")+"/v1/traces"))
	}
	exporter, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	res, err := traceResource(ctx)
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)), nil
}

// traceResource is service.name permitd and the build's version, which
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override.
func traceResource(ctx context.Context) (*resource.Resource, error) {
	ver, _, _ := buildInfo()
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "permitd"), attribute.String("service.version", ver)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return res, nil
}

// newTelemetry builds serve's telemetry; stop flushes the spans still
// buffered (call it once the servers have shut down).
func newTelemetry(ctx context.Context, getenv func(string) string, m *backendMetrics, log *slog.Logger) (t telemetry, stop func(), err error) {
	tp, err := newTracerProvider(ctx, getenv)
	if err != nil {
		return telemetry{}, nil, err
	}
	t = telemetry{metrics: m, prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
	if tp == nil {
		return t, func() {}, nil
	}
	log.Info("tracing on", "exporter", cmp.Or(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "otlp"))
	t.tracer = tp
	// The SDK reads the sampler from the same variable.
	switch strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")) {
	case "always_off", "parentbased_always_off":
		t.rootsUnsampled = true
	}
	return t, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			log.Warn("tracing: flushing spans at shutdown", "err", err)
		}
	}, nil
}
