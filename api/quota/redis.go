package quota

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/permitd/permitd/api/apikey"
)

// RedisParams configures a Redis limiter.
type RedisParams struct {
	// Client is required. Give it short timeouts (see cmd/permitd): a slow
	// Redis delays every request until the client gives up.
	Client redis.UniversalClient
	// Prefix namespaces the monthly counters; "" is "permitd:". The rate
	// state lives under redis_rate's own "rate:" + Prefix + key id.
	Prefix string
	// Logger; nil discards.
	Logger *slog.Logger
	// Metrics; nil records nothing.
	Metrics *Metrics
	// Now is the clock for month boundaries (GCRA uses Redis's TIME so
	// every replica shares one clock); nil is time.Now.
	Now func() time.Time
	// MinBackoff and MaxBackoff bound the health probe's delays while
	// Redis is unreachable; defaults 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
}

// Redis limits every replica against one shared state in Redis: GCRA
// through redis_rate (one Lua script, atomic, on Redis's clock) and a
// monthly counter per key (INCR on <prefix>month:<key id>:<YYYY-MM>, which
// expires at the end of that month, UTC).
//
// Fallback policy: when a check against Redis fails (the caller's
// context aside), the limiter logs once, sets
// permitd_quota_fallback_active to 1 and decides in process with a Memory
// limiter: the rate limit then holds per replica (N replicas admit up to N
// times the plan's rate) and the monthly quota holds against the last
// count this replica saw in Redis plus what it admitted since. Requests
// are never refused because Redis is down, and while degraded no request
// waits on Redis. Run probes Redis with PING under exponential backoff
// with jitter; when Redis answers, the monthly counts admitted during the
// outage are added to Redis (INCRBY), the gauge returns to 0, a line is
// logged and checks go to Redis again. Run must be running for recovery.
type Redis struct {
	p    RedisParams
	rl   *redis_rate.Limiter
	mem  *Memory
	log  *slog.Logger
	wake chan struct{}

	degraded atomic.Bool
	since    atomic.Int64 // unix nanos the outage began

	mu      sync.Mutex
	pending map[pendingKey]int64 // monthly admissions during the outage
}

type pendingKey struct{ keyID, month string }

// NewRedis returns the Redis limiter.
func NewRedis(p RedisParams) (*Redis, error) {
	if p.Client == nil {
		return nil, errors.New("quota: RedisParams.Client is required")
	}
	if p.Prefix == "" {
		p.Prefix = apikey.DefaultRedisPrefix
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = 100 * time.Millisecond
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = max(5*time.Second, p.MinBackoff)
	}
	mem := NewMemory(p.Now, p.Metrics)
	mem.store = "fallback"
	return &Redis{
		p: p, rl: redis_rate.NewLimiter(piggyback{p.Client}), mem: mem, log: p.Logger,
		wake: make(chan struct{}, 1), pending: map[pendingKey]int64{},
	}, nil
}

// Degraded reports whether the limiter is on its in-process fallback.
func (r *Redis) Degraded() bool { return r.degraded.Load() }

// Allow implements Limiter. It returns an error only when ctx ended
// before Redis answered.
func (r *Redis) Allow(ctx context.Context, p apikey.Principal) (Decision, error) {
	if !r.degraded.Load() {
		d, err := r.allowRedis(ctx, p)
		if err == nil {
			r.p.Metrics.decided("redis", d)
			return d, nil
		}
		if ctx.Err() != nil {
			return Decision{}, err
		}
		r.markDown(err)
	}
	return r.allowFallback(p), nil
}

