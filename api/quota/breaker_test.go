package quota

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var errDown = errors.New("redis down")

func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	metrics := NewMetrics(prometheus.NewRegistry())
	b, err := NewBreaker(BreakerParams{Probe: func(context.Context) error { return errDown }, Failures: 3, Metrics: metrics})
	require.NoError(t, err)
	ctx := context.Background()
	fail := func(context.Context) error { return errDown }
	ok := func(context.Context) error { return nil }

	require.ErrorIs(t, b.Do(ctx, fail), errDown)
	require.ErrorIs(t, b.Do(ctx, fail), errDown)
	require.NoError(t, b.Do(ctx, ok), "a success resets the count")
	require.ErrorIs(t, b.Do(ctx, fail), errDown)
	require.ErrorIs(t, b.Do(ctx, fail), errDown)
	assert.False(t, b.Open())
	require.ErrorIs(t, b.Do(ctx, fail), errDown)
	assert.True(t, b.Open(), "three failures in a row open it")

	var called atomic.Bool
	err = b.Do(ctx, func(context.Context) error { called.Store(true); return nil })
	require.ErrorIs(t, err, ErrOpen)
	assert.False(t, called.Load(), "an open circuit does not call Redis")
	assert.Equal(t, 1.0, value(t, metrics.rejected))
	assert.Equal(t, 1.0, value(t, metrics.breaker.WithLabelValues("open")))
	assert.Equal(t, 0.0, value(t, metrics.breaker.WithLabelValues("closed")))
	assert.Equal(t, 5.0, value(t, metrics.redisErrors))

	time.Sleep(150 * time.Millisecond) // past the open interval: half-open
	require.ErrorIs(t, b.Do(ctx, ok), ErrOpen, "only the prober makes the half-open trial")
}

func TestBreakerIgnoresTheCallersCancellation(t *testing.T) {
	b, err := NewBreaker(BreakerParams{Probe: func(context.Context) error { return nil }, Failures: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, b.Do(ctx, func(ctx context.Context) error { return ctx.Err() }), context.Canceled)
	assert.False(t, b.Open(), "a caller that went away says nothing about Redis")
}

func TestBreakerBoundsEveryCall(t *testing.T) {
	b, err := NewBreaker(BreakerParams{Probe: func(context.Context) error { return nil }, Timeout: 50 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	err = b.Do(context.Background(), func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
			return nil
		}
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestBreakerProbesThenClosesAfterItsHooks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // the prober is gone once Run returns
	var probes atomic.Int32
	b, err := NewBreaker(BreakerParams{
		Probe: func(context.Context) error {
			if probes.Add(1) < 3 {
				return errDown
			}
			return nil
		},
		Failures: 1, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	var mu sync.Mutex
	var events []string
	b.OnChange(func(open bool) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, map[bool]string{true: "open", false: "closed"}[open])
	})
	hookFails := true
	b.BeforeClose(func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, "hook")
		if hookFails {
			hookFails = false
			return errDown
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	require.ErrorIs(t, b.Do(ctx, func(context.Context) error { return errDown }), errDown)
	require.True(t, b.Open())
	require.Eventually(t, func() bool { return !b.Open() }, 5*time.Second, 5*time.Millisecond, "closes by itself")
	assert.GreaterOrEqual(t, probes.Load(), int32(4), "two failed probes, a probe whose hook failed, then one that closed")
	mu.Lock()
	assert.Equal(t, []string{"open", "hook", "hook", "closed"}, events)
	mu.Unlock()
	require.NoError(t, b.Do(ctx, func(context.Context) error { return nil }))
}
