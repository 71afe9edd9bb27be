package api

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// RouteUnmatched is the route label of requests no route matched (404s of
// unknown paths), so a scan of random paths adds one series, not one per
// path.
const RouteUnmatched = "unmatched"

// HTTPMetrics are the API's request series, named per Prometheus' naming
// guide:
//
//	permitd_http_requests_total{route,method,code}     counter
//	permitd_http_request_duration_seconds{route}       histogram
//	permitd_http_requests_in_flight                    gauge
//
// route is Gin's route pattern (/v1/locations/:geo_id), never the path, so
// the label set is bounded by the routes; method is one of the standard
// methods or OTHER. A nil *HTTPMetrics records nothing.
type HTTPMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge

	// cache holds the label-bound series, so a request does one map read
	// and no allocation; it is copied on write (a new route, method and
	// code combination, a handful per route over a process' life).
	mu    sync.Mutex
	cache atomic.Pointer[map[seriesKey]*series]
}

type seriesKey struct {
	route  string
	method string
	code   int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewHTTPMetrics creates the series and registers them with reg (nil: not
// registered).
func NewHTTPMetrics(reg prometheus.Registerer) *HTTPMetrics {
	m := &HTTPMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "permitd_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "permitd_http_request_duration_seconds",
			Help:    "Time from the first middleware to the last byte handed to the connection, by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "permitd_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
	}
	empty := map[seriesKey]*series{}
	m.cache.Store(&empty)
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.inFlight)
	}
	return m
}

// middleware observes every request; install it first so the status
// recorded is the one sent, panics included.
func (m *HTTPMetrics) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = RouteUnmatched
		}
		s := m.series(seriesKey{route: route, method: methodLabel(c.Request.Method), code: c.Writer.Status()})
		s.requests.Inc()
		s.duration.Observe(time.Since(start).Seconds())
	}
}

func (m *HTTPMetrics) series(k seriesKey) *series {
	if s, ok := (*m.cache.Load())[k]; ok {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.cache.Load()
	if s, ok := old[k]; ok {
		return s
	}
	s := &series{
		requests: m.requests.WithLabelValues(k.route, k.method, strconv.Itoa(k.code)),
		duration: m.duration.WithLabelValues(k.route),
	}
	next := make(map[seriesKey]*series, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[k] = s
	m.cache.Store(&next)
	return s
}

// methodLabel bounds the method label: a client can send any token as a
// method.
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "OTHER"
}
