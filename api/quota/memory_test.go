package quota

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api/apikey"
)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func principal(id string, plan apikey.Plan) apikey.Principal {
	return apikey.Principal{KeyID: id, Plan: plan}
}

func TestMemoryGCRA(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)}
	m := NewMemory(clock.now, nil)
	p := principal("k1", apikey.Plan{Name: "t", RatePerSecond: 2, Burst: 3})
	ctx := context.Background()

	type step struct {
		advance      time.Duration
		allowed      bool
		remaining    int
		reset, retry time.Duration
		reason       string
	}
	for i, s := range []step{
		{allowed: true, remaining: 2, reset: 500 * time.Millisecond, retry: -1},
		{allowed: true, remaining: 1, reset: time.Second, retry: -1},
		{allowed: true, remaining: 0, reset: 1500 * time.Millisecond, retry: -1},
		{allowed: false, reason: ReasonRate, reset: 1500 * time.Millisecond, retry: 500 * time.Millisecond},
		{advance: 499 * time.Millisecond, allowed: false, reason: ReasonRate, reset: 1001 * time.Millisecond, retry: time.Millisecond},
		{advance: time.Millisecond, allowed: true, remaining: 0, reset: 1500 * time.Millisecond, retry: -1},
		{advance: 10 * time.Second, allowed: true, remaining: 2, reset: 500 * time.Millisecond, retry: -1},
	} {
		clock.advance(s.advance)
		d, err := m.Allow(ctx, p)
		require.NoError(t, err)
		assert.Equal(t, s.allowed, d.Allowed, "step %d allowed", i)
		assert.Equal(t, 3, d.Limit, "step %d limit", i)
		assert.Equal(t, s.remaining, d.Remaining, "step %d remaining", i)
		assert.Equal(t, s.reset, d.Reset, "step %d reset", i)
		assert.Equal(t, s.retry, d.RetryAfter, "step %d retry", i)
		assert.Equal(t, s.reason, d.Reason, "step %d reason", i)
	}
}

func TestMemoryMonthlyQuotaResetsAtMonthEndUTC(t *testing.T) {
	end := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: end.Add(-3 * time.Second)}
	m := NewMemory(clock.now, nil)
	p := principal("k1", apikey.Plan{Name: "t", RatePerSecond: 1000, Burst: 1000, MonthlyQuota: 2})
	ctx := context.Background()

	d, err := m.Allow(ctx, p)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.Equal(t, 2, d.Limit, "the quota is nearer to denying than the rate")
	assert.Equal(t, 1, d.Remaining)
	assert.Equal(t, 3*time.Second, d.Reset)
	d, err = m.Allow(ctx, p)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.EqualValues(t, 0, d.MonthlyRemaining)
	d, err = m.Allow(ctx, p)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	assert.Equal(t, ReasonMonthlyQuota, d.Reason)
	assert.Equal(t, 3*time.Second, d.RetryAfter)

	clock.t = end.Add(-time.Nanosecond)
	d, err = m.Allow(ctx, p)
	require.NoError(t, err)
	require.False(t, d.Allowed, "still January")
	clock.t = end
	d, err = m.Allow(ctx, p)
	require.NoError(t, err)
	require.True(t, d.Allowed, "February")
	assert.EqualValues(t, 1, d.MonthlyRemaining)
}

func TestRateLimitOfPlans(t *testing.T) {
	for _, tc := range []struct {
		name     string
		plan     apikey.Plan
		limited  bool
		interval time.Duration
		burst    int
	}{
		{"integer", apikey.Plan{RatePerSecond: 4, Burst: 8}, true, 250 * time.Millisecond, 8},
		{"fraction", apikey.Plan{RatePerSecond: 0.5, Burst: 1}, true, 2 * time.Second, 1},
		{"no burst", apikey.Plan{RatePerSecond: 10}, true, 100 * time.Millisecond, 1},
		{"no rate", apikey.Plan{MonthlyQuota: 10}, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := rateLimit(tc.plan)
			require.Equal(t, tc.limited, ok)
			if ok {
				assert.Equal(t, tc.interval, interval(l))
				assert.Equal(t, tc.burst, l.Burst)
			}
		})
	}
}
