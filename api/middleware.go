package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/readmodel"
)

const (
	headerRequestID = "X-Request-ID"
	headerAPIKey    = "X-API-Key"
	ctxRequestID    = "permitd.request_id"
	ctxPrincipal    = "permitd.principal"
)

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// withRequestID echoes a caller's safe X-Request-ID or generates one, and
// sets it on the response before anything else can write.
func withRequestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(headerRequestID)
		if !safeRequestID.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Set(ctxRequestID, id)
		h := c.Writer.Header()
		h.Set(headerRequestID, id)
		h["Cache-Control"] = hdrNoStore // send and the static routes override it
		c.Next()
	}
}

func requestID(c *gin.Context) string { return c.GetString(ctxRequestID) }

// withRecovery turns a panic into the generic 500 body; the panic value is
// logged, never sent.
func withRecovery(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				log.Error("panic in handler", "request_id", requestID(c), "path", c.FullPath(), "panic", r)
				if !c.Writer.Written() {
					writeError(c, log, errors.New("panic"))
				}
				c.Abort()
			}
		}()
		c.Next()
	}
}

// withAccessLog writes one structured line per request. It logs the
// key's non-secret id, never the key or any header value.
func withAccessLog(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		attrs := []slog.Attr{
			slog.String("request_id", requestID(c)),
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
			slog.String("path", c.Request.URL.Path),
			slog.Int("status", c.Writer.Status()),
			slog.Int("bytes", c.Writer.Size()),
			slog.Duration("duration", time.Since(start)),
		}
		if p, ok := c.Get(ctxPrincipal); ok {
			attrs = append(attrs, slog.String("key_id", p.(apikey.Principal).KeyID))
		}
		log.LogAttrs(c.Request.Context(), slog.LevelInfo, "request", attrs...)
	}
}

// withAuth requires a valid X-API-Key; 403 {"message"} otherwise.
func withAuth(auth apikey.Authenticator, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Writer.Header().Add("Vary", hdrVaryKey)
		key := c.GetHeader(headerAPIKey)
		if key == "" {
			writeGateway(c, http.StatusForbidden, "missing API key: send it in the X-API-Key header")
			return
		}
		p, err := auth.Authenticate(c.Request.Context(), key)
		switch {
		case errors.Is(err, apikey.ErrInvalidKey):
			writeGateway(c, http.StatusForbidden, "invalid API key")
			return
		case err != nil:
			// The key store cannot answer: not the caller's fault, so not
			// a 403. The limiter's cache already served recently seen keys.
			writeError(c, log, fmt.Errorf("key store: %v: %w", err, readmodel.ErrUnavailable))
			return
		}
		c.Set(ctxPrincipal, p)
		c.Next()
	}
}

// withQuota asks the limiter about every authenticated request and sets
// the RateLimit-* headers on every response; 429 when denied. A limiter
// error admits the request (the limiter owns its fallback policy; this is
// the last line) and is logged.
//
// A conditional request (If-None-Match) answered 304 is charged the
// per-second rate but not the monthly quota. With a Versioned reader the
// ETag is known before the read, so a match is answered here, before the
// read and the handler. Otherwise the rate is charged here and the monthly
// quota by send, once it knows the answer is a 200.
func (s *server) withQuota() gin.HandlerFunc {
	return func(c *gin.Context) {
		p, _ := c.Get(ctxPrincipal)
		principal, _ := p.(apikey.Principal)
		inm := c.Request.Header.Get("If-None-Match")
		tag, versioned := s.versionETag(c)
		if versioned {
			c.Set(ctxETag, tag)
		}
		switch {
		case inm == "":
		case versioned:
			if sent, ok := matchETag(inm, tag, false); ok {
				if s.admit(c, rateOnly(principal)) {
					s.notModified(c, sent)
				}
				return
			}
		default:
			if !s.admit(c, rateOnly(principal)) {
				return
			}
			c.Set(ctxDeferred, principal)
			c.Next()
			return
		}
		if s.admit(c, principal) {
			c.Next()
		}
	}
}

// admit asks the limiter about p, sets the RateLimit-* headers, and
// answers 429 when denied; true when the request may go on.
func (s *server) admit(c *gin.Context, p apikey.Principal) bool {
	d, err := s.Limiter.Allow(c.Request.Context(), p)
	if err != nil {
		s.log.Error("quota check failed; admitting", "request_id", requestID(c), "key_id", p.KeyID, "err", err)
		return true
	}
	if d.Limit > 0 {
		h := c.Writer.Header()
		h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
		h.Set("RateLimit-Remaining", strconv.Itoa(max(d.Remaining, 0)))
		h.Set("RateLimit-Reset", strconv.Itoa(ceilSeconds(d.Reset)))
	}
	if !d.Allowed {
		c.Header("Retry-After", strconv.Itoa(max(ceilSeconds(d.RetryAfter), 1)))
		msg := "rate limit exceeded: slow down and retry after the Retry-After delay"
		if d.Reason == quota.ReasonMonthlyQuota {
			msg = "monthly quota exhausted: the quota resets at the start of the next month (UTC)"
		}
		writeGateway(c, http.StatusTooManyRequests, msg)
		return false
	}
	return true
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}
