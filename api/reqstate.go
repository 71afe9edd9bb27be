package api

import (
	"bufio"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/apikey"
)

// reqState is what the middleware learns about one request. It lives
// beside the response writer Gin is handed (a pooled stateWriter), not in
// gin.Context.Keys: Keys is a map made anew for every request, and every
// value stored in it is boxed, so a request that touched it allocated a
// map and a handful of values, each of which makes the collector mark the
// read model's heap sooner.
type reqState struct {
	requestID string
	principal apikey.Principal
	authed    bool // principal is set

	tagged bool   // the read-model version was taken before the read:
	key    uint64 // the hash of what the answer depends on (versionETag),
	tag    etag   // its ETag,
	seq    uint64 // and the version it names
	// deferred: the monthly quota of principal is charged by send, once
	// it knows the answer is a 200 (a conditional request on a backend
	// that is not Versioned).
	deferred bool

	query       url.Values // parsed once, on first use
	queryParsed bool

	logSampledOut bool // counted by a logSampler instead of the access log

	// traceHex holds the hex trace id the access log writes, when its
	// handler formats the line before Handle returns (traceIDAttr).
	traceHex [32]byte
	// logTail holds the access log's attributes from the fifth on
	// (status to trace_id, passed as a group with no key), when its
	// handler formats the line before Handle returns.
	logTail [5]slog.Attr
	// logLine holds the access log's line when AccessLogger's handler
	// lets withAccessLog write it (writeRequestLine).
	logLine [320]byte
}

// stateWriter carries a request's reqState to the middleware, as the
// http.ResponseWriter Gin writes to. It is pooled: serveHTTP takes one
// per request and puts it back once Gin is done with the request.
type stateWriter struct {
	http.ResponseWriter
	st reqState
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *stateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes a flush on (the export streams its pages).
func (w *stateWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack passes a hijack on, as Gin's writer expects of the one it wraps.
func (w *stateWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("api: the connection cannot be hijacked")
}

var statePool = sync.Pool{New: func() any { return new(stateWriter) }}

// withState serves r through next with a pooled stateWriter around w.
func withState(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := statePool.Get().(*stateWriter)
		sw.ResponseWriter = w
		next.ServeHTTP(sw, r)
		sw.ResponseWriter = nil
		sw.st = reqState{}
		statePool.Put(sw)
	})
}

// state is the request's reqState. A handler served without withState
// (the admin listener's health routes) gets a fresh, empty one.
func state(c *gin.Context) *reqState {
	var w http.ResponseWriter = c.Writer
	for {
		switch t := w.(type) {
		case *stateWriter:
			return &t.st
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return new(reqState)
		}
	}
}
