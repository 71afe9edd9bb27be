package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota"
	"github.com/permitd/permitd/api/quota/redistest"
)

func runCmd(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	return out.String(), errb.String(), err
}

// createKey runs `keys create` and checks the key is printed once, alone.
func createKey(t *testing.T, env map[string]string, plan string) string {
	t.Helper()
	out, errOut, err := runCmd(t, env, "keys", "create", "--plan", plan)
	require.NoError(t, err, errOut)
	key := strings.TrimSpace(out)
	_, err = apikey.ParseKey(key)
	require.NoError(t, err, "stdout is the key alone: %q", out)
	assert.NotContains(t, errOut, key)
	return key
}

func hashOf(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

func TestKeysCreateFileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	env := map[string]string{"PERMITD_KEYS_FILE": path}
	key := createKey(t, env, "standard")

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(b), key)
	assert.NotContains(t, string(b), strings.Split(key, "_")[2], "the secret")
	assert.Contains(t, string(b), hashOf(key))

	cfg := quotaConfig{KeysFile: path, RedisTimeout: 100e6, KeyCacheTTL: 1e9}
	require.NoError(t, cfg.validate())
	parts, err := buildQuota(context.Background(), cfg, []string{"plain-dev-key"}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	defer parts.Close()
	require.IsType(t, &quota.Memory{}, parts.Limiter)
	p, err := parts.Auth.Authenticate(context.Background(), key)
	require.NoError(t, err)
	assert.Equal(t, apikey.PlanStandard, p.Plan)
	p, err = parts.Auth.Authenticate(context.Background(), "plain-dev-key")
	require.NoError(t, err, "PERMITD_API_KEYS keep working")
	assert.Equal(t, apikey.DefaultDevPlan, p.Plan)

	out, errOut, err := runCmd(t, env, "keys", "list")
	require.NoError(t, err)
	assert.NotContains(t, errOut, "no keys file")
	id, _ := apikey.ParseKey(key)
	assert.Contains(t, out, id)
	assert.NotContains(t, out, key)
	_, _, err = runCmd(t, env, "keys", "revoke", "--id", id)
	require.NoError(t, err)
	_, _, err = runCmd(t, env, "keys", "revoke", "--id", id)
	require.ErrorIs(t, err, apikey.ErrNotFound)

	_, _, err = runCmd(t, env, "keys", "create", "--plan", "platinum")
	require.ErrorContains(t, err, "unknown plan")

	// A keys file that is not there (a path typed wrong) lists no key, and
	// says why.
	missing := filepath.Join(t.TempDir(), "keys-typo.json")
	out, errOut, err = runCmd(t, map[string]string{"PERMITD_KEYS_FILE": missing}, "keys", "list")
	require.NoError(t, err)
	assert.Equal(t, "ID  PLAN  CREATED\n", out)
	assert.Equal(t, "no keys file at "+missing+": no key was issued there (keys create writes it)\n", errOut)
}

func TestKeysCreateRedisStore(t *testing.T) {
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr + "/0"
	env := map[string]string{"PERMITD_REDIS_URL": url}
	key := createKey(t, env, "free")

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	ctx := context.Background()
	names, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, names, 1)
	v, err := rdb.Get(ctx, names[0]).Result()
	require.NoError(t, err)
	assert.NotContains(t, names[0]+v, key)
	assert.NotContains(t, names[0]+v, strings.Split(key, "_")[2])
	assert.Contains(t, v, hashOf(key))

	cfg := quotaConfig{RedisURL: url, RedisTimeout: 100e6, KeyCacheTTL: 1e9}
	require.NoError(t, cfg.validate())
	parts, err := buildQuota(ctx, cfg, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	defer parts.Close()
	require.IsType(t, &quota.Redis{}, parts.Limiter)
	p, err := parts.Auth.Authenticate(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, apikey.PlanFree, p.Plan)
	d, err := parts.Limiter.Allow(ctx, p)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.False(t, d.Fallback)
	assert.Equal(t, apikey.PlanFree.Burst, d.Limit)
}

func TestQuotaConfigValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg     quotaConfig
		wantErr string
	}{
		"embedded":      {cfg: quotaConfig{KeysFile: "k.json", RedisTimeout: 1, KeyCacheTTL: 1}},
		"redis":         {cfg: quotaConfig{RedisURL: "redis://:pw@localhost:6379/0", RedisTimeout: 1, KeyCacheTTL: 1}},
		"no store":      {cfg: quotaConfig{RedisTimeout: 1, KeyCacheTTL: 1}, wantErr: "keys-file"},
		"bad url":       {cfg: quotaConfig{RedisURL: "http://secretpw@x", RedisTimeout: 1, KeyCacheTTL: 1}, wantErr: "redis-url"},
		"no timeout":    {cfg: quotaConfig{KeysFile: "k.json", KeyCacheTTL: 1}, wantErr: "redis-timeout"},
		"no cache time": {cfg: quotaConfig{KeysFile: "k.json", RedisTimeout: 1}, wantErr: "key-cache-ttl"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			assert.NotContains(t, err.Error(), "secretpw")
		})
	}
	cfg := quotaConfig{RedisURL: "redis://:hunter2@localhost:6379/0"}
	assert.NotContains(t, fmt.Sprint(cfg.logValue()...), "hunter2")
}
