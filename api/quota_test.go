package api_test

// The key check and the quota through the whole API: 403 for missing,
// malformed and unknown keys, 429 naming the limit, RateLimit headers on
// 200 and 429, two API instances sharing one real Redis, and keys kept out
// of the logs.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/openapi/openapitest"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/api/quota/redistest"
	"github.com/permitd/permitd/readmodel"
)

// quotaReader answers resolve with no candidates: a cheap 200.
type quotaReader struct{ readmodel.Reader }

func (quotaReader) ResolveCandidates(context.Context, readmodel.ResolveQuery) ([]readmodel.Candidate, error) {
	return nil, nil
}

const quotaRoute = "/v1/locations/resolve?query=Seattle"

func newQuotaAPI(t testing.TB, auth apikey.Authenticator, lim quota.Limiter, log *slog.Logger) http.Handler {
	t.Helper()
	h, err := api.NewServer(api.Params{
		Reader: quotaReader{}, Auth: auth, Limiter: lim, Logger: log,
		CursorSecret: []byte("quota-test-cursor-secret-0123456789"),
	})
	require.NoError(t, err)
	return h
}

// quotaDoc checks every response of these tests against the OpenAPI
// document (200, 403 and 429 with their headers).
var quotaDoc = sync.OnceValues(openapitest.NewValidator)

func callWithKey(h http.Handler, key string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, quotaRoute, nil)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	h.ServeHTTP(rec, req)
	v, err := quotaDoc()
	if err == nil {
		err = v.Validate(req, rec.Code, rec.Header(), rec.Body.Bytes())
	}
	if err != nil {
		panic(fmt.Sprintf("response breaks the OpenAPI document: %v\n%s", err, rec.Body))
	}
	return rec
}

func gatewayMessage(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), rec.Body.String())
	require.Len(t, body, 1, "the body is {\"message\"} only: %s", rec.Body.String())
	msg, ok := body["message"].(string)
	require.True(t, ok, rec.Body.String())
	return msg
}

func headerInt(t *testing.T, rec *httptest.ResponseRecorder, name string) int {
	t.Helper()
	v := rec.Header().Get(name)
	require.NotEmpty(t, v, "header %s", name)
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "header %s=%q", name, v)
	return n
}

// planAuth accepts one key on a plan the test chooses.
type planAuth struct {
	key  string
	id   string
	plan apikey.Plan
}

func (a planAuth) Authenticate(_ context.Context, key string) (apikey.Principal, error) {
	if key != a.key {
		return apikey.Principal{}, apikey.ErrInvalidKey
	}
	return apikey.Principal{KeyID: a.id, Plan: a.plan}, nil
}

func newTestRedis(t testing.TB, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
	})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// limiters are the two ways to wire the quota: in process and on Redis.
func limiters(t *testing.T) map[string]func(t *testing.T) quota.Limiter {
	srv := redistest.Start(t)
	return map[string]func(t *testing.T) quota.Limiter{
		"memory": func(t *testing.T) quota.Limiter { return quota.NewMemory(nil, nil) },
		"redis": func(t *testing.T) quota.Limiter {
			lim, err := quota.NewRedis(quota.RedisParams{Client: newTestRedis(t, srv.Addr)})
			require.NoError(t, err)
			return lim
		},
	}
}

