// Package api serves permitd's HTTP API v1 with Gin. It reads only through
// readmodel.Reader and knows nothing of a backend; cmd/ wires everything.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/klauspost/compress/gzhttp"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/internal/cursor"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/readmodel"
)

// Params is everything the API needs.
type Params struct {
	Reader  readmodel.Reader
	Auth    apikey.Authenticator
	Limiter quota.Limiter // nil admits everything
	Logger  *slog.Logger  // nil discards
	// AccessLog receives one line per request; nil is Logger. cmd/ gives
	// it a buffered writer (see BufferedWriter) so that a request costs
	// no write syscall.
	AccessLog *slog.Logger

	// Now is the service clock ("today" for freshness); nil is time.Now.
	Now func() time.Time
	// ClockSource says where Now comes from ("system", "PERMITD_NOW"), for
	// readiness.
	ClockSource string

	// CursorSecret signs pagination cursors; at least 16 bytes.
	CursorSecret []byte

	// OpenAPI is the document served at /v1/openapi.json.
	OpenAPI []byte
	// HTTPMetrics, when set, records every request (see NewHTTPMetrics).
	// The metrics are served by the admin listener (NewAdmin), never here.
	HTTPMetrics *HTTPMetrics
	// Tracing, when set, starts a server span per request (see Tracing).
	Tracing *Tracing
	// CORS, when it lists origins, answers browsers from them (see CORS).
	CORS CORS
	// Checks feed /v1/health/ready; the service is ready when every check
	// is OK.
	Checks []ReadinessCheck

	// RequestTimeout bounds each business request's reads; past it the
	// answer is 503 BACKEND_UNAVAILABLE. 0 is 10s.
	RequestTimeout time.Duration

	// ResponseCacheBytes bounds the encoded 200 bodies kept per read-model
	// version (respcache.go; only with a Versioned reader). 0 is 64 MiB;
	// negative turns the cache off.
	ResponseCacheBytes int64
}

// ReadinessCheck reports one dependency's state.
type ReadinessCheck func(ctx context.Context) Check

// Check is one dependency's state in /v1/health/ready.
type Check struct {
	Name   string
	OK     bool
	Detail map[string]any
}

// server holds the wired dependencies for the handlers.
type server struct {
	Params
	log       *slog.Logger
	access    *slog.Logger
	cursors   *cursor.Codec
	versioned readmodel.Versioned // nil: ETags hash the body
	cache     *respCache          // nil: off
}

// NewServer validates deps and returns the HTTP handler.
func NewServer(d Params) (http.Handler, error) {
	if d.Reader == nil || d.Auth == nil {
		return nil, errors.New("api: Reader and Auth are required")
	}
	if len(d.CursorSecret) < 16 {
		return nil, errors.New("api: CursorSecret must be at least 16 bytes")
	}
	if d.Limiter == nil {
		d.Limiter = quota.Unlimited{}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.RequestTimeout <= 0 {
		d.RequestTimeout = defaultRequestTimeout
	}
	if d.ClockSource == "" {
		d.ClockSource = "system"
	}
	if d.AccessLog == nil {
		d.AccessLog = d.Logger
	}
	s := &server{Params: d, log: d.Logger, access: d.AccessLog, cursors: cursor.New(d.CursorSecret)}
	s.versioned, _ = d.Reader.(readmodel.Versioned)
	if s.versioned != nil {
		size := d.ResponseCacheBytes
		if size == 0 {
			size = 64 << 20
		}
		s.cache = newRespCache(size)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.ContextWithFallback = true
	r.Use(s.edge()...)
	r.Use(withRequestID(), withAccessLog(s.access), withRecovery(s.log))
	r.NoRoute(func(c *gin.Context) { writeError(c, s.log, notFound{what: "route " + c.Request.URL.Path}) })
	s.routes(r)
	gz, err := gzhttp.NewWrapper(gzhttp.MinSize(gzipMinSize), gzhttp.EnableZstd(false), gzhttp.SuffixETag(gzipSuffix))
	if err != nil {
		return nil, err
	}
	plain := withState(r)
	compressed := gz(plain)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if acceptsOnlyIdentity(req) {
			// What gzhttp would do for this client, without its
			// per-request writer: the answer varies by Accept-Encoding,
			// and is never compressed.
			w.Header()["Vary"] = hdrVaryEncoding
			plain.ServeHTTP(w, req)
			return
		}
		compressed.ServeHTTP(w, req)
	}), nil
}

// acceptsOnlyIdentity reports whether the client asks for no content
// coding: no Accept-Encoding, or exactly "identity". gzhttp would answer
// it uncompressed; anything else goes through gzhttp, which parses the
// header.
func acceptsOnlyIdentity(r *http.Request) bool {
	v := r.Header["Accept-Encoding"]
	return len(v) == 0 || len(v) == 1 && (v[0] == "" || v[0] == "identity")
}

// gzipMinSize: bodies from this size on are gzipped for clients that
// accept it (gzhttp buffers smaller ones and sends them as they are).
const gzipMinSize = 1024

// handler adapts an error-returning handler to Gin through the one error
// mapper.
func (s *server) handler(fn func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := fn(c); err != nil {
			writeError(c, s.log, err)
		}
	}
}

// today is the service clock's UTC date.
func (s *server) today() time.Time {
	t := s.Now().UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}
