package quota

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota/redistest"
)

// TestMonthlyCountedOncePerCheck: the monthly counter rides in the rate
// script's pipeline; it counts exactly one per admitted request, also when
// Redis has lost the script (NOSCRIPT, then redis_rate's EVAL fallback),
// and gives the count back for a rate-denied request.
func TestMonthlyCountedOncePerCheck(t *testing.T) {
	srv := redistest.Start(t)
	rdb := newTestClient(t, srv.Addr)
	lim, err := NewRedis(RedisParams{Client: rdb})
	require.NoError(t, err)
	ctx := context.Background()
	plan := apikey.Plan{Name: "t", RatePerSecond: 0.001, Burst: 3, MonthlyQuota: 100}
	p := principal("once", plan)
	month := monthKey(lim.p.Now())
	count := func() int64 {
		n, err := rdb.Get(ctx, lim.monthlyKey(p.KeyID, month)).Int64()
		require.NoError(t, err)
		return n
	}

	d, err := lim.Allow(ctx, p)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.EqualValues(t, 1, count())

	require.NoError(t, rdb.ScriptFlush(ctx).Err()) // the next EVALSHA answers NOSCRIPT
	d, err = lim.Allow(ctx, p)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.EqualValues(t, 2, count(), "NOSCRIPT fallback must not count twice")

	d, err = lim.Allow(ctx, p)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	d, err = lim.Allow(ctx, p) // burst 3 used up: rate-denied
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Equal(t, ReasonRate, d.Reason)
	require.EqualValues(t, 3, count(), "a rate-denied request gives its count back")
}
