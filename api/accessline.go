package api

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// AccessLogger is the access log's logger: the standard library's text
// handler (or, with json, its JSON handler) over w with opts, whose
// request lines withAccessLog formats itself, byte for byte as that
// handler would, instead of building a slog.Record for each request.
// The handler's own formatting of a request line took about 1 µs of the
// cache hit's 2.5 µs in process (BenchmarkCacheHit), most of it walking
// the record's attributes generically; the line written here is the
// same fields appended in their order. Every other record (errors, the
// samplers' lines) goes through the handler as before, and so does a
// request line with a value the handler would quote or escape (a path
// with a space, a quote or a byte outside printable ASCII): those are
// rare, and the handler's rules for them are its own. Options that
// change a line (ReplaceAttr, AddSource) turn the shortcut off.
//
// Writes to w are serialised: the handler's and the shortcut's share one
// lock, so w need not be safe for concurrent use.
func AccessLogger(w io.Writer, json bool, opts *slog.HandlerOptions) *slog.Logger {
	lw := &lockedWriter{w: w}
	var h slog.Handler
	if json {
		h = slog.NewJSONHandler(lw, opts)
	} else {
		h = slog.NewTextHandler(lw, opts)
	}
	if opts != nil && (opts.ReplaceAttr != nil || opts.AddSource) {
		return slog.New(h)
	}
	return slog.New(&lineHandler{Handler: h, w: lw, json: json})
}

// lockedWriter serialises Writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lineHandler is a text or JSON handler whose access-log lines
// withAccessLog may write itself (writeRequest). Its WithAttrs and
// WithGroup are the embedded handler's, which have no shortcut.
type lineHandler struct {
	slog.Handler
	w    *lockedWriter
	json bool
}

// requestLine is one access-log line's fields, in the order they are
// written after time, level and msg.
type requestLine struct {
	requestID, method, route, path string
	status, bytes                  int
	duration                       time.Duration
	hasKey                         bool   // authenticated: keyID is written
	keyID                          string // the key's id
	traceID                        string // "" when it has no trace
}

// writeRequest writes r's line at t into buf's space and then to the
// handler's writer. It reports false, having written nothing, when a
// value needs the handler's quoting or escaping, or t's year is one the
// JSON handler refuses; the caller then logs the record through the
// handler.
func (h *lineHandler) writeRequest(buf []byte, t time.Time, r *requestLine) bool {
	if !plain(r.requestID) || !plain(r.method) || !plain(r.route) || !plain(r.path) ||
		!plain(r.keyID) || !plain(r.traceID) {
		return false
	}
	var line []byte
	if h.json {
		if y := t.Year(); y < 0 || y >= 10000 {
			return false
		}
		line = appendJSONLine(buf[:0], t, r)
	} else {
		line = appendTextLine(buf[:0], t, r)
	}
	_, _ = h.w.Write(line)
	return true
}

// plain says whether s is written as it is by both handlers: the text
// handler leaves a string unquoted when it is not empty and has no
// space, '=', '"', control or non-ASCII byte, and the JSON handler
// escapes none of printable ASCII but '"' and '\'. An empty string is
// plain here too: the writers below spell it "" as both handlers do.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b <= ' ' || b >= 0x7f || b == '=' || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}

// appendTextLine appends r's line as slog's text handler writes it.
func appendTextLine(b []byte, t time.Time, r *requestLine) []byte {
	b = append(b, "time="...)
	b = appendRFC3339Millis(b, t)
	b = append(b, " level=INFO msg=request request_id="...)
	b = appendTextString(b, r.requestID)
	b = append(b, " method="...)
	b = appendTextString(b, r.method)
	b = append(b, " route="...)
	b = appendTextString(b, r.route)
	b = append(b, " path="...)
	b = appendTextString(b, r.path)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(r.status), 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, int64(r.bytes), 10)
	b = append(b, " duration="...)
	b = append(b, r.duration.String()...)
	if r.hasKey {
		b = append(b, " key_id="...)
		b = appendTextString(b, r.keyID)
	}
	if r.traceID != "" {
		b = append(b, " trace_id="...)
		b = append(b, r.traceID...)
	}
	return append(b, '\n')
}

// appendTextString appends a plain string as the text handler does: as
// it is, or "" when empty.
func appendTextString(b []byte, s string) []byte {
	if s == "" {
		return append(b, `""`...)
	}
	return append(b, s...)
}

// appendRFC3339Millis appends t in RFC 3339 with exactly three digits of
// milliseconds, truncated, in t's own zone: the text handler's time.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	// RFC3339Nano drops trailing zeros; a tenth of a millisecond added
	// to the truncated time keeps four digits, and the fourth is cut.
	const prefix = len("2006-01-02T15:04:05.000")
	n := len(b)
	b = t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefix], b[n+prefix+1:]...)
}

// appendJSONLine appends r's line as slog's JSON handler writes it.
func appendJSONLine(b []byte, t time.Time, r *requestLine) []byte {
	b = append(b, `{"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","request_id":"`...)
	b = append(b, r.requestID...)
	b = append(b, `","method":"`...)
	b = append(b, r.method...)
	b = append(b, `","route":"`...)
	b = append(b, r.route...)
	b = append(b, `","path":"`...)
	b = append(b, r.path...)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(r.status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(r.bytes), 10)
	b = append(b, `,"duration":`...)
	b = strconv.AppendInt(b, int64(r.duration), 10)
	if r.hasKey {
		b = append(b, `,"key_id":"`...)
		b = append(b, r.keyID...)
		b = append(b, '"')
	}
	if r.traceID != "" {
		b = append(b, `,"trace_id":"`...)
		b = append(b, r.traceID...)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}
