package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// versionedReader is a Reader with a settable version that counts the
// location reads it serves.
type versionedReader struct {
	readmodel.Reader
	seq   atomic.Uint64
	reads atomic.Int64
}

func (v *versionedReader) ReadVersion() (uint64, uint64) { return 42, v.seq.Load() }

func (v *versionedReader) Location(ctx context.Context, id string) (readmodel.Location, error) {
	v.reads.Add(1)
	return v.Reader.Location(ctx, id)
}

// countingReader counts location reads; it is not Versioned.
type countingReader struct {
	readmodel.Reader
	reads atomic.Int64
}

func (v *countingReader) Location(ctx context.Context, id string) (readmodel.Location, error) {
	v.reads.Add(1)
	return v.Reader.Location(ctx, id)
}

// chargeLimiter admits everything and records what each request was
// charged: a rate slot, a monthly slot, or both.
type chargeLimiter struct {
	mu            sync.Mutex
	rate, monthly int
}

func (l *chargeLimiter) Allow(_ context.Context, p apikey.Principal) (quota.Decision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.Plan.RatePerSecond > 0 {
		l.rate++
	}
	if p.Plan.MonthlyQuota > 0 {
		l.monthly++
	}
	return quota.Decision{Allowed: true, Limit: 100, Remaining: 50, Reset: 1}, nil
}

func (l *chargeLimiter) charges() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate, l.monthly
}

var plan = apikey.Plan{Name: "test", RatePerSecond: 100, Burst: 100, MonthlyQuota: 1000}

// bigSeattle has a full address long enough for a body over 1 KB (gzip).
func bigSeattle() events.Envelope { return bigSeattleAs("Seattle, WA <&>", 1) }

func bigSeattleAs(display string, version int64) events.Envelope {
	return apitest.Location("city", "1840021117", events.Location{
		Name: "Seattle", DisplayName: display, FullAddress: strings.Repeat("Seattle, King County, WA; ", 50),
		State: "WA", StateName: "Washington", County: "King County", City: "Seattle",
		Lat: 47.6211, Lon: -122.3244, Population: 3530752, Incorporated: true,
	}, version)
}

func conditionalHarness(t *testing.T, r readmodel.Reader, lim quota.Limiter) *apitest.Harness {
	h := apitest.New(t, apitest.Options{Deps: api.Deps{
		Reader: r, Limiter: lim, Auth: apikey.NewDevKeys([]string{apitest.Key}, plan),
	}})
	switch r := r.(type) {
	case *versionedReader:
		r.Reader = h.Store
	case *countingReader:
		r.Reader = h.Store
	}
	h.Publish(bigSeattle())
	return h
}

func withINM(tag string) http.Header {
	return http.Header{"X-API-Key": {apitest.Key}, "If-None-Match": {tag}}
}

func TestVersionedETagAnswers304BeforeTheRead(t *testing.T) {
	vr := &versionedReader{}
	lim := &chargeLimiter{}
	h := conditionalHarness(t, vr, lim)
	path := "/v1/locations/" + bigSeattle().EntityID

	first := h.Get(path)
	require.Equal(t, http.StatusOK, first.Status, "%s", first.Body)
	tag := first.Header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{32}"$`, tag)
	require.Equal(t, "private, no-cache", first.Header.Get("Cache-Control"))
	require.Contains(t, first.Header.Values("Vary"), "X-API-Key")
	require.Equal(t, int64(1), vr.reads.Load())
	rate, monthly := lim.charges()
	require.Equal(t, [2]int{1, 1}, [2]int{rate, monthly})

	// The same request again, and with the query in another order, has
	// the same tag; another query does not.
	again := h.Get(path)
	require.Equal(t, tag, again.Header.Get("ETag"))
	require.Equal(t, first.Body, again.Body)
	require.NotEqual(t, tag, h.Get(path+"?x=1").Header.Get("ETag"))
	require.Equal(t, h.Get(path+"?a=1&b=2").Header.Get("ETag"), h.Get(path+"?b=2&a=1").Header.Get("ETag"))
	reads := vr.reads.Load()
	rate, monthly = lim.charges()

	nm := h.Do(path, withINM(tag))
	require.Equal(t, http.StatusNotModified, nm.Status)
	require.Empty(t, nm.Body)
	require.Equal(t, tag, nm.Header.Get("ETag"))
	require.Equal(t, "private, no-cache", nm.Header.Get("Cache-Control"))
	require.Equal(t, reads, vr.reads.Load(), "a 304 must be answered before the read")
	r2, m2 := lim.charges()
	require.Equal(t, rate+1, r2, "a 304 is charged the rate")
	require.Equal(t, monthly, m2, "a 304 is not charged the monthly quota")

	// Weak, listed and gzip forms match too.
	for _, inm := range []string{"W/" + tag, `"nope", ` + tag, strings.TrimSuffix(tag, `"`) + `-gzip"`} {
		require.Equal(t, http.StatusNotModified, h.Do(path, withINM(inm)).Status, inm)
	}

	// A write moves the version: the old tag no longer matches.
	vr.seq.Add(1)
	fresh := h.Do(path, withINM(tag))
	require.Equal(t, http.StatusOK, fresh.Status)
	require.NotEqual(t, tag, fresh.Header.Get("ETag"))
	_, m3 := lim.charges()
	require.Equal(t, m2+1, m3, "a 200 is charged the monthly quota")
}

