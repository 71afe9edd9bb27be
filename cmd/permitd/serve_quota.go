package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota"
)

// quotaConfig is the keys-and-quotas part of a command's configuration,
// shared by serve and keys so that both find the same store.
//
// Embedded default (no Redis URL): issued keys in a JSON file of hashes,
// limits in process. Distributed (-redis-url): issued keys and limits in
// Redis, shared by every replica.
type quotaConfig struct {
	KeysFile     string
	RedisURL     string
	RedisTimeout time.Duration
	KeyCacheTTL  time.Duration

	// instrument, when set by the command, adds hooks (metrics, tracing)
	// to the Redis client.
	instrument func(*redis.Client) error
}

func (c *quotaConfig) bind(fs *flagSet) {
	fs.StringVar(&c.KeysFile, "keys-file", "permitd-keys.json", "issued API keys (hashes only) for the embedded mode; see `permitd keys`")
	fs.StringVar(&c.RedisURL, "redis-url", "", "redis://[:password@]host:port[/db]: keys and rate limits shared by every replica; empty: keys file and in-process limits")
	fs.DurationVar(&c.RedisTimeout, "redis-timeout", 100*time.Millisecond, "bound on each key lookup and quota check in Redis (dial included, no retry); past it a request falls back to the in-process limiter, and 3 failures in a row open the circuit")
	fs.DurationVar(&c.KeyCacheTTL, "key-cache-ttl", 30*time.Second, "how long a replica trusts a looked-up key before asking Redis again (revocation delay)")
}

func (c *quotaConfig) validate() error {
	var errs []error
	if c.RedisURL == "" && c.KeysFile == "" {
		errs = append(errs, errors.New("keys-file: required without redis-url"))
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			errs = append(errs, fmt.Errorf("redis-url: %w", redactErr(err, c.RedisURL)))
		}
	}
	if c.RedisTimeout <= 0 {
		errs = append(errs, errors.New("redis-timeout must be positive"))
	}
	if c.KeyCacheTTL <= 0 {
		errs = append(errs, errors.New("key-cache-ttl must be positive"))
	}
	return errors.Join(errs...)
}

// logValue lists the configuration with the Redis password masked.
func (c *quotaConfig) logValue() []any {
	mode := "embedded"
	if c.RedisURL != "" {
		mode = "redis"
	}
	return []any{"quota_mode", mode, "keys_file", c.KeysFile, "redis_url", redactURL(c.RedisURL),
		"redis_timeout", c.RedisTimeout, "key_cache_ttl", c.KeyCacheTTL}
}

func redactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return mask(s)
	}
	return u.Redacted()
}

func redactErr(err error, secret string) error {
	if secret == "" {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, redactURL(secret)))
}

// newRedisClient connects per cfg: short timeouts and no retries, because
// a failed check falls back to the in-process limiter instead of waiting.
// go-redis retries a failed dial 5 times, 100ms apart, unless told
// (DialerRetries): one attempt, bounded by the timeout.
func newRedisClient(cfg quotaConfig) (*redis.Client, error) {
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("redis-url: %w", redactErr(err, cfg.RedisURL))
	}
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.DialTimeout = cfg.RedisTimeout
	opts.ReadTimeout = cfg.RedisTimeout
	opts.WriteTimeout = cfg.RedisTimeout
	opts.PoolTimeout = cfg.RedisTimeout
	return redis.NewClient(opts), nil
}

// openKeyStore returns the store of issued keys per cfg, and the Redis
// client behind it in the distributed mode (nil otherwise).
func openKeyStore(cfg quotaConfig) (apikey.Store, *redis.Client, error) {
	if cfg.RedisURL == "" {
		s, err := apikey.OpenFileStore(cfg.KeysFile)
		return s, nil, err
	}
	rdb, err := newRedisClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	return apikey.NewRedisStore(rdb, ""), rdb, nil
}

// quotaParts is what serve wires from a quotaConfig.
type quotaParts struct {
	// Check reports the quota store in /v1/health/ready. It is always OK:
	// while Redis is away the documented fallback keeps serving, and the
	// check says so ("fallback": true).
	Check api.ReadinessCheck
	// Auth accepts the development keys (PERMITD_API_KEYS, any string, on
	// the development plan) and issued pmk_ keys from the store.
	Auth apikey.Authenticator
	// Limiter enforces each key's plan.
	Limiter quota.Limiter
	// Run is long-running (the Redis breaker's prober; returns at once in
	// the embedded mode): join it in serve's errgroup. It returns nil when ctx
	// ends.
	Run func(ctx context.Context) error
	// Close releases the Redis client; call it once the HTTP server has
	// shut down.
	Close func() error
}

// buildQuota builds the Authenticator and the Limiter from cfg (which
// must have passed validate). devKeys are PERMITD_API_KEYS; metrics go to
// reg. Redis being unreachable at start is not an error: the limiter
// starts on its in-process fallback and recovers by itself (see
// quota.Redis); keys issued in Redis cannot be checked until it answers.
func buildQuota(ctx context.Context, cfg quotaConfig, devKeys []string, log *slog.Logger, reg prometheus.Registerer) (quotaParts, error) {
	metrics := quota.NewMetrics(reg)
	store, rdb, err := openKeyStore(cfg)
	if err != nil {
		return quotaParts{}, err
	}
	var auths []apikey.Authenticator
	if len(devKeys) > 0 {
		auths = append(auths, apikey.NewDevKeys(devKeys, apikey.DefaultDevPlan))
	}
	if rdb != nil && cfg.instrument != nil {
		if err := cfg.instrument(rdb); err != nil {
			rdb.Close()
			return quotaParts{}, err
		}
	}
	if rdb == nil {
		return quotaParts{
			Auth:    apikey.Chain(append(auths, apikey.NewKeys(store))...),
			Limiter: quota.NewMemory(nil, metrics),
			Run:     func(context.Context) error { return nil },
			Close:   func() error { return nil },
			Check: func(context.Context) api.Check {
				return api.Check{Name: "quota", OK: true, Detail: map[string]any{"store": "memory", "keys_file": cfg.KeysFile}}
			},
		}, nil
	}
	// One breaker for one Redis: the key store and the limiter open and
	// close together.
	brk, err := quota.NewBreaker(quota.BreakerParams{
		Probe:   func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		Timeout: cfg.RedisTimeout, Logger: log, Metrics: metrics,
		// A PING a second is nothing; a replica back within a second of
		// Redis is what the issued keys it cannot check need.
		MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
	})
	if err != nil {
		rdb.Close()
		return quotaParts{}, err
	}
	lim, err := quota.NewRedis(quota.RedisParams{Client: rdb, Logger: log, Metrics: metrics, Breaker: brk})
	if err != nil {
		rdb.Close()
		return quotaParts{}, err
	}
	cache := apikey.NewCache(apikey.CacheParams{Store: apikey.Guarded(store, brk), TTL: cfg.KeyCacheTTL})
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		log.Warn("quota: Redis not reachable at start; limiting in process until it is", "err", err)
	}
	return quotaParts{
		Auth:    apikey.Chain(append(auths, apikey.NewKeys(cache))...),
		Limiter: lim,
		Run:     brk.Run,
		Close:   rdb.Close,
		Check: func(context.Context) api.Check {
			return api.Check{Name: "quota", OK: true, Detail: map[string]any{
				"store": "redis", "fallback": lim.Degraded(), "breaker_open": brk.Open(), "stale_keys_served": cache.StaleServed(),
			}}
		},
	}, nil
}
