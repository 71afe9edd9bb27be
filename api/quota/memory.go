package quota

import (
	"context"
	"sync"
	"time"

	"github.com/permitd/permitd/api/apikey"
)

// Memory is the in-process limiter: GCRA with the same semantics as the
// Redis limiter (same emission interval, burst, Remaining, RetryAfter and
// Reset) and a monthly counter that resets at the start of each calendar
// month, UTC. It is exact within one process; each replica keeps its own
// state. State is kept per key id for the life of the process (bounded by
// the number of issued keys).
type Memory struct {
	now     func() time.Time
	metrics *Metrics
	store   string // metrics label

	mu   sync.Mutex
	keys map[string]*memKey
}

type memKey struct {
	tat   time.Time
	month string
	used  int64
}

// NewMemory returns an in-process limiter; now nil is time.Now, metrics
// may be nil.
func NewMemory(now func() time.Time, metrics *Metrics) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, metrics: metrics, store: "memory", keys: map[string]*memKey{}}
}

// Allow implements Limiter; it never fails.
func (m *Memory) Allow(_ context.Context, p apikey.Principal) (Decision, error) {
	d, _ := m.allow(p, m.now)
	m.metrics.decided(m.store, d)
	return d, nil
}

// allow reads the clock under the lock: a time read before it could be
// older than the state another caller has just written, which would make
// RetryAfter longer than one emission interval. It returns the time it
// decided at.
func (m *Memory) allow(p apikey.Principal, clock func() time.Time) (Decision, time.Time) {
	lim, limited := rateLimit(p.Plan)
	if !limited && p.Plan.MonthlyQuota <= 0 {
		return Decision{Allowed: true}, clock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := clock()
	k := m.keys[p.KeyID]
	if k == nil {
		k = &memKey{}
		m.keys[p.KeyID] = k
	}
	d := Decision{Allowed: true, RetryAfter: -1}
	if limited {
		k.tat, d = gcra(k.tat, now, lim)
		if !d.Allowed {
			return d, now
		}
	}
	if q := p.Plan.MonthlyQuota; q > 0 {
		if mk := monthKey(now); k.month != mk {
			k.month, k.used = mk, 0
		}
		k.used++
		d = applyMonthly(d, q, k.used, now)
	}
	return d, now
}

// observeMonthly records the shared count of a key's month, so that a
// fallback starts from what the fleet had used rather than from zero.
func (m *Memory) observeMonthly(keyID, month string, used int64) {
	m.mu.Lock()
	k := m.keys[keyID]
	if k == nil {
		k = &memKey{}
		m.keys[keyID] = k
	}
	if k.month != month || used > k.used {
		k.month, k.used = month, used
	}
	m.mu.Unlock()
}
