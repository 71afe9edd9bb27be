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
	"github.com/permitd/permitd/api/cursor"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/readmodel"
)

// Deps is everything the API needs.
type Deps struct {
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
	// Metrics, when set, is served at /metrics without a key.
	Metrics http.Handler
	// Checks feed /v1/health/ready; the service is ready when every check
	// is OK.
	Checks []ReadinessCheck
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
	Deps
	log       *slog.Logger
	access    *slog.Logger
	cursors   *cursor.Codec
	versioned readmodel.Versioned // nil: ETags hash the body
}

// NewServer validates deps and returns the HTTP handler.
func NewServer(d Deps) (http.Handler, error) {
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
	if d.ClockSource == "" {
		d.ClockSource = "system"
	}
	if d.AccessLog == nil {
		d.AccessLog = d.Logger
	}
	s := &server{Deps: d, log: d.Logger, access: d.AccessLog, cursors: cursor.New(d.CursorSecret)}
	s.versioned, _ = d.Reader.(readmodel.Versioned)
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = false
	r.ContextWithFallback = true
	r.Use(withRequestID(), withAccessLog(s.access), withRecovery(s.log))
	r.NoRoute(func(c *gin.Context) { writeError(c, s.log, notFound{what: "route " + c.Request.URL.Path}) })
	s.routes(r)
	gz, err := gzhttp.NewWrapper(gzhttp.MinSize(gzipMinSize), gzhttp.EnableZstd(false), gzhttp.SuffixETag(gzipSuffix))
	if err != nil {
		return nil, err
	}
	return gz(r), nil
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
