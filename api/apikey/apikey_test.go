package apikey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api/quota/redistest"
)

func TestNewKeyParses(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		key, id := NewKey()
		require.Len(t, key, KeyLen)
		require.True(t, strings.HasPrefix(key, "pmk_"+id+"_"), key)
		got, err := ParseKey(key)
		require.NoError(t, err)
		require.Equal(t, id, got)
		require.False(t, seen[id], "id repeated")
		seen[id] = true
	}
	_, err := ParseKey(NewDevKey())
	require.NoError(t, err, "NewDevKey makes a pmk_ key")
}

func TestParseKeyRejectsEverySingleCharacterTypo(t *testing.T) {
	key, _ := NewKey()
	alphabet := "abcdefghijklmnopqrstuvwxyz234567ABCZ019_-"
	n := 0
	for i := range len(key) {
		for _, c := range alphabet {
			if byte(c) == key[i] {
				continue
			}
			typo := key[:i] + string(c) + key[i+1:]
			_, err := ParseKey(typo)
			require.ErrorIs(t, err, ErrMalformedKey, "typo at %d accepted", i)
			require.ErrorIs(t, err, ErrInvalidKey)
			n++
		}
	}
	require.Greater(t, n, 2000)
}

func TestParseKeyRejectsMalformed(t *testing.T) {
	key, _ := NewKey()
	for name, k := range map[string]string{
		"empty":        "",
		"truncated":    key[:len(key)-1],
		"extended":     key + "a",
		"other prefix": "pdk" + key[3:],
		"upper case":   strings.ToUpper(key),
		"swapped":      swapAdjacent(key),
		"spaces":       " " + key[1:],
		"dev style":    "pdk_dev_0123456789abcdef0123456789abcdef01234567",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKey(k)
			require.ErrorIs(t, err, ErrMalformedKey)
		})
	}
}

// swapAdjacent transposes the first two different adjacent characters
// after the prefix.
func swapAdjacent(key string) string {
	b := []byte(key)
	for i := len(KeyPrefix); i+1 < len(b); i++ {
		if b[i] != b[i+1] && b[i] != '_' && b[i+1] != '_' {
			b[i], b[i+1] = b[i+1], b[i]
			return string(b)
		}
	}
	panic("no two different adjacent characters")
}

// countingStore counts lookups, so tests can assert that a malformed key
// never reaches the store.
type countingStore struct {
	Store
	lookups atomic.Int64
	fail    error
}

func (c *countingStore) Lookup(ctx context.Context, id string) (Record, error) {
	c.lookups.Add(1)
	if c.fail != nil {
		return Record{}, c.fail
	}
	return c.Store.Lookup(ctx, id)
}

func TestKeysAuthenticate(t *testing.T) {
	ctx := context.Background()
	fs, err := OpenFileStore(filepath.Join(t.TempDir(), "keys.json"))
	require.NoError(t, err)
	store := &countingStore{Store: fs}
	good, rec, err := Issue(ctx, store, "standard", time.Now())
	require.NoError(t, err)
	auth := NewKeys(store)

	// A key with the right id and a valid checksum but another secret: a
	// forgery that passes the shape check and fails the hash compare.
	forged := func() string {
		other, _ := NewKey()
		body := KeyPrefix + rec.ID + "_" + other[len(KeyPrefix)+idLen+1:len(KeyPrefix)+idLen+1+secretLen]
		return body + "_" + checksum(body)
	}()
	unknown, _ := NewKey()
	typo := []byte(good)
	typo[20] ^= 3 // always another character

	// A record naming a plan this build does not have.
	oddKey, oddID := NewKey()
	require.NoError(t, fs.Create(ctx, Record{ID: oddID, Hash: sha256.Sum256([]byte(oddKey)), Plan: "platinum"}))

	for _, tc := range []struct {
		name        string
		key         string
		wantPlan    string
		wantInvalid bool
		wantLookups int64
	}{
		{name: "valid", key: good, wantPlan: "standard", wantLookups: 1},
		{name: "empty", key: "", wantInvalid: true},
		{name: "typo", key: string(typo), wantInvalid: true},
		{name: "garbage", key: "hunter2", wantInvalid: true},
		{name: "unknown id", key: unknown, wantInvalid: true, wantLookups: 1},
		{name: "forged secret", key: forged, wantInvalid: true, wantLookups: 1},
		{name: "unknown plan", key: oddKey, wantLookups: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store.lookups.Store(0)
			p, err := auth.Authenticate(ctx, tc.key)
			assert.Equal(t, tc.wantLookups, store.lookups.Load(), "store lookups")
			switch {
			case tc.wantPlan != "":
				require.NoError(t, err)
				assert.Equal(t, rec.ID, p.KeyID)
				assert.Equal(t, tc.wantPlan, p.Plan.Name)
				assert.Equal(t, PlanStandard, p.Plan)
			case tc.wantInvalid:
				require.ErrorIs(t, err, ErrInvalidKey)
			default: // unknown plan: a server fault, not the caller's key
				require.ErrorContains(t, err, "unknown plan")
				require.NotErrorIs(t, err, ErrInvalidKey)
				assert.NotContains(t, err.Error(), tc.key)
			}
		})
	}

	t.Run("store down is not an invalid key", func(t *testing.T) {
		store.fail = errors.New("connection refused")
		defer func() { store.fail = nil }()
		_, err := auth.Authenticate(ctx, good)
		require.ErrorIs(t, err, store.fail)
		require.NotErrorIs(t, err, ErrInvalidKey)
		require.NotContains(t, err.Error(), good)
	})
}

