package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/api/quota/redistest"
)

// BenchmarkCachedKeyRedisDown times requests of a key the replica has
// checked, wired as serve wires the distributed mode (key cache over the
// Redis store, limiter on Redis, one breaker), first with Redis up, then
// with redis-server stopped. It reports the p99 of each and their
// difference; the target is a difference of at most 2ms (an outage costs
// a cached key nothing), with no 500.
func BenchmarkCachedKeyRedisDown(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{
		Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 100 * time.Millisecond,
		ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, PoolTimeout: 100 * time.Millisecond,
	})
	b.Cleanup(func() { rdb.Close() })
	brk, err := quota.NewBreaker(quota.BreakerParams{
		Probe: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }, Timeout: 100 * time.Millisecond,
		MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}
	lim, err := quota.NewRedis(quota.RedisParams{Client: rdb, Breaker: brk})
	if err != nil {
		b.Fatal(err)
	}
	store := apikey.NewRedisStore(rdb, "")
	key, _, err := apikey.Issue(context.Background(), store, "enterprise", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	// A short TTL, so that the outage run asks the (open) breaker on
	// every request and is served from the stale entry: the slow path.
	cache := apikey.NewCache(apikey.CacheParams{Store: apikey.Guarded(store, brk), TTL: time.Nanosecond})
	h := newQuotaAPI(b, apikey.NewKeys(cache), lim, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = brk.Run(ctx) }()

	// Within the enterprise plan's burst (500) in each phase, so that
	// every answer is a 200 and both phases time the same work.
	const n = 450
	measure := func() (p99 time.Duration, errors int) {
		took := make([]time.Duration, 0, n)
		for range n {
			req := httptest.NewRequest(http.MethodGet, quotaRoute, nil)
			req.Header.Set("X-API-Key", key)
			rec := httptest.NewRecorder()
			t0 := time.Now()
			h.ServeHTTP(rec, req)
			took = append(took, time.Since(t0))
			if rec.Code != http.StatusOK {
				errors++
			}
		}
		slices.Sort(took)
		return took[len(took)*99/100], errors
	}
	b.ResetTimer()
	if _, errs := measure(); errs > 0 { // warm up; the burst refills below
		b.Fatalf("%d answers other than 200 warming up", errs)
	}
	time.Sleep(2 * time.Second)
	up, upErr := measure()
	srv.Stop()
	down, downErr := measure()
	b.StopTimer()
	if upErr+downErr > 0 {
		b.Fatalf("%d answers other than 200 with Redis up, %d with it down", upErr, downErr)
	}
	if !brk.Open() {
		b.Fatal("the breaker did not open")
	}
	b.ReportMetric(float64(up.Microseconds()), "p99-up-us")
	b.ReportMetric(float64(down.Microseconds()), "p99-down-us")
	b.ReportMetric(float64((down - up).Microseconds()), "p99-delta-us")
}
