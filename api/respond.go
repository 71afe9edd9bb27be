package api

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/permitd/permitd/api/apikey"
)

// HTTP caching (documented in the OpenAPI document):
//
//   - Every 200 of a /v1 business route carries a strong ETag and
//     "Cache-Control: private, no-cache": the data is per key (quota) and
//     changes as the read model does, so a client keeps it and revalidates
//     with If-None-Match, which costs no monthly quota when answered 304.
//   - Errors (4xx, 5xx) and health answers carry "Cache-Control: no-store".
//   - /v1 responses vary by X-API-Key; gzhttp adds Accept-Encoding.
//
// The ETag is derived, when the Reader implements readmodel.Versioned,
// from the read-model version taken before the read, the route, the path,
// the canonical query and the service clock's date (freshness is relative
// to today), so If-None-Match is answered before the read runs. Otherwise
// (OpenSearch) it is a hash of the body and 304 is decided after the read.
// A gzip body carries the identity ETag with "-gzip" inside the quotes
// (gzhttp's SuffixETag); If-None-Match accepts either form.

const (
	// etagFormat changes whenever a response's encoding changes, so that
	// a new build never answers 304 for bytes an old one sent.
	etagFormat = "permitd-v1-1"
	gzipSuffix = "-gzip"

	ctxETag     = "permitd.etag"     // string: the pre-read ETag
	ctxDeferred = "permitd.deferred" // apikey.Principal: monthly quota charged at send
	ctxQuery    = "permitd.query"    // url.Values parsed once
)

var (
	hdrJSON      = []string{"application/json; charset=utf-8"}
	hdrPrivate   = []string{"private, no-cache"}
	hdrNoStore   = []string{"no-store"}
	hdrVaryKey   = "X-API-Key"
	maxPooledBuf = 1 << 20
)

// bufPool holds response buffers; a body is appended into one and written
// with a single Write.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// queryOf returns the request's query parameters, parsed once per request.
func queryOf(c *gin.Context) query {
	if v, ok := c.Get(ctxQuery); ok {
		return query{v: v.(url.Values)}
	}
	v := c.Request.URL.Query()
	c.Set(ctxQuery, v)
	return query{v: v}
}

// versionETag is the strong ETag of a read at the reader's current
// version: a hash of the version, the route, the path, the canonical query
// (parameters sorted by name, values in order) and today's date. false
// when the reader is not Versioned.
func (s *server) versionETag(c *gin.Context) (string, bool) {
	if s.versioned == nil {
		return "", false
	}
	epoch, seq := s.versioned.ReadVersion()
	var arr [512]byte
	b := append(arr[:0], etagFormat...)
	b = binary.BigEndian.AppendUint64(b, epoch)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = s.today().AppendFormat(b, time.DateOnly)
	b = append(b, 0)
	b = append(b, c.FullPath()...)
	b = append(b, 0)
	b = append(b, c.Request.URL.Path...)
	b = append(b, 0)
	q := queryOf(c).v
	var karr [16]string
	keys := karr[:0]
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range q[k] {
			b = strconv.AppendQuote(b, k)
			b = append(b, '=')
			b = strconv.AppendQuote(b, v)
			b = append(b, '&')
		}
	}
	return etagOf(b), true
}

// bodyETag is the strong ETag of a body (backends that are not Versioned).
func bodyETag(body []byte) string {
	var arr [64]byte
	return etagOf(append(append(arr[:0], etagFormat...), body...))
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	var out [34]byte
	out[0] = '"'
	hex.Encode(out[1:33], sum[:16])
	out[33] = '"'
	return string(out[:])
}

// matchETag reports whether If-None-Match names tag (weak comparison, as
// RFC 9110 requires for If-None-Match), in its identity or gzip form, and
// returns the form the client sent. star allows "*".
func matchETag(inm, tag string, star bool) (string, bool) {
	for inm != "" {
		var t string
		t, inm, _ = strings.Cut(inm, ",")
		t = strings.TrimSpace(t)
		if t == "*" {
			if star {
				return tag, true
			}
			continue
		}
		t = strings.TrimPrefix(t, "W/")
		if t == tag {
			return t, true
		}
		if len(t) == len(tag)+len(gzipSuffix) && t[:len(tag)-1] == tag[:len(tag)-1] &&
			t[len(tag)-1:len(t)-1] == gzipSuffix && t[len(t)-1] == '"' {
			return t, true
		}
	}
	return "", false
}

// send writes a 200 JSON body (one Write) with its ETag and caching
// headers, or a 304 when If-None-Match names the body's ETag. When the
// monthly quota was deferred (a conditional request on a backend that is
// not Versioned), it is charged here, for a 200 only. send takes the
// buffer back.
func (s *server) send(c *gin.Context, buf *[]byte) {
	defer putBuf(buf)
	tag, pre := c.Get(ctxETag)
	etag, _ := tag.(string)
	if !pre {
		etag = bodyETag(*buf)
		if inm := c.Request.Header.Get("If-None-Match"); inm != "" {
			if sent, ok := matchETag(inm, etag, true); ok {
				s.notModified(c, sent)
				return
			}
		}
	}
	if p, ok := c.Get(ctxDeferred); ok {
		if !s.admit(c, monthlyOnly(p.(apikey.Principal))) {
			return
		}
	}
	h := c.Writer.Header()
	h["Content-Type"] = hdrJSON
	h["Cache-Control"] = hdrPrivate
	h["Etag"] = []string{etag}
	h["Content-Length"] = []string{strconv.Itoa(len(*buf))}
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(*buf)
}

// notModified answers 304 with no body, naming the ETag the client holds.
func (s *server) notModified(c *gin.Context, etag string) {
	h := c.Writer.Header()
	h["Cache-Control"] = hdrPrivate
	h["Etag"] = []string{etag}
	c.AbortWithStatus(http.StatusNotModified)
}

// writeBody writes an error or gateway body: no-store, one Write, and
// aborts the chain.
func writeBody(c *gin.Context, status int, body []byte) {
	h := c.Writer.Header()
	h["Content-Type"] = hdrJSON
	h["Cache-Control"] = hdrNoStore
	delete(h, "Etag")
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	c.Status(status)
	_, _ = c.Writer.Write(body)
	c.Abort()
}

// rateOnly and monthlyOnly split one admission into its two limits, so a
// 304 is charged the per-second rate but not the monthly quota.
func rateOnly(p apikey.Principal) apikey.Principal {
	p.Plan.MonthlyQuota = 0
	return p
}

func monthlyOnly(p apikey.Principal) apikey.Principal {
	p.Plan.RatePerSecond = 0
	return p
}
