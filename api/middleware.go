package api

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota"
)

const (
	headerRequestID = "X-Request-ID"
	headerAPIKey    = "X-API-Key"
)

// withRequestID echoes a caller's safe X-Request-ID or generates one, and
// sets it on the response before anything else can write.
func withRequestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		st := state(c)
		h := c.Writer.Header()
		// Header maps indexed by the canonical key: h.Set would make a
		// new slice for a value the request already holds.
		const key = "X-Request-Id" // http.CanonicalHeaderKey(headerRequestID)
		if v := c.Request.Header[key]; len(v) > 0 && v[0] != "" && safeID(v[0]) {
			st.requestID = v[0]
			h[key] = v[:1:1]
		} else {
			st.requestID = newRequestID()
			h[key] = []string{st.requestID}
		}
		h["Cache-Control"] = hdrNoStore // send and the static routes override it
		c.Next()
	}
}

// safeID reports whether a non-empty caller request id matches
// ^[A-Za-z0-9._:-]{1,64}$, without the regexp engine.
func safeID(id string) bool {
	if len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func requestID(c *gin.Context) string { return state(c).requestID }

// Generated request ids are a random per-process prefix and a counter:
// unique, 24 hex characters as before, and no getrandom syscall per
// request.
var (
	idPrefix = func() (p [4]byte) {
		_, _ = rand.Read(p[:])
		return p
	}()
	idCounter atomic.Uint64
)

func newRequestID() string {
	var b [12]byte
	copy(b[:4], idPrefix[:])
	binary.BigEndian.PutUint64(b[4:], idCounter.Add(1))
	var out [24]byte
	hex.Encode(out[:], b[:])
	return string(out[:])
}

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
	inPlace := formatsInPlace(log.Handler())
	lines, _ := log.Handler().(*lineHandler)
	return func(c *gin.Context) {
		if !log.Enabled(c.Request.Context(), slog.LevelInfo) {
			c.Next()
			return
		}
		start := time.Now()
		c.Next()
		st := state(c)
		if st.logSampledOut {
			return // counted by a logSampler instead
		}
		if lines != nil && writeRequestLine(lines, c, st, start) {
			return
		}
		// The record is built here rather than with LogAttrs, whose
		// attribute slice escapes. It keeps five attributes in place and
		// allocates for more, so with a handler that formats in place the
		// fifth is a group with no key (inlined by the handler: the same
		// line) over an array in the request's pooled state, and the
		// record allocates nothing; otherwise it allocates once for the
		// rest.
		var arr [9]slog.Attr
		attrs := append(arr[:0],
			slog.String("request_id", st.requestID),
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
			slog.String("path", c.Request.URL.Path),
		)
		if inPlace {
			tail := appendLogTail(st.logTail[:0], c, st, start, true)
			attrs = append(attrs, slog.Attr{Value: slog.GroupValue(tail...)})
		} else {
			attrs = appendLogTail(attrs, c, st, start, false)
		}
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
		r.AddAttrs(attrs...)
		_ = log.Handler().Handle(c.Request.Context(), r)
	}
}

// writeRequestLine writes the request's access-log line with h's
// shortcut (AccessLogger): the fields of the record withAccessLog
// builds otherwise, in their order.
func writeRequestLine(h *lineHandler, c *gin.Context, st *reqState, start time.Time) bool {
	now := time.Now() // the line's time, and the end of its duration
	r := requestLine{
		requestID: st.requestID,
		method:    c.Request.Method,
		route:     c.FullPath(),
		path:      c.Request.URL.Path,
		status:    c.Writer.Status(),
		bytes:     c.Writer.Size(),
		duration:  now.Sub(start),
		hasKey:    st.authed,
		keyID:     st.principal.KeyID,
	}
	if sc := trace.SpanContextFromContext(c.Request.Context()); sc.HasTraceID() {
		r.traceID = st.traceIDHex(sc.TraceID())
	}
	return h.writeRequest(st.logLine[:0], now, &r)
}

// appendLogTail appends the access log's attributes after the path.
func appendLogTail(attrs []slog.Attr, c *gin.Context, st *reqState, start time.Time, inPlace bool) []slog.Attr {
	attrs = append(attrs,
		slog.Int("status", c.Writer.Status()),
		slog.Int("bytes", c.Writer.Size()),
		slog.Duration("duration", time.Since(start)),
	)
	if st.authed {
		attrs = append(attrs, slog.String("key_id", st.principal.KeyID))
	}
	if sc := trace.SpanContextFromContext(c.Request.Context()); sc.HasTraceID() {
		attrs = append(attrs, traceIDAttr(st, sc.TraceID(), inPlace))
	}
	return attrs
}

