package faults

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota/redistest"
)

// TestRedisFaults puts a Proxy between permitd and Redis and breaks it
// three ways. In each: keys the replica has checked keep being served and
// limited in process (never a 500, never a 503); a key it has never seen
// gets 503 KEY_STORE_UNAVAILABLE with Retry-After, quickly; the breaker
// says so in /metrics; after the fault the unseen key works without a
// restart; and the monthly counter in Redis holds every request admitted,
// the outage's included.
func TestRedisFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(p *Proxy)
		// extra counts a check that Redis applied but whose reply the
		// fault swallowed: counted in Redis and again in process (the
		// quota errs towards denying early).
		extra int
	}{
		{"down", (*Proxy).Down, 0},
		{"slow past the timeout", func(p *Proxy) { p.Slow(400 * time.Millisecond) }, 3},
		{"cut mid-reply", (*Proxy).CutReplies, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			proxy, err := NewProxy(srv.Addr)
			require.NoError(t, err)
			t.Cleanup(proxy.Close)
			ctx := context.Background()
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
			t.Cleanup(func() { rdb.Close() })
			store := apikey.NewRedisStore(rdb, "")
			seen, seenRec, err := apikey.Issue(ctx, store, "enterprise", time.Now())
			require.NoError(t, err)
			unseen, _, err := apikey.Issue(ctx, store, "enterprise", time.Now())
			require.NoError(t, err)

			// A 1ms cache TTL: every request of the seen key asks Redis
			// (through the breaker) and falls back to the stale record.
			svc := startService(t, "-redis-url", "redis://"+proxy.Addr(), "-redis-timeout", "100ms", "-key-cache-ttl", "1ms")
			const path = "/v1/locations/gabc" // authenticated 404: the read model is empty
			admitted := 0
			for range 5 {
				r := svc.get(path, seen)
				require.Equal(t, http.StatusNotFound, r.Status, r.Body)
				admitted++
			}

			tc.break_(proxy)
			statuses := map[int]int{}
			for range 40 {
				r := svc.get(path, seen)
				require.NoError(t, r.Err)
				statuses[r.Status]++
				if r.Status == http.StatusNotFound {
					admitted++
					assert.NotEmpty(t, r.Header.Get("RateLimit-Limit"), "limited in process")
				}
			}
			assert.Equal(t, map[int]int{http.StatusNotFound: 40}, statuses, "a checked key is served through the outage")

			for range 10 {
				r := svc.get(path, unseen)
				require.NoError(t, r.Err)
				require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Body)
				assert.Equal(t, "KEY_STORE_UNAVAILABLE", r.errorCode)
				assert.Equal(t, "2", r.Header.Get("Retry-After"))
				assert.Less(t, r.Took, 2*time.Second, "never a hang")
			}
			assert.Equal(t, 1.0, svc.metric(`permitd_redis_breaker_state{state="open"}`))
			assert.Equal(t, 1.0, svc.metric(`permitd_quota_fallback_active`))
			assert.Greater(t, svc.metric(`permitd_redis_breaker_rejected_total`), 0.0)

			proxy.Heal()
			eventually(t, 15*time.Second, "the unseen key is checked again", func() bool {
				return svc.get(path, unseen).Status == http.StatusNotFound
			})
			assert.Equal(t, 1.0, svc.metric(`permitd_redis_breaker_state{state="closed"}`))
			r := svc.get(path, seen)
			require.Equal(t, http.StatusNotFound, r.Status)
			admitted++

			month := time.Now().UTC().Format("2006-01")
			n, err := rdb.Get(ctx, "permitd:month:"+seenRec.ID+":"+month).Int()
			require.NoError(t, err)
			assert.GreaterOrEqual(t, n, admitted, "no admission is lost from the monthly count")
			assert.LessOrEqual(t, n, admitted+tc.extra)
			assert.NotContains(t, svc.Logs.String(), seen, "keys never reach the logs")
		})
	}
}
