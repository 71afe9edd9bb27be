package api_test

// HTTP semantics and the edges of authentication: HEAD on every GET
// route, 405 with Allow, encoded slashes kept inside their segment, 503
// when the key store cannot answer, and the failed-authentication
// throttle with its sampled logs.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/internal/syncbuf"
)

func newSemanticsServer(t *testing.T, d api.Params) *httptest.Server {
	t.Helper()
	d.Limiter = quota.NewMemory(nil, nil)
	h := apitest.New(t, apitest.Params{Server: d})
	srv := httptest.NewServer(h.Handler)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url string, hdr http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func TestHEADAnswersLikeGETWithoutBody(t *testing.T) {
	srv := newSemanticsServer(t, api.Params{})
	key := http.Header{"X-Api-Key": {apitest.Key}}
	paths := append([]string{"/v1/health/live", "/v1/health/ready", "/v1/openapi.json"}, businessRoutes...)
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			get, _ := do(t, http.MethodGet, srv.URL+path, key)
			head, body := do(t, http.MethodHead, srv.URL+path, key)
			assert.Equal(t, get.StatusCode, head.StatusCode)
			assert.Empty(t, body)
			for _, h := range []string{"Content-Type", "RateLimit-Limit", "RateLimit-Remaining"} {
				assert.Equal(t, get.Header.Get(h) != "", head.Header.Get(h) != "", "header %s", h)
			}
			assert.NotEmpty(t, head.Header.Get("X-Request-ID"))
		})
	}
	t.Run("HEAD authenticates", func(t *testing.T) {
		resp, body := do(t, http.MethodHead, srv.URL+businessRoutes[0], nil)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.Empty(t, body)
	})
}

func TestOtherMethodsAre405WithAllow(t *testing.T) {
	srv := newSemanticsServer(t, api.Params{})
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
		for _, path := range []string{"/v1/health/ready", "/v1/locations/resolve", "/v1/locations/gabc"} {
			t.Run(method+" "+path, func(t *testing.T) {
				resp, body := do(t, method, srv.URL+path, http.Header{"X-Api-Key": {apitest.Key}})
				require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s", body)
				assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
				assert.Contains(t, string(body), `"code":"METHOD_NOT_ALLOWED"`)
				assert.Contains(t, string(body), resp.Header.Get("X-Request-ID"))
			})
		}
	}
	resp, _ := do(t, http.MethodPost, srv.URL+"/v1/nowhere", nil)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "an unknown path is still 404")
}

func TestEncodedSlashStaysInItsSegment(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	for _, path := range []string{
		"/v1/locations/gabc%2Fpermits",
		"/v1/locations/resolve%2F",
		"/v1/signals/geo/location/gabc%2F..%2Fsearch",
		"/v1/property/prop_0123%2Fx/permits",
	} {
		t.Run(path, func(t *testing.T) {
			r := h.Get(path)
			assert.Contains(t, []int{http.StatusNotFound, http.StatusUnprocessableEntity}, r.Status, "%s", r.Body)
		})
	}
	r := h.Get("/v1/locations/gabc%2Fpermits")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "the geo_id is gabc/permits, malformed: %s", r.Body)
	assert.Contains(t, string(r.Body), "geo_id")
}

// storeDownAuth is an authenticator whose store cannot answer.
type storeDownAuth struct{}

func (storeDownAuth) Authenticate(context.Context, string) (apikey.Principal, error) {
	return apikey.Principal{}, fmt.Errorf("lookup: %w: %w", apikey.ErrStoreUnavailable, quota.ErrOpen)
}

func TestKeyStoreDownIs503WithRetryAfter(t *testing.T) {
	var logs syncbuf.Buffer
	h := apitest.New(t, apitest.Params{Server: api.Params{
		Auth:   apikey.Chain(apikey.NewDevKeys([]string{apitest.Key}, apikey.DefaultDevPlan), storeDownAuth{}),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	}})
	unseen, _ := apikey.NewKey()
	for range 50 {
		r := h.Do(businessRoutes[0], http.Header{"X-Api-Key": {unseen}})
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
		assert.Equal(t, "2", r.Header.Get("Retry-After"))
		var e stdError
		r.JSON(t, &e)
		assert.Equal(t, "KEY_STORE_UNAVAILABLE", e.Error.Code)
		assert.Contains(t, e.Error.Message, "key store")
	}
	assert.Equal(t, http.StatusNotFound, h.Get("/v1/locations/gabc").Status, "a key checked without the store still works")
	assert.LessOrEqual(t, strings.Count(logs.String(), "key store unavailable: key not checked"), 10, "sampled: %s", logs.String())
	assert.NotContains(t, logs.String(), unseen)
}

func TestFailedAuthenticationsAreThrottledPerAddress(t *testing.T) {
	var logs syncbuf.Buffer
	h := apitest.New(t, apitest.Params{Server: api.Params{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}})
	from := func(ip, key string) apitest.Response {
		return h.Do(businessRoutes[0], http.Header{"X-Api-Key": {key}, "X-Forwarded-For": {ip}})
	}
	statuses := map[int]int{}
	for range 300 {
		statuses[from("203.0.113.7", "wrong-key").Status]++
	}
	assert.Equal(t, map[int]int{http.StatusForbidden: 100, http.StatusTooManyRequests: 200}, statuses)
	r := from("203.0.113.7", apitest.Key)
	require.Equal(t, http.StatusTooManyRequests, r.Status, "a throttled address is not checked, even with a good key")
	assert.NotEmpty(t, r.Header.Get("Retry-After"))
	var g gatewayError
	r.JSON(t, &g)
	assert.Contains(t, g.Message, "failed authentications")
	assert.Equal(t, http.StatusNotFound, h.Do("/v1/locations/gabc", http.Header{"X-Api-Key": {apitest.Key}, "X-Forwarded-For": {"203.0.113.8"}}).Status,
		"other addresses are unaffected")
	assert.Equal(t, http.StatusForbidden, from("203.0.113.9", "wrong-key").Status)

	lines := strings.Count(logs.String(), `"msg":"request"`)
	assert.Less(t, lines, 50, "access log lines of failed authentications are sampled")
	assert.Greater(t, lines, 5)
}