// allowRedis checks the rate limit (redis_rate's GCRA script) and counts
// the monthly quota in ONE round trip: redis_rate runs its script through
// piggyback, which sends the monthly INCR/EXPIREAT in the same pipeline.
// The monthly counter is incremented optimistically and given back when
// the rate limit denies. Neither limit can over-admit; while a
// rate-denied request's increment is outstanding, a concurrent request at
// the very end of its monthly quota may be denied a moment early.
func (r *Redis) allowRedis(ctx context.Context, p apikey.Principal) (Decision, error) {
	lim, limited := rateLimit(p.Plan)
	quota := p.Plan.MonthlyQuota
	if !limited && quota <= 0 {
		return Decision{Allowed: true}, nil
	}
	now := r.p.Now()
	month := monthKey(now)
	if !limited {
		used, err := r.incrMonthly(ctx, p.KeyID, month, now)
		if err != nil {
			return Decision{}, err
		}
		r.mem.observeMonthly(p.KeyID, month, used)
		return applyMonthly(Decision{Allowed: true, RetryAfter: -1}, quota, used, now), nil
	}
	var m *monthlyCount
	if quota > 0 {
		m = &monthlyCount{key: r.monthlyKey(p.KeyID, month), expireAt: monthEnd(now)}
		ctx = context.WithValue(ctx, monthlyCountKey{}, m)
	}
	res, rerr := r.rl.Allow(ctx, r.p.Prefix+p.KeyID, lim)
	counted := m != nil && m.incr != nil && m.incr.Err() == nil
	if rerr != nil {
		if counted {
			r.giveBack(ctx, p.KeyID, month)
		}
		return Decision{}, rerr
	}
	if m != nil && !counted {
		// The script ran but the count did not (or the pipeline was not
		// used): count on its own rather than admit uncounted.
		used, err := r.incrMonthly(ctx, p.KeyID, month, now)
		if err != nil {
			return Decision{}, err
		}
		m.incr = redis.NewIntResult(used, nil)
	}
	d := Decision{Allowed: res.Allowed > 0, Limit: lim.Burst, Remaining: res.Remaining, Reset: res.ResetAfter, RetryAfter: res.RetryAfter}
	if !d.Allowed {
		d.Reason = ReasonRate
		if m != nil {
			r.giveBack(ctx, p.KeyID, month)
		}
		return d, nil
	}
	if m != nil {
		used := m.incr.Val()
		r.mem.observeMonthly(p.KeyID, month, used)
		d = applyMonthly(d, quota, used, now)
	}
	return d, nil
}

// monthlyCount asks piggyback to count one request against a month.
type monthlyCount struct {
	key      string
	expireAt time.Time
	incr     *redis.IntCmd // set once sent
}

type monthlyCountKey struct{}

// piggyback is the client redis_rate runs its GCRA script through. When
// the context carries a monthlyCount not yet sent, the script's EVALSHA
// and the month's INCR and EXPIREAT go out in one pipeline: the quota
// check costs one round trip. Every other call passes straight through
// (including redis_rate's EVAL fallback after NOSCRIPT, by which time the
// count has been sent).
type piggyback struct {
	redis.UniversalClient
}

func (pb piggyback) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	m, _ := ctx.Value(monthlyCountKey{}).(*monthlyCount)
	if m == nil || m.incr != nil {
		return pb.UniversalClient.EvalSha(ctx, sha1, keys, args...)
	}
	var cmd *redis.Cmd
	// Per-command errors (NOSCRIPT) stay on their commands; redis_rate
	// reads the script's and allowRedis the counter's.
	_, _ = pb.UniversalClient.Pipelined(ctx, func(pl redis.Pipeliner) error {
		cmd = pl.EvalSha(ctx, sha1, keys, args...)
		m.incr = pl.Incr(ctx, m.key)
		pl.ExpireAt(ctx, m.key, m.expireAt)
		return nil
	})
	return cmd
}

// incrMonthly counts one request against the month's quota and returns
// the month's total so far.
func (r *Redis) incrMonthly(ctx context.Context, keyID, month string, now time.Time) (int64, error) {
	var incr *redis.IntCmd
	_, err := r.p.Client.Pipelined(ctx, func(pl redis.Pipeliner) error {
		k := r.monthlyKey(keyID, month)
		incr = pl.Incr(ctx, k)
		pl.ExpireAt(ctx, k, monthEnd(now))
		return nil
	})
	return incr.Val(), err
}

