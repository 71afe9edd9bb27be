package quota

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota/redistest"
	"github.com/permitd/permitd/internal/syncbuf"
)

func TestRedisMonthlyCounterExpiresAtMonthEnd(t *testing.T) {
	srv := redistest.Start(t)
	rdb := newTestClient(t, srv.Addr)
	ctx := context.Background()
	// A clock in the future (so EXPIREAT lies ahead of Redis's clock) just
	// before a month ends.
	end := monthEnd(time.Now().AddDate(0, 2, 0))
	clock := &fakeClock{t: end.Add(-2 * time.Second)}
	lim, err := NewRedis(RedisParams{Client: rdb, Now: clock.now})
	require.NoError(t, err)
	p := principal("rollover", apikey.Plan{Name: "t", RatePerSecond: 1000, Burst: 1000, MonthlyQuota: 2})

	for range 2 {
		d, err := lim.Allow(ctx, p)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	d, err := lim.Allow(ctx, p)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Equal(t, ReasonMonthlyQuota, d.Reason)
	assert.Equal(t, 2*time.Second, d.RetryAfter)

	key := "permitd:month:rollover:" + monthKey(clock.t)
	exp, err := rdb.ExpireTime(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, end.Unix(), int64(exp/time.Second), "the counter expires at the month's end, UTC")
	n, err := rdb.Get(ctx, key).Int()
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	clock.advance(2 * time.Second)
	d, err = lim.Allow(ctx, p)
	require.NoError(t, err)
	require.True(t, d.Allowed, "a new month, a new counter")
	assert.EqualValues(t, 1, d.MonthlyRemaining)
}

// TestRedisOutageFallsBackAndRecovers kills Redis mid-test: the limiter
// keeps deciding in process (per replica: the fallback's own burst, the
// monthly quota from the last count seen), says so in a metric and a log
// line, then returns to Redis by itself and adds the outage's admissions
// to the shared monthly counter.
func TestRedisOutageFallsBackAndRecovers(t *testing.T) {
	srv := redistest.Start(t)
	rdb := newTestClient(t, srv.Addr)
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	var logs syncbuf.Buffer
	lim, err := NewRedis(RedisParams{
		Client: rdb, Metrics: metrics, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- lim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-runDone)
	})

	p := principal("outage", apikey.Plan{Name: "t", RatePerSecond: 0.001, Burst: 5, MonthlyQuota: 1000})
	monthly := "permitd:month:outage:" + monthKey(time.Now())
	for range 3 {
		d, err := lim.Allow(ctx, p)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.False(t, d.Fallback)
	}
	require.Equal(t, "3", rdb.Get(ctx, monthly).Val())

	srv.Stop()

	start := time.Now()
	var ds []Decision
	for range 50 {
		d, err := lim.Allow(ctx, p)
		require.NoError(t, err, "the limiter decides while Redis is down")
		ds = append(ds, d)
	}
	assert.Less(t, time.Since(start), time.Second, "no request waits on a dead Redis")
	allowed, reasons := count(ds)
	assert.Equal(t, 5, allowed, "the fallback enforces the plan's burst on this replica")
	assert.Equal(t, map[string]int{ReasonRate: 45}, reasons)
	for _, d := range ds {
		assert.True(t, d.Fallback)
	}
	assert.EqualValues(t, 1000-3-5, ds[4].MonthlyRemaining, "the fallback counts on from the last shared count")
	assert.True(t, lim.Degraded())
	assert.Equal(t, 1.0, value(t, metrics.fallbackActive))
	assert.Equal(t, 1.0, value(t, metrics.redisErrors), "one failed check, then no request touches Redis")
	assert.Equal(t, 50.0, value(t, metrics.decisions.WithLabelValues("fallback", "allowed"))+
		value(t, metrics.decisions.WithLabelValues("fallback", "rate")))
	assert.Contains(t, logs.String(), "Redis unreachable")

	srv.Restart() // empty: no persistence

	require.Eventually(t, func() bool { return !lim.Degraded() }, 10*time.Second, 10*time.Millisecond, "recovers by itself")
	assert.Equal(t, 0.0, value(t, metrics.fallbackActive))
	assert.Equal(t, 1.0, value(t, metrics.recoveries))
	assert.Contains(t, logs.String(), "Redis reachable again")
	assert.Equal(t, "5", rdb.Get(ctx, monthly).Val(), "the outage's admissions reach the shared counter")

	d, err := lim.Allow(ctx, p)
	require.NoError(t, err)
	assert.False(t, d.Fallback)
	assert.True(t, d.Allowed, "the restarted Redis has no rate state for the key")
	assert.Equal(t, "6", rdb.Get(ctx, monthly).Val())
	n, err := rdb.Exists(ctx, "rate:permitd:outage").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "rate state is in Redis again")
}

func TestRedisOutageSecondTime(t *testing.T) {
	// A limiter recovers from more than one outage.
	srv := redistest.Start(t)
	lim, err := NewRedis(RedisParams{Client: newTestClient(t, srv.Addr), MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- lim.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-runDone)
	}()
	p := principal("twice", apikey.Plan{Name: "t", RatePerSecond: 1000, Burst: 1000})
	for range 2 {
		srv.Stop()
		d, err := lim.Allow(ctx, p)
		require.NoError(t, err)
		require.True(t, d.Fallback)
		srv.Restart()
		require.Eventually(t, func() bool { return !lim.Degraded() }, 10*time.Second, 10*time.Millisecond)
		d, err = lim.Allow(ctx, p)
		require.NoError(t, err)
		require.False(t, d.Fallback)
	}
}

// value reads a counter's or gauge's current value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
