package api

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/gin-gonic/gin"
)

// AdminParams configure the admin listener's handler.
type AdminParams struct {
	// Metrics is served at /metrics.
	Metrics http.Handler
	// Pprof serves Go's profiles under /debug/pprof/.
	Pprof bool
}

// NewAdmin returns the handler of the admin listener: /metrics, the health
// endpoints (/v1/health/live and /v1/health/ready, the same answers as on
// the public port, from d's Checks, Now and ClockSource) and, with
// o.Pprof, /debug/pprof/. It has no key check: bind it to a private
// address. Its requests are not in the access log nor in the HTTP
// metrics, so probes and scrapes do not drown the traffic.
func NewAdmin(d Params, o AdminParams) http.Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.ClockSource == "" {
		d.ClockSource = "system"
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{Params: d, log: d.Logger}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// The health answers carry an X-Request-ID as on the public port (the
	// document requires it of both).
	r.GET("/v1/health/live", withRequestID(), s.live)
	r.GET("/v1/health/ready", withRequestID(), s.ready)
	if o.Metrics != nil {
		r.GET("/metrics", gin.WrapH(o.Metrics))
	}
	if o.Pprof {
		r.GET("/debug/pprof/cmdline", gin.WrapF(pprof.Cmdline))
		r.GET("/debug/pprof/profile", gin.WrapF(pprof.Profile))
		r.GET("/debug/pprof/symbol", gin.WrapF(pprof.Symbol))
		r.GET("/debug/pprof/trace", gin.WrapF(pprof.Trace))
		r.GET("/debug/pprof/", gin.WrapF(pprof.Index))
		r.GET("/debug/pprof/:profile", gin.WrapF(pprof.Index))
	}
	return r
}