func TestChainKeepsDevKeysWorking(t *testing.T) {
	ctx := context.Background()
	fs, err := OpenFileStore(filepath.Join(t.TempDir(), "keys.json"))
	require.NoError(t, err)
	issued, _, err := Issue(ctx, fs, "free", time.Now())
	require.NoError(t, err)
	auth := Chain(NewDevKeys([]string{"local-dev-key", NewDevKey()}, DefaultDevPlan), NewKeys(fs))

	p, err := auth.Authenticate(ctx, "local-dev-key")
	require.NoError(t, err)
	assert.Equal(t, "dev0", p.KeyID)
	assert.Equal(t, DefaultDevPlan, p.Plan)

	p, err = auth.Authenticate(ctx, issued)
	require.NoError(t, err)
	assert.Equal(t, PlanFree, p.Plan)

	_, err = auth.Authenticate(ctx, "local-dev-kez")
	require.ErrorIs(t, err, ErrInvalidKey)
}

// assertNoSecrets fails when data holds a key or its secret part, and
// checks that it holds the key's hash.
func assertNoSecrets(t *testing.T, data string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		secret := k[len(KeyPrefix)+idLen+1 : len(KeyPrefix)+idLen+1+secretLen]
		require.NotContains(t, data, k)
		require.NotContains(t, data, secret)
		h := sha256.Sum256([]byte(k))
		require.Contains(t, data, hex.EncodeToString(h[:]))
	}
}

func TestFileStoreKeepsOnlyHashes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "keys.json")
	fs, err := OpenFileStore(path)
	require.NoError(t, err)
	k1, r1, err := Issue(ctx, fs, "free", time.Now())
	require.NoError(t, err)
	k2, _, err := Issue(ctx, fs, "enterprise", time.Now())
	require.NoError(t, err)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assertNoSecrets(t, string(b), k1, k2)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// Another process's store (serve) sees the key; a revocation reaches it.
	other, err := OpenFileStore(path)
	require.NoError(t, err)
	p, err := NewKeys(other).Authenticate(ctx, k1)
	require.NoError(t, err)
	assert.Equal(t, r1.ID, p.KeyID)
	require.NoError(t, fs.Revoke(ctx, r1.ID))
	require.ErrorIs(t, fs.Revoke(ctx, r1.ID), ErrNotFound)
	other.checked.Store(0) // skip the once-a-second wait
	_, err = NewKeys(other).Authenticate(ctx, k1)
	require.ErrorIs(t, err, ErrInvalidKey)

	list, err := other.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "enterprise", list[0].Plan)
}

func TestRedisStoreKeepsOnlyHashes(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	store := NewRedisStore(rdb, "")
	k1, r1, err := Issue(ctx, store, "standard", time.Now())
	require.NoError(t, err)
	k2, _, err := Issue(ctx, store, "free", time.Now())
	require.NoError(t, err)
	require.ErrorIs(t, store.Create(ctx, r1), ErrExists)

	var dump strings.Builder
	names, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, names, 2)
	for _, n := range names {
		v, err := rdb.Get(ctx, n).Result()
		require.NoError(t, err)
		dump.WriteString(n + "=" + v + "\n")
	}
	assertNoSecrets(t, dump.String(), k1, k2)

	p, err := NewKeys(store).Authenticate(ctx, k1)
	require.NoError(t, err)
	assert.Equal(t, r1.ID, p.KeyID)
	list, err := store.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.NoError(t, store.Revoke(ctx, r1.ID))
	_, err = NewKeys(store).Authenticate(ctx, k1)
	require.ErrorIs(t, err, ErrInvalidKey)
}

func TestCacheServesStaleWhileStoreIsDown(t *testing.T) {
	ctx := context.Background()
	fs, err := OpenFileStore(filepath.Join(t.TempDir(), "keys.json"))
	require.NoError(t, err)
	inner := &countingStore{Store: fs}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cache := NewCache(CacheParams{Store: inner, TTL: time.Minute, MaxStale: time.Hour, Now: func() time.Time { return now }})
	auth := NewKeys(cache)
	key, _, err := Issue(ctx, cache, "free", now)
	require.NoError(t, err)
	never, _, err := Issue(ctx, cache, "free", now)
	require.NoError(t, err)

	_, err = auth.Authenticate(ctx, key)
	require.NoError(t, err)
	_, err = auth.Authenticate(ctx, key)
	require.NoError(t, err)
	require.EqualValues(t, 1, inner.lookups.Load(), "second lookup served from cache")

	inner.fail = errors.New("dial tcp: connection refused")
	now = now.Add(2 * time.Minute)
	_, err = auth.Authenticate(ctx, key)
	require.NoError(t, err, "a key seen before keeps working during the outage")
	require.EqualValues(t, 1, cache.StaleServed())
	_, err = auth.Authenticate(ctx, never)
	require.ErrorIs(t, err, inner.fail, "a key never seen cannot be checked")
	require.NotErrorIs(t, err, ErrInvalidKey)

	now = now.Add(2 * time.Hour)
	_, err = auth.Authenticate(ctx, key)
	require.ErrorIs(t, err, inner.fail, "past MaxStale the outage shows")

	inner.fail = nil
	require.NoError(t, cache.Revoke(ctx, mustParse(t, key)))
	_, err = auth.Authenticate(ctx, key)
	require.ErrorIs(t, err, ErrInvalidKey)
}

func mustParse(t *testing.T, key string) string {
	t.Helper()
	id, err := ParseKey(key)
	require.NoError(t, err)
	return id
}

func TestIssueUnknownPlan(t *testing.T) {
	fs, err := OpenFileStore(filepath.Join(t.TempDir(), "keys.json"))
	require.NoError(t, err)
	_, _, err = Issue(context.Background(), fs, "platinum", time.Now())
	require.ErrorContains(t, err, "unknown plan")
}