func TestBodyETagWithoutVersion(t *testing.T) {
	cr := &countingReader{}
	lim := &chargeLimiter{}
	h := conditionalHarness(t, cr, lim)
	path := "/v1/locations/" + bigSeattle().EntityID

	first := h.Get(path)
	require.Equal(t, http.StatusOK, first.Status)
	tag := first.Header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{32}"$`, tag)
	rate, monthly := lim.charges()

	nm := h.Do(path, withINM(tag))
	require.Equal(t, http.StatusNotModified, nm.Status)
	require.Empty(t, nm.Body)
	r2, m2 := lim.charges()
	require.Equal(t, [2]int{rate + 1, monthly}, [2]int{r2, m2}, "304: rate charged, monthly not")

	miss := h.Do(path, withINM(`"0123456789abcdef0123456789abcdef"`))
	require.Equal(t, http.StatusOK, miss.Status)
	require.Equal(t, first.Body, miss.Body)
	r3, m3 := lim.charges()
	require.Equal(t, [2]int{r2 + 1, m2 + 1}, [2]int{r3, m3}, "200: rate and monthly charged once each")

	// Changed data changes the tag.
	h.Publish(bigSeattleAs("Seattle, WA", 2))
	changed := h.Do(path, withINM(tag))
	require.Equal(t, http.StatusOK, changed.Status, "%s", changed.Body)
	require.NotEqual(t, tag, changed.Header.Get("ETag"))
}

// serveRaw bypasses the OpenAPI check (it cannot read a gzip body).
func serveRaw(h *apitest.Harness, path string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header = header
	rec := httptest.NewRecorder()
	h.Handler.ServeHTTP(rec, req)
	return rec
}

func TestGzipHasItsOwnETag(t *testing.T) {
	for name, r := range map[string]readmodel.Reader{"versioned": &versionedReader{}, "body hash": &countingReader{}} {
		t.Run(name, func(t *testing.T) {
			h := conditionalHarness(t, r, &chargeLimiter{})
			path := "/v1/locations/" + bigSeattle().EntityID
			plain := serveRaw(h, path, http.Header{"X-Api-Key": {apitest.Key}})
			require.Equal(t, http.StatusOK, plain.Code)
			require.Greater(t, plain.Body.Len(), 1024)
			require.Empty(t, plain.Header().Get("Content-Encoding"))
			tag := plain.Header().Get("ETag")

			gz := serveRaw(h, path, http.Header{"X-Api-Key": {apitest.Key}, "Accept-Encoding": {"gzip"}})
			require.Equal(t, http.StatusOK, gz.Code)
			require.Equal(t, "gzip", gz.Header().Get("Content-Encoding"))
			require.Contains(t, gz.Header().Values("Vary"), "Accept-Encoding")
			gzTag := gz.Header().Get("ETag")
			require.Equal(t, strings.TrimSuffix(tag, `"`)+`-gzip"`, gzTag, "the gzip body's tag differs from the identity one")
			zr, err := gzip.NewReader(gz.Body)
			require.NoError(t, err)
			body, err := io.ReadAll(zr)
			require.NoError(t, err)
			require.True(t, bytes.Equal(plain.Body.Bytes(), body))

			for _, inm := range []string{tag, gzTag} {
				for _, ae := range []string{"", "gzip"} {
					hd := http.Header{"X-Api-Key": {apitest.Key}, "If-None-Match": {inm}}
					if ae != "" {
						hd.Set("Accept-Encoding", ae)
					}
					nm := serveRaw(h, path, hd)
					require.Equal(t, http.StatusNotModified, nm.Code, "If-None-Match %s, Accept-Encoding %q", inm, ae)
					require.Zero(t, nm.Body.Len())
					require.Equal(t, inm, nm.Header().Get("ETag"))
				}
			}

			// Small bodies are not compressed.
			small := serveRaw(h, "/v1/locations/city_nope", http.Header{"X-Api-Key": {apitest.Key}, "Accept-Encoding": {"gzip"}})
			require.Equal(t, http.StatusNotFound, small.Code)
			require.Empty(t, small.Header().Get("Content-Encoding"))
		})
	}
}

func TestCacheControlOnEveryResponse(t *testing.T) {
	h := conditionalHarness(t, &countingReader{}, &chargeLimiter{})
	cases := map[string]struct {
		path   string
		header http.Header
		want   string
	}{
		"404":       {"/v1/locations/city_nope", http.Header{"X-Api-Key": {apitest.Key}}, "no-store"},
		"422":       {"/v1/locations/resolve", http.Header{"X-Api-Key": {apitest.Key}}, "no-store"},
		"403":       {"/v1/locations/resolve?q=x", nil, "no-store"},
		"live":      {"/v1/health/live", nil, "no-store"},
		"openapi":   {"/v1/openapi.json", nil, "public, max-age=300"},
		"no route":  {"/v1/nope", nil, "no-store"},
		"200 (key)": {"/v1/signals/catalog", http.Header{"X-Api-Key": {apitest.Key}}, "private, no-cache"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.header == nil {
				c.header = http.Header{}
			}
			r := serveRaw(h, c.path, c.header)
			require.Equal(t, c.want, r.Header().Get("Cache-Control"), "%d %s", r.Code, r.Body)
			if c.want == "no-store" {
				require.Empty(t, r.Header().Get("ETag"))
			}
		})
	}
}