// withAuth requires a valid X-API-Key; 403 {"message"} otherwise. A key
// that cannot be checked because the key store does not answer gets 503
// KEY_STORE_UNAVAILABLE with Retry-After (logged, sampled).
func withAuth(auth apikey.Authenticator, log *slog.Logger) gin.HandlerFunc {
	storeDown := newLogSampler(log, "key store unavailable", 10, time.Second)
	return func(c *gin.Context) {
		h := c.Writer.Header()
		if v := h["Vary"]; len(v) == 1 && &v[0] == &hdrVaryEncoding[0] {
			h["Vary"] = hdrVaryEncodingKey
		} else {
			h.Add("Vary", hdrVaryKey)
		}
		var key string
		if v := c.Request.Header["X-Api-Key"]; len(v) > 0 { // headerAPIKey, canonical
			key = v[0]
		}
		if key == "" {
			writeGateway(c, http.StatusForbidden, "missing API key: send it in the X-API-Key header")
			return
		}
		p, err := auth.Authenticate(c.Request.Context(), key)
		switch {
		case errors.Is(err, apikey.ErrInvalidKey):
			writeGateway(c, http.StatusForbidden, "invalid API key")
			return
		case errors.Is(err, apikey.ErrStoreUnavailable):
			// Not the caller's fault, so not a 403; keys this replica
			// has seen were already answered from its cache.
			storeDown.sample(c, slog.LevelWarn, "key store unavailable: key not checked", "err", err)
			rid := requestID(c)
			c.Header("Retry-After", retryAfterUnavailable)
			writeBody(c, http.StatusServiceUnavailable, appendErrorBody(nil, CodeKeyStoreUnavailable,
				"the API key store is unavailable, so this key cannot be checked now; retry after the Retry-After delay", rid))
			return
		case err != nil:
			writeError(c, log, fmt.Errorf("key check: %w", err))
			return
		}
		st := state(c)
		st.principal, st.authed = p, true
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
		st := state(c)
		principal := st.principal
		inm := c.Request.Header.Get("If-None-Match")
		key, seq, versioned := s.versionETag(c)
		if versioned {
			st.tagged, st.key, st.tag, st.seq = true, key, etagOfHash(key), seq
		}
		switch {
		case inm == "":
		case versioned:
			if sent, ok := matchETag(inm, &st.tag, false); ok {
				if s.admit(c, rateOnly(principal)) {
					s.notModified(c, sent)
				}
				return
			}
		default:
			if !s.admit(c, rateOnly(principal)) {
				return
			}
			st.deferred = true
			c.Next()
			return
		}
		if !s.admit(c, principal) {
			return
		}
		if versioned && s.cache != nil {
			// The same read at the same version was answered before:
			// its bytes are the answer (respcache.go).
			if e, ok := s.cache.get(key); ok {
				writeCached(c, e)
				c.Abort()
				return
			}
		}
		c.Next()
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
	if d.Limit > 0 && !(d.Allowed && nearerSet(c, d)) {
		h := c.Writer.Header()
		// Canonical keys, and shared values for small numbers: no
		// allocation per request.
		h["Ratelimit-Limit"] = headerInt(d.Limit)
		h["Ratelimit-Remaining"] = headerInt(max(d.Remaining, 0))
		h["Ratelimit-Reset"] = headerInt(ceilSeconds(d.Reset))
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

// nearerSet reports whether an earlier admission of this request (the
// rate half of a split one) already set RateLimit headers for a policy
// nearer to denying than d: those stay, as the RateLimit convention asks.
func nearerSet(c *gin.Context, d quota.Decision) bool {
	v := c.Writer.Header()["Ratelimit-Remaining"]
	if len(v) == 0 || v[0] == "" {
		return false
	}
	n, err := strconv.Atoi(v[0])
	return err == nil && n <= max(d.Remaining, 0)
}

// smallInts are header values for 0 to len-1, made once and never
// modified (a header map may share them).
var smallInts = func() [][]string {
	out := make([][]string, 4096)
	for i := range out {
		out[i] = []string{strconv.Itoa(i)}
	}
	return out
}()

// headerInt is n as a header value.
func headerInt(n int) []string {
	if n >= 0 && n < len(smallInts) {
		return smallInts[n]
	}
	return []string{strconv.Itoa(n)}
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}