func TestKeyRejectionsAre403(t *testing.T) {
	ctx := context.Background()
	store, err := apikey.OpenFileStore(filepath.Join(t.TempDir(), "keys.json"))
	require.NoError(t, err)
	good, _, err := apikey.Issue(ctx, store, "free", time.Now())
	require.NoError(t, err)
	unknown, _ := apikey.NewKey()
	badChecksum := good[:len(good)-1] + string("ab"[boolIndex(good[len(good)-1] == 'a')])
	h := newQuotaAPI(t, apikey.NewKeys(store), quota.NewMemory(nil, nil), nil)

	for name, key := range map[string]string{
		"missing":      "",
		"malformed":    "not-a-key",
		"bad checksum": badChecksum,
		"unknown":      unknown,
	} {
		t.Run(name, func(t *testing.T) {
			rec := callWithKey(h, key)
			require.Equal(t, http.StatusForbidden, rec.Code)
			assert.NotEmpty(t, gatewayMessage(t, rec))
			assert.Empty(t, rec.Header().Get("RateLimit-Limit"), "no quota for an unknown caller")
		})
	}
	rec := callWithKey(h, good)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestRateLimitIs429WithHeaders(t *testing.T) {
	for name, newLimiter := range limiters(t) {
		t.Run(name, func(t *testing.T) {
			plan := apikey.Plan{Name: "t", RatePerSecond: 0.01, Burst: 4, MonthlyQuota: 1000}
			auth := planAuth{key: "k-" + name, id: "rate-" + name + strconv.FormatInt(time.Now().UnixNano(), 36), plan: plan}
			h := newQuotaAPI(t, auth, newLimiter(t), nil)
			for i := range 4 {
				rec := callWithKey(h, auth.key)
				require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
				assert.Equal(t, 4, headerInt(t, rec, "RateLimit-Limit"))
				assert.Equal(t, 3-i, headerInt(t, rec, "RateLimit-Remaining"))
				assert.Positive(t, headerInt(t, rec, "RateLimit-Reset"))
				assert.Empty(t, rec.Header().Get("Retry-After"))
			}
			rec := callWithKey(h, auth.key)
			require.Equal(t, http.StatusTooManyRequests, rec.Code)
			assert.Contains(t, gatewayMessage(t, rec), "rate limit")
			assert.Equal(t, 4, headerInt(t, rec, "RateLimit-Limit"))
			assert.Equal(t, 0, headerInt(t, rec, "RateLimit-Remaining"))
			assert.InDelta(t, 400, headerInt(t, rec, "RateLimit-Reset"), 1)
			assert.InDelta(t, 100, headerInt(t, rec, "Retry-After"), 1, "one request every 100 s")
		})
	}
}

func TestMonthlyQuotaIs429WithHeaders(t *testing.T) {
	for name, newLimiter := range limiters(t) {
		t.Run(name, func(t *testing.T) {
			plan := apikey.Plan{Name: "t", RatePerSecond: 1000, Burst: 1000, MonthlyQuota: 3}
			auth := planAuth{key: "k-" + name, id: "month-" + name + strconv.FormatInt(time.Now().UnixNano(), 36), plan: plan}
			h := newQuotaAPI(t, auth, newLimiter(t), nil)
			for i := range 3 {
				rec := callWithKey(h, auth.key)
				require.Equal(t, http.StatusOK, rec.Code)
				assert.Equal(t, 3, headerInt(t, rec, "RateLimit-Limit"), "the quota is the nearer limit")
				assert.Equal(t, 2-i, headerInt(t, rec, "RateLimit-Remaining"))
			}
			rec := callWithKey(h, auth.key)
			require.Equal(t, http.StatusTooManyRequests, rec.Code)
			assert.Contains(t, gatewayMessage(t, rec), "monthly quota")
			untilMonthEnd := time.Until(time.Date(time.Now().UTC().Year(), time.Now().UTC().Month()+1, 1, 0, 0, 0, 0, time.UTC))
			assert.InDelta(t, untilMonthEnd.Seconds(), headerInt(t, rec, "Retry-After"), 5)
			assert.InDelta(t, untilMonthEnd.Seconds(), headerInt(t, rec, "RateLimit-Reset"), 5)
			assert.Equal(t, 0, headerInt(t, rec, "RateLimit-Remaining"))
		})
	}
}

// TestTwoInstancesShareOneRedis runs two API handlers, each with its own
// Redis client and limiter, against one redis-server: together they admit
// the plan's burst plus its rate over the run, within 10%.
func TestTwoInstancesShareOneRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs for 1.5 s")
	}
	srv := redistest.Start(t)
	plan := apikey.Plan{Name: "t", RatePerSecond: 200, Burst: 20}
	auth := planAuth{key: "shared-key", id: "shared", plan: plan}
	var handlers []http.Handler
	for range 2 {
		lim, err := quota.NewRedis(quota.RedisParams{Client: newTestRedis(t, srv.Addr)})
		require.NoError(t, err)
		handlers = append(handlers, newQuotaAPI(t, auth, lim, nil))
	}

	const run = 1500 * time.Millisecond
	var admitted [2]atomic.Int64
	var denied atomic.Int64
	start := time.Now()
	deadline := start.Add(run)
	var wg sync.WaitGroup
	for i, h := range handlers {
		for range 2 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					switch rec := callWithKey(h, auth.key); rec.Code {
					case http.StatusOK:
						admitted[i].Add(1)
					case http.StatusTooManyRequests:
						denied.Add(1)
					default:
						t.Errorf("status %d: %s", rec.Code, rec.Body.String())
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := admitted[0].Load() + admitted[1].Load()
	want := float64(plan.Burst) + plan.RatePerSecond*elapsed.Seconds()
	t.Logf("admitted %d (%d + %d), denied %d in %s; plan allows %.0f", total, admitted[0].Load(), admitted[1].Load(), denied.Load(), elapsed, want)
	require.Positive(t, denied.Load(), "the callers must push past the limit for the test to mean anything")
	// The two instances share one bucket: together they never admit more
	// than the plan allows over the run (two separate buckets would admit
	// about twice that). The lower bound is loose because a loaded
	// machine can leave the callers short of draining the bucket.
	assert.LessOrEqual(t, float64(total), want+1, "the instances share one bucket")
	assert.Greater(t, float64(total), want/2, "the callers kept the bucket busy")
	assert.Positive(t, admitted[0].Load())
	assert.Positive(t, admitted[1].Load())
}

// TestKeysNeverAppearInLogs sends valid, throttled, malformed, unknown and
// forged keys through the API, with Redis up and then killed, logging at
// debug level, and searches the output for every key and secret.
func TestKeysNeverAppearInLogs(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))

	rdb := newTestRedis(t, srv.Addr)
	store := apikey.NewCache(apikey.CacheParams{Store: apikey.NewRedisStore(rdb, ""), TTL: time.Nanosecond})
	good, rec, err := apikey.Issue(ctx, store, "free", time.Now())
	require.NoError(t, err)
	never, _, err := apikey.Issue(ctx, store, "free", time.Now())
	require.NoError(t, err)
	lim, err := quota.NewRedis(quota.RedisParams{Client: rdb, Logger: log, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	go func() { _ = lim.Run(ctx) }()
	h := newQuotaAPI(t, apikey.Chain(apikey.NewDevKeys([]string{"dev-key-plain-text"}, apikey.DefaultDevPlan), apikey.NewKeys(store)), lim, log)

	unknown, _ := apikey.NewKey()
	forged := rec.ID + "-forged"
	statuses := map[int]int{}
	send := func(keys ...string) {
		for _, k := range keys {
			statuses[callWithKey(h, k).Code]++
		}
	}
	// Past the free plan's burst of 10, until one is throttled (on a
	// loaded machine the bucket refills while the requests run).
	for i := 0; i < 200 && statuses[http.StatusTooManyRequests] == 0; i++ {
		send(good)
	}
	send("dev-key-plain-text", "not-a-key", unknown, forged, good[:len(good)-2]+"zz")
	srv.Stop()
	send(good, good, "dev-key-plain-text", never, unknown) // fallback limiter, stale cached key, a key the cache never saw
	srv.Restart()
	require.Eventually(t, func() bool { return !lim.Degraded() }, 10*time.Second, 10*time.Millisecond)
	send(good)

	assert.Positive(t, statuses[http.StatusOK])
	assert.Positive(t, statuses[http.StatusTooManyRequests])
	assert.Positive(t, statuses[http.StatusForbidden])
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	require.Contains(t, out, rec.ID, "the non-secret key id is logged")
	require.Contains(t, out, "Redis unreachable")
	secret := func(k string) string { return strings.Split(k, "_")[2] }
	for _, k := range []string{good, never, unknown, secret(good), secret(never), secret(unknown), "dev-key-plain-text", "not-a-key", forged} {
		assert.NotContains(t, out, k)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
