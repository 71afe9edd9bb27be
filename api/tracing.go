package api

import (
	"context"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracing configures the API's OpenTelemetry server spans: one span per
// request, named after the route pattern ("GET /v1/locations/:geo_id"),
// continuing the caller's trace when the request carries a W3C
// traceparent, with the HTTP semantic-convention attributes a server span
// requires (method, route, path, scheme, status code; with
// ClientAttributes also the recommended client address and the opt-in
// response body size). A nil *Tracing installs nothing, so tracing off
// costs nothing.
//
// The middleware is written on the OpenTelemetry API rather than otelgin,
// for its cost per request: it reads the propagation headers only when
// the request has one, names spans from a table made once per route,
// computes attributes only for a span that records (from a pooled array
// the SDK copies), and, with RootsUnsampled, starts no span at all for a
// request the sampler would drop. A sampled request allocates the SDK's
// span, its attribute slice and context; the request carrying that
// context to the handlers is pooled (spanRequest).
type Tracing struct {
	Provider trace.TracerProvider
	// Propagator reads the caller's trace context; nil: W3C trace context
	// and baggage.
	Propagator propagation.TextMapPropagator
	// RootsUnsampled says the provider's sampler drops every span without
	// a sampled parent (always_off, parentbased_always_off): a request
	// without a sampled caller then gets no span (and no trace id in the
	// access log); a caller's unsampled context is still passed on to the
	// backends.
	RootsUnsampled bool
	// ClientAttributes adds client.address (recommended by the HTTP
	// semantic conventions) and http.response.body.size (opt-in) to every
	// server span: two more attributes (128 bytes) a sampled request.
	ClientAttributes bool
}

// tracerName is the instrumentation scope of the API's spans.
const tracerName = "github.com/permitd/permitd/api"

func (t *Tracing) middleware() gin.HandlerFunc {
	prop := t.Propagator
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	var fields []string
	for _, f := range prop.Fields() {
		fields = append(fields, http.CanonicalHeaderKey(f))
	}
	tracer := t.Provider.Tracer(tracerName)
	names := &spanNames{}
	names.m.Store(&map[string]*routeSpanNames{})
	// Passed as a slice made once: a variadic list would be a new slice
	// per request (the tracer is an interface, so it escapes).
	startOpts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	return func(c *gin.Context) {
		req := c.Request
		ctx := req.Context()
		for _, f := range fields {
			if _, ok := req.Header[f]; ok {
				ctx = prop.Extract(ctx, propagation.HeaderCarrier(req.Header))
				break
			}
		}
		if t.RootsUnsampled && !trace.SpanContextFromContext(ctx).IsSampled() {
			if ctx == req.Context() {
				c.Next()
				return
			}
			sr := spanRequestPool.Get().(*spanRequest)
			sr.carry(req, ctx) // the caller's unsampled context
			c.Request = &sr.req
			c.Next()
			c.Request = req
			sr.release()
			spanRequestPool.Put(sr)
			return
		}
		ctx, span := tracer.Start(ctx, names.get(req.Method, c.FullPath()), startOpts...)
		sr := spanRequestPool.Get().(*spanRequest)
		sr.carry(req, ctx)
		c.Request = &sr.req
		c.Next()
		// A sampled span records (the SDK's RecordAndSample); asking
		// IsRecording, which takes the span's lock, is left for the
		// others (a RecordOnly sampler's).
		if span.SpanContext().IsSampled() || span.IsRecording() {
			sr.setServerAttributes(span, c, req, t.ClientAttributes)
		}
		span.End()
		c.Request = req
		sr.release()
		spanRequestPool.Put(sr)
	}
}

// spanRequest carries a server span's context to the handlers, the
// access log and the backends (which all read c.Request.Context()) in
// place of req.WithContext, which copies the request (320 bytes) per
// request. It is pooled: its request's context is fixed, set once, to
// its own spanContext, and each use points that at the context the
// tracer returned and copies the request's exported fields in. Its
// lifetime is the request's: nothing may keep the request or its context
// once the handler chain returns (as with net/http's own, whose context
// is canceled then); a late use sees an ended, canceled context with no
// values, never another request's.
type spanRequest struct {
	req http.Request
	ctx spanContext
	// attrs is the scratch list of the span's attributes: the span
	// copies them (SetAttributes), so the pooled array serves every
	// request instead of a variadic slice made per request.
	attrs [7]attribute.KeyValue
}

// spanContext is a context.Context that answers as the context it points
// at: a stable address for a pooled request's context.
type spanContext struct{ context.Context }

var spanRequestPool = sync.Pool{New: func() any {
	sr := new(spanRequest)
	sr.ctx.Context = endedContext
	sr.req = *new(http.Request).WithContext(&sr.ctx)
	return sr
}}

// endedContext is what a released spanRequest's context answers as.
var endedContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// carry makes sr.req a copy of req whose context is ctx.
func (sr *spanRequest) carry(req *http.Request, ctx context.Context) {
	copyRequest(&sr.req, req)
	sr.ctx.Context = ctx
}

// release drops what sr refers to of its request.
func (sr *spanRequest) release() {
	copyRequest(&sr.req, &http.Request{})
	sr.ctx.Context = endedContext
}

// copyRequest copies the exported fields of src to dst, leaving dst's
// context. ServeMux's path values (unexported) are not copied: Gin routes
// by its own tree. TestCopyRequestFields fails when http.Request gains an
// exported field this does not copy.
func copyRequest(dst, src *http.Request) {
	dst.Method = src.Method
	dst.URL = src.URL
	dst.Proto = src.Proto
	dst.ProtoMajor = src.ProtoMajor
	dst.ProtoMinor = src.ProtoMinor
	dst.Header = src.Header
	dst.Body = src.Body
	dst.GetBody = src.GetBody
	dst.ContentLength = src.ContentLength
	dst.TransferEncoding = src.TransferEncoding
	dst.Close = src.Close
	dst.Host = src.Host
	dst.Form = src.Form
	dst.PostForm = src.PostForm
	dst.MultipartForm = src.MultipartForm
	dst.Trailer = src.Trailer
	dst.RemoteAddr = src.RemoteAddr
	dst.RequestURI = src.RequestURI
	dst.TLS = src.TLS
	dst.Cancel = src.Cancel //nolint:staticcheck // a field like the others
	dst.Response = src.Response
	dst.Pattern = src.Pattern
}

// setServerAttributes sets the HTTP semantic-convention attributes of a
// server span once the response is written: the five the conventions
// require of a server span that has a route and a response, and with
// client the recommended client address and opt-in body size. The SDK
// grows the span's attribute slice to what one call passes, so the
// required ones alone cost 320 bytes rather than 448.
func (sr *spanRequest) setServerAttributes(span trace.Span, c *gin.Context, req *http.Request, client bool) {
	status := c.Writer.Status()
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	route := c.FullPath()
	if route == "" {
		route = RouteUnmatched
	}
	a := &sr.attrs
	a[0] = semconv.HTTPRequestMethodKey.String(methodLabel(req.Method))
	a[1] = semconv.HTTPRoute(route)
	a[2] = semconv.URLPath(req.URL.Path)
	a[3] = semconv.URLScheme(scheme)
	a[4] = semconv.HTTPResponseStatusCode(status)
	n := 5
	if client {
		addr := req.RemoteAddr
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = host
		}
		a[5] = semconv.HTTPResponseBodySize(max(c.Writer.Size(), 0))
		a[6] = semconv.ClientAddress(addr)
		n = 7
	}
	span.SetAttributes(a[:n]...)
	clear(a[:n]) // keeps no request's strings alive in the pool
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}

