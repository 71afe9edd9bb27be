// Package quota decides whether a caller may make one more request: a
// per-key rate limit (GCRA) and a monthly quota.
package quota

import (
	"context"
	"time"

	"github.com/permitd/permitd/api/apikey"
)

// Decision is the outcome of one admission check. The API turns it into
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers on every
// response, and Retry-After on a 429.
type Decision struct {
	Allowed    bool
	Limit      int           // requests admitted per window (the burst)
	Remaining  int           // requests still admitted right now
	Reset      time.Duration // until the limiter is back to full
	RetryAfter time.Duration // when denied: until one request is admitted
	// Reason names the limit that denied: "rate" or "monthly_quota".
	Reason string

	// MonthlyLimit is the plan's monthly quota (0: none) and
	// MonthlyRemaining what is left of it this month (UTC). When the
	// monthly quota is closer to exhaustion than the rate limit, Limit,
	// Remaining and Reset describe the monthly quota instead (the
	// RateLimit header convention: report the policy nearest to denying).
	MonthlyLimit     int64
	MonthlyRemaining int64

	// Fallback is set when the in-process limiter decided because the
	// shared store (Redis) was unreachable.
	Fallback bool
}

// Reasons a request is denied.
const (
	ReasonRate         = "rate"
	ReasonMonthlyQuota = "monthly_quota"
)

// Limiter admits or denies one request of an authenticated principal.
type Limiter interface {
	// Allow counts one request of p against p.Plan's rate limit and, when
	// the rate admits it, against the monthly quota (so a request denied
	// for rate does not use quota; one denied for quota has used a rate
	// slot). A plan with RatePerSecond <= 0 has no rate limit and one with
	// MonthlyQuota 0 no quota; with neither, the Decision has Limit 0 and
	// the API sets no RateLimit headers. An error means no decision could
	// be made; the limiters here apply their own fallback first.
	Allow(ctx context.Context, p apikey.Principal) (Decision, error)
}

// Unlimited admits everything; for tests and trusted deployments.
type Unlimited struct{}

// Allow implements Limiter.
func (Unlimited) Allow(context.Context, apikey.Principal) (Decision, error) {
	return Decision{Allowed: true, Limit: 0, Remaining: 0}, nil
}