// giveBack undoes incrMonthly for a request that was not admitted. A
// failure only leaves the month's count one high (never over-admitting),
// so it is counted as a Redis error, not returned.
func (r *Redis) giveBack(ctx context.Context, keyID, month string) {
	if err := r.p.Client.Decr(ctx, r.monthlyKey(keyID, month)).Err(); err != nil {
		r.p.Metrics.redisError()
	}
}

func (r *Redis) monthlyKey(keyID, month string) string {
	return r.p.Prefix + "month:" + keyID + ":" + month
}

func (r *Redis) allowFallback(p apikey.Principal) Decision {
	now := r.p.Now()
	d := r.mem.allow(p, now)
	d.Fallback = true
	r.p.Metrics.decided("fallback", d)
	if d.Allowed && p.Plan.MonthlyQuota > 0 {
		r.mu.Lock()
		r.pending[pendingKey{p.KeyID, monthKey(now)}]++
		r.mu.Unlock()
	}
	return d
}

// markDown switches to the fallback and wakes the prober.
func (r *Redis) markDown(err error) {
	r.p.Metrics.redisError()
	if !r.degraded.CompareAndSwap(false, true) {
		return
	}
	r.since.Store(time.Now().UnixNano())
	r.p.Metrics.setFallback(true)
	r.log.Warn("quota: Redis unreachable; limiting in process on this replica until it returns",
		"err", err, "policy", "per-replica GCRA and monthly quota; counts reconciled on recovery")
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run probes Redis while the limiter is degraded and switches back when
// Redis answers. It returns nil when ctx ends.
func (r *Redis) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		}
		if !r.recover(ctx) {
			return nil
		}
	}
}

// recover probes until Redis answers and the outage's counts are flushed;
// false when ctx ended first.
func (r *Redis) recover(ctx context.Context) bool {
	backoff := r.p.MinBackoff
	t := time.NewTimer(jitter(backoff))
	defer t.Stop()
	attempts := 0
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		attempts++
		err := r.probe(ctx)
		if err == nil {
			err = r.flush(ctx)
		}
		if err == nil {
			r.degraded.Store(false)
			// Admissions that raced the switch; best effort, else they
			// wait for the next recovery.
			_ = r.flush(ctx)
			r.p.Metrics.setFallback(false)
			r.log.Info("quota: Redis reachable again; limits are shared across replicas again",
				"outage", time.Duration(time.Now().UnixNano()-r.since.Load()).Round(time.Millisecond), "probes", attempts)
			return true
		}
		r.log.Debug("quota: Redis still unreachable", "err", err, "next_probe", backoff)
		backoff = min(backoff*2, r.p.MaxBackoff)
		t.Reset(jitter(backoff))
	}
}

func (r *Redis) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return r.p.Client.Ping(ctx).Err()
}

// flush adds the monthly admissions made during the outage to Redis.
func (r *Redis) flush(ctx context.Context) error {
	r.mu.Lock()
	batch := r.pending
	r.pending = map[pendingKey]int64{}
	r.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := r.p.Client.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for k, n := range batch {
			end, _ := time.Parse("2006-01", k.month)
			key := r.monthlyKey(k.keyID, k.month)
			pl.IncrBy(ctx, key, n)
			pl.ExpireAt(ctx, key, monthEnd(end))
		}
		return nil
	})
	if err != nil {
		// Put the batch back. When part of the pipeline was applied, some
		// admissions are counted twice: the quota errs towards denying
		// early rather than admitting past it.
		r.mu.Lock()
		for k, n := range batch {
			r.pending[k] += n
		}
		r.mu.Unlock()
	}
	return err
}

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
