package api

import (
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing configures the API's OpenTelemetry server spans (otelgin): one
// span per request, named after the route pattern, continuing the
// caller's trace when the request carries a W3C traceparent. A nil
// *Tracing installs nothing, so tracing off costs nothing.
type Tracing struct {
	Provider trace.TracerProvider
	// Propagator reads the caller's trace context; nil: W3C trace context
	// and baggage.
	Propagator propagation.TextMapPropagator
}

func (t *Tracing) middleware() gin.HandlerFunc {
	prop := t.Propagator
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return otelgin.Middleware("permitd",
		otelgin.WithTracerProvider(t.Provider),
		otelgin.WithPropagators(prop),
		otelgin.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelgin.WithSpanNameFormatter(func(c *gin.Context) string {
			if r := c.FullPath(); r != "" {
				return c.Request.Method + " " + r
			}
			return c.Request.Method + " " + RouteUnmatched
		}),
	)
}

// TraceID is the hex id of the request's trace, "" when tracing is off.
// The access log reads it after c.Next() (the tracing middleware runs
// before the logger and puts its span in c.Request's context).
func TraceID(c *gin.Context) string {
	sc := trace.SpanContextFromContext(c.Request.Context())
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
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