// spanNames are the span names per route and method, made once: a
// copy-on-write map by route pattern (one string to hash per request),
// read without a lock, of the route's names per standard method.
type spanNames struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]*routeSpanNames]
}

// routeSpanNames are one route's span names, by methodIndex.
type routeSpanNames [len(standardMethods)]string

// standardMethods are the methods spans are named after as sent (the
// ones methodLabel keeps).
var standardMethods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// methodIndex is m's index in standardMethods, -1 for any other token.
func methodIndex(m string) int {
	switch m {
	case "GET":
		return 0
	case "HEAD":
		return 1
	case "POST":
		return 2
	case "PUT":
		return 3
	case "PATCH":
		return 4
	case "DELETE":
		return 5
	case "OPTIONS":
		return 6
	case "CONNECT":
		return 7
	case "TRACE":
		return 8
	}
	return -1
}

func spanName(method, route string) string {
	if route == "" {
		route = RouteUnmatched
	}
	return method + " " + route
}

func (n *spanNames) get(method, route string) string {
	i := methodIndex(method)
	if i < 0 {
		return spanName(method, route) // any token may be a method: only the standard ones are kept
	}
	if r, ok := (*n.m.Load())[route]; ok {
		return r[i]
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	old := *n.m.Load()
	if r, ok := old[route]; ok {
		return r[i]
	}
	r := new(routeSpanNames)
	for j, m := range standardMethods {
		r[j] = spanName(m, route)
	}
	next := make(map[string]*routeSpanNames, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[route] = r
	n.m.Store(&next)
	return r[i]
}

// traceIDAttr is the access log's trace_id attribute. With inPlace (the
// handler formats the record before Handle returns and keeps nothing of
// it) the hex is written into the request's pooled state and the
// attribute's string points at it, rather than a string made per
// request; the state outlives the Handle call, and is cleared and reused
// only once the request has ended.
func traceIDAttr(st *reqState, id trace.TraceID, inPlace bool) slog.Attr {
	if !inPlace {
		return slog.String("trace_id", id.String())
	}
	return slog.String("trace_id", st.traceIDHex(id))
}

// traceIDHex writes id's hex into st and returns it, a string over st's
// bytes: valid until the request has ended.
func (st *reqState) traceIDHex(id trace.TraceID) string {
	hex.Encode(st.traceHex[:], id[:])
	return unsafe.String(&st.traceHex[0], len(st.traceHex))
}

// formatsInPlace says whether h is one of the standard library's text or
// JSON handlers, which write a record's line before Handle returns and
// keep none of its values (a ReplaceAttr option that kept an attribute's
// string would break this; permitd sets none on its access log).
func formatsInPlace(h slog.Handler) bool {
	switch h.(type) {
	case *slog.TextHandler, *slog.JSONHandler:
		return true
	case *lineHandler: // one of them (AccessLogger)
		return true
	}
	return false
}

// edge is the middleware that sees every request first, outermost first:
// the server span, the request metrics, CORS.
func (s *server) edge() []gin.HandlerFunc {
	var hs []gin.HandlerFunc
	if s.Tracing != nil && s.Tracing.Provider != nil {
		hs = append(hs, s.Tracing.middleware())
	}
	if s.HTTPMetrics != nil {
		hs = append(hs, s.HTTPMetrics.middleware())
	}
	if len(s.CORS.Origins) > 0 {
		hs = append(hs, s.CORS.middleware())
	}
	return hs
}
