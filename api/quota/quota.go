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
}

// Limiter admits or denies one request of an authenticated principal.
type Limiter interface {
	Allow(ctx context.Context, p apikey.Principal) (Decision, error)
}

// Unlimited admits everything; for tests and trusted deployments.
type Unlimited struct{}

// Allow implements Limiter.
func (Unlimited) Allow(context.Context, apikey.Principal) (Decision, error) {
	return Decision{Allowed: true, Limit: 0, Remaining: 0}, nil
}
