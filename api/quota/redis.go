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
	// Breaker guards every call to Redis; share it with the key store
	// (cmd/permitd does). nil: the limiter makes its own, which opens on
	// the first failure and probes with MinBackoff..MaxBackoff; its Run
	// is then the limiter's Run.
	Breaker *Breaker
	// MinBackoff and MaxBackoff bound the probe's delays while Redis is
	// unreachable, for a limiter's own Breaker; defaults 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
}

// Redis limits every replica against one shared state in Redis: GCRA
// through redis_rate (one Lua script, atomic, on Redis's clock) and a
// monthly counter per key (INCR on <prefix>month:<key id>:<YYYY-MM>, which
// expires at the end of that month, UTC).
//
// Fallback policy: every check goes through the Breaker. A check that
// fails (the caller's context aside) is decided in process; once the
// circuit opens the limiter logs once, sets permitd_quota_fallback_active
// to 1 and decides every request in process with a Memory limiter: the rate limit then holds per replica (N replicas admit up to N
// times the plan's rate) and the monthly quota holds against the last
// count this replica saw in Redis plus what it admitted since. Requests
// are never refused because Redis is down, and while degraded no request
// waits on Redis. The breaker's prober PINGs Redis under exponential
// backoff with jitter; when Redis answers, the monthly counts admitted in
// process are added to Redis (INCRBY) before the circuit closes, the
// gauge returns to 0, a line is logged and checks go to Redis again. The
// breaker's Run must be running for recovery. Admissions decided in
// process while the circuit was still closed (a failed check before the
// circuit opened, or one that raced the close) are added at the next
// recovery.
type Redis struct {
	p   RedisParams
	b   *Breaker
	own bool // b is the limiter's own: Run runs it
	rl  *redis_rate.Limiter
	mem *Memory
	log *slog.Logger

	since atomic.Int64 // unix nanos the outage began

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
	mem := NewMemory(p.Now, p.Metrics)
	mem.store = "fallback"
	r := &Redis{
		p: p, b: p.Breaker, rl: redis_rate.NewLimiter(piggyback{p.Client}), mem: mem, log: p.Logger,
		pending: map[pendingKey]int64{},
	}
	if r.b == nil {
		b, err := NewBreaker(BreakerParams{
			Probe:    func(ctx context.Context) error { return p.Client.Ping(ctx).Err() },
			Failures: 1, MinBackoff: p.MinBackoff, MaxBackoff: p.MaxBackoff, Logger: p.Logger, Metrics: p.Metrics,
		})
		if err != nil {
			return nil, err
		}
		r.b, r.own = b, true
	}
	r.b.BeforeClose(r.flush)
	r.b.OnChange(r.changed)
	return r, nil
}

// Degraded reports whether the limiter is on its in-process fallback.
func (r *Redis) Degraded() bool { return r.b.Open() }

// Allow implements Limiter. It returns an error only when ctx ended
// before Redis answered.
func (r *Redis) Allow(ctx context.Context, p apikey.Principal) (Decision, error) {
	var d Decision
	err := r.b.Do(ctx, func(ctx context.Context) error {
		var err error
		d, err = r.allowRedis(ctx, p)
		return err
	})
	if err == nil {
		r.p.Metrics.decided("redis", d)
		return d, nil
	}
	if ctx.Err() != nil {
		return Decision{}, err
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
	d, now := r.mem.allow(p, r.p.Now)
	d.Fallback = true
	r.p.Metrics.decided("fallback", d)
	if d.Allowed && p.Plan.MonthlyQuota > 0 {
		r.mu.Lock()
		r.pending[pendingKey{p.KeyID, monthKey(now)}]++
		r.mu.Unlock()
	}
	return d
}

// changed follows the breaker (under its lock: no Redis call here).
func (r *Redis) changed(open bool) {
	r.p.Metrics.setFallback(open)
	if open {
		r.since.Store(time.Now().UnixNano())
		r.log.Warn("quota: Redis unreachable; limiting in process on this replica until it returns",
			"policy", "per-replica GCRA and monthly quota; counts reconciled on recovery")
		return
	}
	r.log.Info("quota: Redis reachable again; limits are shared across replicas again",
		"outage", time.Duration(time.Now().UnixNano()-r.since.Load()).Round(time.Millisecond))
}

// Run runs the limiter's own breaker's prober (see RedisParams.Breaker);
// with a shared breaker it only waits. It returns nil when ctx ends.
func (r *Redis) Run(ctx context.Context) error {
	if r.own {
		return r.b.Run(ctx)
	}
	<-ctx.Done()
	return nil
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
