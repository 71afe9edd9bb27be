package quota

import (
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/permitd/permitd/api/apikey"
)

// rateLimit is a plan's rate limit in redis_rate's terms, from which the
// in-process limiter derives the same emission interval, so both decide
// alike.
func rateLimit(p apikey.Plan) (redis_rate.Limit, bool) {
	if !(p.RatePerSecond > 0) || math.IsInf(p.RatePerSecond, 1) {
		return redis_rate.Limit{}, false
	}
	burst := max(p.Burst, 1)
	if p.RatePerSecond == math.Trunc(p.RatePerSecond) && p.RatePerSecond <= math.MaxInt32 {
		return redis_rate.Limit{Rate: int(p.RatePerSecond), Burst: burst, Period: time.Second}, true
	}
	// Fractional rates: per 1000 s, to a thousandth of a request per second.
	return redis_rate.Limit{Rate: max(int(math.Round(p.RatePerSecond*1000)), 1), Burst: burst, Period: 1000 * time.Second}, true
}

// interval is the GCRA emission interval: the time one request "costs".
func interval(l redis_rate.Limit) time.Duration {
	return time.Duration(float64(l.Period) / float64(l.Rate))
}

// gcra is the generic cell rate algorithm exactly as redis_rate's Lua
// script runs it for one request: tat is the theoretical arrival time
// stored for the key (zero when none). It returns the new tat (unchanged
// when denied) and the decision.
func gcra(tat, now time.Time, l redis_rate.Limit) (time.Time, Decision) {
	t := interval(l)
	if tat.Before(now) {
		tat = now
	}
	newTat := tat.Add(t)
	allowAt := newTat.Add(-t * time.Duration(l.Burst))
	diff := now.Sub(allowAt)
	if diff < 0 {
		return tat, Decision{
			Allowed: false, Reason: ReasonRate, Limit: l.Burst, Remaining: 0,
			RetryAfter: -diff, Reset: tat.Sub(now),
		}
	}
	return newTat, Decision{
		Allowed: true, Limit: l.Burst, Remaining: int(diff / t),
		RetryAfter: -1, Reset: newTat.Sub(now),
	}
}

// monthEnd is the first instant of the next calendar month, UTC.
func monthEnd(now time.Time) time.Time {
	y, m, _ := now.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// monthKey names now's calendar month (UTC), e.g. "2026-07".
func monthKey(now time.Time) string { return now.UTC().Format("2006-01") }

// applyMonthly folds the month's count (this request included) into a
// rate-admitted decision.
func applyMonthly(d Decision, quota, used int64, now time.Time) Decision {
	untilEnd := monthEnd(now).Sub(now)
	if used > quota {
		return Decision{
			Allowed: false, Reason: ReasonMonthlyQuota, Limit: clampInt(quota), Remaining: 0,
			Reset: untilEnd, RetryAfter: untilEnd, MonthlyLimit: quota, MonthlyRemaining: 0,
		}
	}
	rem := quota - used
	d.MonthlyLimit, d.MonthlyRemaining = quota, rem
	if d.Limit == 0 || rem < int64(d.Remaining) {
		d.Limit, d.Remaining, d.Reset = clampInt(quota), int(rem), untilEnd
	}
	return d
}

func clampInt(n int64) int { return int(min(n, math.MaxInt32)) }
