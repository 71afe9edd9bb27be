package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Failed authentications per client address: a token bucket of
// authFailureBurst refilled at authFailureRate per second. Once a client's
// bucket is empty, its requests to business routes get 429 without their
// key being checked, until a token is back. At most authFailureClients
// addresses are tracked (least recently seen forgotten first).
const (
	authFailureRate    = rate.Limit(1)
	authFailureBurst   = 100
	authFailureClients = 16384
)

// authThrottle counts failed authentications (403) per client address.
type authThrottle struct {
	clients *lru.Cache[string, *rate.Limiter]
	logs    *logSampler
	// failed is set at the first failure: until then no address has a
	// limiter, so a request skips reading its address and the lookup.
	failed atomic.Bool
}

func newAuthThrottle(log *slog.Logger) *authThrottle {
	c, _ := lru.New[string, *rate.Limiter](authFailureClients)
	return &authThrottle{clients: c, logs: newLogSampler(log, "failed authentications", 10, time.Second)}
}

// middleware runs before withAuth. The client address is Gin's
// ClientIP (the peer, or X-Forwarded-For from a trusted proxy).
func (t *authThrottle) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !t.failed.Load() {
			c.Next()
			if c.Writer.Status() == http.StatusForbidden {
				t.failed.Store(true)
				t.failure(c)
			}
			return
		}
		ip := c.ClientIP()
		if lim, ok := t.clients.Get(ip); ok && lim.Tokens() < 1 {
			wait := lim.Reserve()
			delay := wait.Delay()
			wait.Cancel()
			t.logs.sample(c, slog.LevelInfo, "client throttled after failed authentications", "client", ip)
			h := c.Writer.Header()
			h.Set("Retry-After", strconv.Itoa(max(ceilSeconds(delay), 1)))
			h.Set("RateLimit-Limit", strconv.Itoa(authFailureBurst))
			h.Set("RateLimit-Remaining", "0")
			h.Set("RateLimit-Reset", strconv.Itoa(ceilSeconds(time.Duration(float64(authFailureBurst)/float64(authFailureRate)*float64(time.Second)))))
			writeGateway(c, http.StatusTooManyRequests, "too many failed authentications from this address: retry after the Retry-After delay with a valid key")
			return
		}
		c.Next()
		if c.Writer.Status() == http.StatusForbidden {
			t.failure(c)
		}
	}
}

// failure counts a failed authentication against the client's address.
func (t *authThrottle) failure(c *gin.Context) {
	ip := c.ClientIP()
	lim := rate.NewLimiter(authFailureRate, authFailureBurst)
	if prev, ok, _ := t.clients.PeekOrAdd(ip, lim); ok {
		lim = prev
	}
	lim.Allow()
	t.logs.sample(c, slog.LevelInfo, "authentication failed", "client", ip)
}

// logSampler logs the first n events of each interval and counts the
// rest; the count is logged with the next interval's first event. A
// request whose event is not logged is marked so that the access log
// skips it too.
type logSampler struct {
	log      *slog.Logger
	what     string
	n        int
	interval time.Duration

	mu         sync.Mutex
	start      time.Time
	seen       int
	suppressed int
}

func newLogSampler(log *slog.Logger, what string, n int, interval time.Duration) *logSampler {
	return &logSampler{log: log, what: what, n: n, interval: interval}
}

// sample logs msg (with the request id) when the interval's budget
// allows, else counts it and marks the request's access log line out.
func (s *logSampler) sample(c *gin.Context, level slog.Level, msg string, args ...any) {
	now := time.Now()
	s.mu.Lock()
	if now.Sub(s.start) >= s.interval {
		if s.suppressed > 0 {
			s.log.Log(c.Request.Context(), level, "log lines not written: "+s.what,
				"count", s.suppressed, "interval", s.interval, "since", s.start.UTC().Format(time.RFC3339))
		}
		s.start, s.seen, s.suppressed = now, 0, 0
	}
	ok := s.seen < s.n
	if ok {
		s.seen++
	} else {
		s.suppressed++
	}
	s.mu.Unlock()
	if !ok {
		state(c).logSampledOut = true
		return
	}
	s.log.Log(c.Request.Context(), level, msg, append([]any{"request_id", requestID(c)}, args...)...)
}
