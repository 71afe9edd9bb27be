package api

import (
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
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
	etagFormat = "permitd-v1-2"
	gzipSuffix = "-gzip"
)

var (
	hdrJSON    = []string{"application/json; charset=utf-8"}
	hdrPrivate = []string{"private, no-cache"}
	hdrNoStore = []string{"no-store"}
	hdrVaryKey = "X-API-Key"
	// Vary as gzhttp sets it, and with the key added (withAuth): shared,
	// never modified, so a request sets them without allocating.
	hdrVaryEncoding    = []string{"Accept-Encoding"}
	hdrVaryEncodingKey = []string{"Accept-Encoding", hdrVaryKey}
	maxPooledBuf       = 1 << 20
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
	st := state(c)
	if !st.queryParsed {
		st.query, st.queryParsed = c.Request.URL.Query(), true
	}
	return query{v: st.query}
}

// etag is a strong ETag as sent: a 64-bit hash in hex, in quotes. It is
// a value, so that a request that only compares it allocates nothing.
type etag [18]byte

func (t *etag) String() string { return string(t[:]) }

// versionETag is the strong ETag of a read at the reader's current
// version: a hash of the version, the route, the path, the canonical
// query (see appendQueryKey) and today's date. false when the reader is
// not Versioned.
func (s *server) versionETag(c *gin.Context) (uint64, uint64, bool) {
	if s.versioned == nil {
		return 0, 0, false
	}
	epoch, seq := s.versioned.ReadVersion()
	var arr [512]byte
	b := append(arr[:0], etagFormat...)
	b = binary.BigEndian.AppendUint64(b, epoch)
	b = binary.BigEndian.AppendUint64(b, seq)
	// The service date as a day number: freshness is relative to today.
	b = binary.BigEndian.AppendUint64(b, uint64(s.Now().Unix()/86400))
	b = appendField(b, c.FullPath())
	b = appendField(b, c.Request.URL.Path)
	b = appendQueryKey(b, c.Request.URL.RawQuery, func() url.Values { return queryOf(c).v })
	return xxhash.Sum64(b), seq, true
}

// appendField appends s with its length first, so that no two sequences
// of fields append the same bytes.
func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// maxFastQueryPairs bounds the pairs appendQueryKey sorts on the stack.
const maxFastQueryPairs = 24

// appendQueryKey appends the canonical form of a raw query: its
// parameters as net/url decodes them, sorted by name (stable, so a
// name's values keep their order), each name and value length-prefixed.
// Two raw queries that decode to the same parameters append the same
// bytes; two that decode differently never do.
//
// The common query is read in place, without a url.Values: names without
// escapes ('%', '+'), values with valid escapes, no ';', at most
// maxFastQueryPairs pairs. Anything else is decoded by parsed (net/url,
// which drops the pairs it cannot decode) and appended from that.
func appendQueryKey(b []byte, raw string, parsed func() url.Values) []byte {
	type pair struct{ name, value string }
	var arr [maxFastQueryPairs]pair
	pairs := arr[:0]
	fast := true
	for rest := raw; rest != "" && fast; {
		var p string
		p, rest, _ = strings.Cut(rest, "&")
		if p == "" {
			continue
		}
		name, value, _ := strings.Cut(p, "=")
		if len(pairs) == maxFastQueryPairs || strings.ContainsAny(name, "%+;") || strings.IndexByte(value, ';') >= 0 || !validEscapes(value) {
			fast = false
			break
		}
		pairs = append(pairs, pair{name, value})
	}
	if !fast {
		q := parsed()
		var karr [16]string
		keys := karr[:0]
		for k := range q {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			for _, v := range q[k] {
				b = appendField(b, k)
				b = appendField(b, v)
			}
		}
		return b
	}
	// Insertion sort, stable: queries are short and usually in order.
	for i := 1; i < len(pairs); i++ {
		for j := i; j > 0 && pairs[j].name < pairs[j-1].name; j-- {
			pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
		}
	}
	for _, p := range pairs {
		b = appendField(b, p.name)
		b = appendUnescaped(b, p.value)
	}
	return b
}

// validEscapes reports whether every '%' in s starts a valid escape.
func validEscapes(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0; {
		if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
			return false
		}
		j := strings.IndexByte(s[i+3:], '%')
		if j < 0 {
			break
		}
		i += 3 + j
	}
	return true
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// appendUnescaped appends the query value s (valid escapes) decoded as
// url.QueryUnescape does, with its decoded length first.
func appendUnescaped(b []byte, s string) []byte {
	n := len(s) - 2*strings.Count(s, "%")
	b = binary.AppendUvarint(b, uint64(n))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		case '+':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return b
}

// bodyETag is the strong ETag of a body (backends that are not Versioned).
func bodyETag(body []byte) etag {
	var d xxhash.Digest // on the stack
	d.Reset()
	_, _ = d.WriteString(etagFormat)
	_, _ = d.Write(body)
	return etagOfHash(d.Sum64())
}

// etagOfHash is the ETag of a hash (xxhash64: fast, stable across
// processes and replicas; a collision needs 2^32 tags of one resource).
func etagOfHash(h uint64) (out etag) {
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], h)
	out[0] = '"'
	hex.Encode(out[1:17], sum[:])
	out[17] = '"'
	return out
}

// matchETag reports whether If-None-Match names tag (weak comparison, as
// RFC 9110 requires for If-None-Match), in its identity or gzip form, and
// returns the form the client sent. star allows "*".
func matchETag(inm string, tag *etag, star bool) (string, bool) {
	for inm != "" {
		var t string
		t, inm, _ = strings.Cut(inm, ",")
		t = strings.TrimSpace(t)
		if t == "*" {
			if star {
				return tag.String(), true
			}
			continue
		}
		t = strings.TrimPrefix(t, "W/")
		if t == string(tag[:]) {
			return t, true
		}
		if len(t) == len(tag)+len(gzipSuffix) && t[:len(tag)-1] == string(tag[:len(tag)-1]) &&
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
	st := state(c)
	tag := st.tag
	if !st.tagged {
		tag = bodyETag(*buf)
		if inm := c.Request.Header.Get("If-None-Match"); inm != "" {
			if sent, ok := matchETag(inm, &tag, true); ok {
				s.notModified(c, sent)
				return
			}
		}
	}
	if st.deferred {
		if !s.admit(c, monthlyOnly(st.principal)) {
			return
		}
	}
	if st.tagged && s.cache != nil {
		if e := s.cache.put(st.key, st.seq, &tag, *buf); e != nil {
			writeCached(c, e)
			return
		}
	}
	writeOK(c, tag.String(), *buf)
}

// writeOK writes a 200 JSON body with its ETag and caching headers, in
// one Write.
func writeOK(c *gin.Context, etag string, body []byte) {
	h := c.Writer.Header()
	h["Content-Type"] = hdrJSON
	h["Cache-Control"] = hdrPrivate
	h["Etag"] = []string{etag}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(body)
}

// writeCached writes a cached 200 as writeOK does, from header values
// made once when it was stored: no allocation.
func writeCached(c *gin.Context, e *cachedBody) {
	h := c.Writer.Header()
	h["Content-Type"] = hdrJSON
	h["Cache-Control"] = hdrPrivate
	h["Etag"] = e.etag
	h["Content-Length"] = e.length
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(e.body)
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
