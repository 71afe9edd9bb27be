package quota

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota/redistest"
)

// The same scenarios run against every limiter: both must decide alike.

func TestMemoryLimiter(t *testing.T) {
	runLimiterSuite(t, func(t *testing.T) Limiter { return NewMemory(nil, nil) })
}

func TestRedisLimiter(t *testing.T) {
	srv := redistest.Start(t)
	runLimiterSuite(t, func(t *testing.T) Limiter {
		lim, err := NewRedis(RedisParams{Client: newTestClient(t, srv.Addr)})
		require.NoError(t, err)
		return lim
	})
}

// newTestClient is a client of the test's Redis. Its timeouts are long:
// a call that times out opens the limiter's breaker, and its in-process
// fallback then admits a burst of its own (by design), which the suite's
// exact counts would take for over-admission; on a loaded machine 200 ms
// was not enough (TestRedisLimiter's burst refused 250 of 300 calls for
// the rate where 275 were due, 2026-12-06, beside fuzzing).
// The outage tests stop the server, which refuses at once.
func newTestClient(t testing.TB, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
	})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// hammer makes n concurrent Allow calls from workers goroutines.
func hammer(t *testing.T, lim Limiter, p apikey.Principal, workers, n int) []Decision {
	t.Helper()
	out := make([]Decision, n)
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range workers {
		wg.Go(func() {
			for i := range next {
				d, err := lim.Allow(context.Background(), p)
				assert.NoError(t, err)
				out[i] = d
			}
		})
	}
	wg.Wait()
	return out
}

func count(ds []Decision) (allowed int, reasons map[string]int) {
	reasons = map[string]int{}
	for _, d := range ds {
		if d.Allowed {
			allowed++
		} else {
			reasons[d.Reason]++
		}
	}
	return allowed, reasons
}

func runLimiterSuite(t *testing.T, newLimiter func(t *testing.T) Limiter) {
	ctx := context.Background()
	uniq := time.Now().Format("150405.000000")

	t.Run("burst holds exactly under concurrency", func(t *testing.T) {
		lim := newLimiter(t)
		p := principal("burst-"+uniq, apikey.Plan{Name: "t", RatePerSecond: 0.001, Burst: 25})
		ds := hammer(t, lim, p, 16, 300)
		allowed, reasons := count(ds)
		assert.Equal(t, 25, allowed)
		assert.Equal(t, map[string]int{ReasonRate: 275}, reasons)
		for _, d := range ds {
			assert.False(t, d.Fallback, "decided by the in-process fallback: Redis answered too late")
			assert.Equal(t, 25, d.Limit)
			if !d.Allowed {
				assert.Positive(t, d.RetryAfter)
				assert.LessOrEqual(t, d.RetryAfter, 1000*time.Second)
			}
		}
	})

	t.Run("monthly quota holds exactly under concurrency", func(t *testing.T) {
		lim := newLimiter(t)
		p := principal("month-"+uniq, apikey.Plan{Name: "t", RatePerSecond: 1e6, Burst: 1e6, MonthlyQuota: 40})
		ds := hammer(t, lim, p, 16, 300)
		allowed, reasons := count(ds)
		assert.Equal(t, 40, allowed)
		assert.Equal(t, map[string]int{ReasonMonthlyQuota: 260}, reasons)
		untilEnd := time.Until(monthEnd(time.Now()))
		for _, d := range ds {
			if !d.Allowed {
				assert.Equal(t, 40, d.Limit)
				assert.InDelta(t, untilEnd.Seconds(), d.RetryAfter.Seconds(), 5)
			}
		}
	})

	t.Run("decision fields", func(t *testing.T) {
		lim := newLimiter(t)
		p := principal("fields-"+uniq, apikey.Plan{Name: "t", RatePerSecond: 1, Burst: 3})
		// The limiter's clock runs on between the calls: each duration is
		// its value at the first call less the time since (GCRA: the
		// first call set the bucket's schedule), so it is checked against
		// the time this test measured, not against a fixed tolerance that
		// a loaded machine could exceed.
		start := time.Now()
		since := func(d time.Duration, atStart float64, what string) {
			t.Helper()
			const eps = 5 * time.Millisecond // rounding of the limiter's arithmetic
			hi := time.Duration(atStart*float64(time.Second)) + eps
			lo := time.Duration(atStart*float64(time.Second)) - time.Since(start) - eps
			assert.True(t, d >= lo && d <= hi, "%s %v, want within [%v, %v]", what, d, lo, hi)
		}
		for i, want := range []int{2, 1, 0} {
			d, err := lim.Allow(ctx, p)
			require.NoError(t, err)
			require.True(t, d.Allowed, "request %d", i)
			assert.Equal(t, 3, d.Limit)
			assert.Equal(t, want, d.Remaining, "request %d", i)
			since(d.Reset, float64(i+1), fmt.Sprintf("request %d reset", i))
			assert.Empty(t, d.Reason)
		}
		d, err := lim.Allow(ctx, p)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		assert.Equal(t, ReasonRate, d.Reason)
		assert.Equal(t, 0, d.Remaining)
		since(d.RetryAfter, 1, "retry after")
		since(d.Reset, 3, "reset")
	})

	t.Run("keys are independent", func(t *testing.T) {
		lim := newLimiter(t)
		plan := apikey.Plan{Name: "t", RatePerSecond: 0.001, Burst: 1}
		a, b := principal("a-"+uniq, plan), principal("b-"+uniq, plan)
		d, err := lim.Allow(ctx, a)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		d, err = lim.Allow(ctx, a)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		d, err = lim.Allow(ctx, b)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	})

	t.Run("a plan without limits sets no headers", func(t *testing.T) {
		lim := newLimiter(t)
		d, err := lim.Allow(ctx, principal("free-"+uniq, apikey.Plan{Name: "t"}))
		require.NoError(t, err)
		assert.Equal(t, Decision{Allowed: true}, d)
	})

	t.Run("monthly quota nearer than the rate is reported", func(t *testing.T) {
		lim := newLimiter(t)
		p := principal("near-"+uniq, apikey.Plan{Name: "t", RatePerSecond: 100, Burst: 100, MonthlyQuota: 5})
		d, err := lim.Allow(ctx, p)
		require.NoError(t, err)
		assert.Equal(t, 5, d.Limit)
		assert.Equal(t, 4, d.Remaining)
		assert.EqualValues(t, 4, d.MonthlyRemaining)
		assert.InDelta(t, time.Until(monthEnd(time.Now())).Seconds(), d.Reset.Seconds(), 5)
	})
}
