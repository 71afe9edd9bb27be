package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
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

func (v *versionedReader) Location(ctx context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	v.reads.Add(1)
	return v.Reader.Location(ctx, geo)
}

// countingReader counts location reads; it is not Versioned.
type countingReader struct {
	readmodel.Reader
	reads atomic.Int64
}

func (v *countingReader) Location(ctx context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	v.reads.Add(1)
	return v.Reader.Location(ctx, geo)
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
	return planHarness(t, r, lim, plan)
}

// planHarness serves r (a versionedReader or countingReader over the
// harness's store) under lim with the harness key on plan p, the big
// Seattle location published.
func planHarness(t *testing.T, r readmodel.Reader, lim quota.Limiter, p apikey.Plan) *apitest.Harness {
	h := apitest.New(t, apitest.Params{Server: api.Params{
		Reader: r, Limiter: lim, Auth: apikey.NewDevKeys([]string{apitest.Key}, p),
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
	require.Regexp(t, `^"[0-9a-f]{16}"$`, tag)
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
	require.Regexp(t, `^"[0-9a-f]{16}"$`, tag)
	rate, monthly := lim.charges()

	nm := h.Do(path, withINM(tag))
	require.Equal(t, http.StatusNotModified, nm.Status)
	require.Empty(t, nm.Body)
	r2, m2 := lim.charges()
	require.Equal(t, [2]int{rate + 1, monthly}, [2]int{r2, m2}, "304: rate charged, monthly not")

	miss := h.Do(path, withINM(`"0123456789abcdef"`))
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

// With the real in-process limiter and a monthly quota of 2: once the
// quota is spent, a conditional request that matches is still a 304, and
// anything that needs a body is a 429.
func TestExhaustedMonthlyQuotaStillAnswers304(t *testing.T) {
	for name, r := range map[string]readmodel.Reader{"versioned": &versionedReader{}, "body hash": &countingReader{}} {
		t.Run(name, func(t *testing.T) {
			p := apikey.Plan{Name: "tiny", RatePerSecond: 1000, Burst: 1000, MonthlyQuota: 2}
			h := planHarness(t, r, quota.NewMemory(nil, nil), p)
			path := "/v1/locations/" + bigSeattle().EntityID
			first := h.Get(path)
			require.Equal(t, http.StatusOK, first.Status)
			require.Equal(t, http.StatusOK, h.Get(path).Status)
			tag := first.Header.Get("ETag")
			for range 3 {
				require.Equal(t, http.StatusNotModified, h.Do(path, withINM(tag)).Status)
			}
			require.Equal(t, http.StatusTooManyRequests, h.Get(path).Status)
			stale := h.Do(path, withINM(`"0123456789abcdef"`))
			require.Equal(t, http.StatusTooManyRequests, stale.Status)
			require.Contains(t, string(stale.Body), "monthly quota")
		})
	}
}

// splitLimiter answers the rate half and the monthly half of a split
// admission with different remainders.
type splitLimiter struct{ rateLeft, monthLeft int }

func (l splitLimiter) Allow(_ context.Context, p apikey.Principal) (quota.Decision, error) {
	d := quota.Decision{Allowed: true, Limit: 100, Remaining: l.rateLeft, Reset: 1}
	if p.Plan.RatePerSecond <= 0 { // the monthly half
		d = quota.Decision{Allowed: true, Limit: 1000, Remaining: l.monthLeft, Reset: 86400}
	}
	return d, nil
}

// A conditional 200 on a backend that is not Versioned is admitted in two
// halves; its RateLimit headers describe the half nearer to denying.
func TestSplitAdmissionReportsTheNearerPolicy(t *testing.T) {
	for _, c := range []struct{ rateLeft, monthLeft, wantLimit, wantLeft int }{
		{5, 900, 100, 5},
		{90, 7, 1000, 7},
	} {
		h := conditionalHarness(t, &countingReader{}, splitLimiter{c.rateLeft, c.monthLeft})
		r := h.Do("/v1/locations/"+bigSeattle().EntityID, withINM(`"0123456789abcdef"`))
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, fmt.Sprint(c.wantLimit), r.Header.Get("RateLimit-Limit"))
		require.Equal(t, fmt.Sprint(c.wantLeft), r.Header.Get("RateLimit-Remaining"))
	}
}

// TestResponseCachePerVersion: a repeated read at the same read-model
// version is answered from the response cache (the reader is not asked
// again, and the answer is charged as any 200); a new version reads again;
// with the cache off every request reads.
func TestResponseCachePerVersion(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cacheSize int64
		cached    bool
	}{{"on", 0, true}, {"off", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			vr := &versionedReader{}
			lim := &chargeLimiter{}
			h := apitest.New(t, apitest.Params{Server: api.Params{
				Reader: vr, Limiter: lim, Auth: apikey.NewDevKeys([]string{apitest.Key}, plan),
				ResponseCacheBytes: tc.cacheSize,
			}})
			vr.Reader = h.Store
			h.Publish(bigSeattle())
			path := "/v1/locations/" + bigSeattle().EntityID

			first := h.Get(path)
			require.Equal(t, http.StatusOK, first.Status, "%s", first.Body)
			second := h.Get(path)
			require.Equal(t, http.StatusOK, second.Status)
			require.Equal(t, first.Body, second.Body)
			require.Equal(t, first.Header.Get("ETag"), second.Header.Get("ETag"))
			require.Equal(t, first.Header.Get("Content-Length"), second.Header.Get("Content-Length"))
			want := int64(2)
			if tc.cached {
				want = 1
			}
			require.Equal(t, want, vr.reads.Load(), "reads after two equal requests")
			_, monthly := lim.charges()
			require.Equal(t, 2, monthly, "a cached 200 is charged like any 200")

			// A change of the document moves the version: the cache
			// cannot answer, and the new body is served.
			h.Publish(bigSeattleAs("Seattle, WA (renamed)", 2))
			vr.seq.Add(1)
			third := h.Get(path)
			require.Equal(t, http.StatusOK, third.Status)
			require.Contains(t, string(third.Body), "(renamed)")
			require.Equal(t, want+1, vr.reads.Load())
		})
	}
}

// TestCacheHitAnswersAsTheMiss: an answer from the response cache carries
// the headers and bytes of the answer that filled it (minus the request
// id), for a client that accepts only identity (served without gzhttp's
// writer) and for one that accepts gzip; and a query written in another
// order or with other escapes is the same query (same ETag, a cache hit).
func TestCacheHitAnswersAsTheMiss(t *testing.T) {
	vr := &versionedReader{}
	h := apitest.New(t, apitest.Params{Server: api.Params{Reader: vr}})
	vr.Reader = h.Store
	h.Publish(bigSeattle())
	path := "/v1/locations/" + bigSeattle().EntityID
	for _, enc := range []string{"", "identity", "gzip"} {
		t.Run("accept-encoding "+enc, func(t *testing.T) {
			hdr := http.Header{"X-Api-Key": {apitest.Key}}
			if enc != "" {
				hdr.Set("Accept-Encoding", enc)
			}
			do := h.Do
			if enc == "gzip" { // the OpenAPI validator reads identity bodies
				do = func(path string, hdr http.Header) apitest.Response {
					rec := serveRaw(h, path, hdr)
					return apitest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
				}
			}
			reads := vr.reads.Load()
			first := do(path, hdr)
			second := do(path, hdr)
			require.Equal(t, http.StatusOK, second.Status)
			require.LessOrEqual(t, vr.reads.Load()-reads, int64(1), "the second answer is the cache's")
			require.Equal(t, first.Body, second.Body)
			first.Header.Del("X-Request-Id")
			second.Header.Del("X-Request-Id")
			require.Equal(t, first.Header, second.Header)
			require.Equal(t, []string{"Accept-Encoding", "X-API-Key"}, second.Header.Values("Vary"))
			if enc == "gzip" {
				require.Equal(t, "gzip", second.Header.Get("Content-Encoding"))
				require.True(t, strings.HasSuffix(second.Header.Get("ETag"), `-gzip"`))
			} else {
				require.Empty(t, second.Header.Get("Content-Encoding"))
			}
		})
	}

	h.Publish(gazetteer()...)
	reads := vr.reads.Load()
	var tags []string
	for _, q := range []string{
		"/v1/signals/geo/search?state=WA&limit=25&geo_type=city",
		"/v1/signals/geo/search?geo_type=city&limit=25&state=WA",
		"/v1/signals/geo/search?geo_type=c%69ty&limit=%325&state=W%41",
		"/v1/signals/geo/search?geo%5Ftype=city&limit=25&state=WA",
	} {
		res := h.Get(q)
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", q, res.Body)
		tags = append(tags, res.Header.Get("ETag"))
	}
	require.Equal(t, []string{tags[0], tags[0], tags[0], tags[0]}, tags, "one query, however written: one ETag")
	require.Equal(t, reads, vr.reads.Load(), "no location read")
	other := h.Get("/v1/signals/geo/search?state=WA&limit=24&geo_type=city")
	require.NotEqual(t, tags[0], other.Header.Get("ETag"))
}

// TestConcurrentRequestsKeepTheirOwnState: the per-request state is
// pooled beside the response writer; concurrent requests (run under
// -race in make test) each get their own request id, key and ETag.
func TestConcurrentRequestsKeepTheirOwnState(t *testing.T) {
	vr := &versionedReader{}
	h := apitest.New(t, apitest.Params{Server: api.Params{Reader: vr}})
	vr.Reader = h.Store
	h.Publish(gazetteer()...)
	paths := []string{"/v1/locations/" + bigSeattle().EntityID, "/v1/signals/geo/search?state=WA&limit=25", "/v1/signals/geo/search?state=WA&limit=5"}
	want := map[string]string{}
	for _, p := range paths {
		want[p] = serveRaw(h, p, http.Header{"X-Api-Key": {apitest.Key}}).Header().Get("ETag")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p := paths[(g+i)%len(paths)]
				id := fmt.Sprintf("req-%d-%d", g, i)
				rec := serveRaw(h, p, http.Header{"X-Api-Key": {apitest.Key}, "X-Request-Id": {id}})
				if rec.Code != http.StatusOK || rec.Header().Get("X-Request-Id") != id || rec.Header().Get("ETag") != want[p] {
					t.Errorf("%s as %s: %d, request id %q, ETag %q (want %q)", p, id, rec.Code, rec.Header().Get("X-Request-Id"), rec.Header().Get("ETag"), want[p])
					return
				}
			}
		}()
	}
	wg.Wait()
}
