package apikey

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// CacheParams configures a Cache.
type CacheParams struct {
	Store Store
	// TTL is how long a found record is served without asking the store
	// again: a revocation reaches this replica within TTL. Default 30s.
	TTL time.Duration
	// MaxStale is how long a record may still be served when the store
	// cannot answer (an outage). Default 24h; negative disables.
	MaxStale time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Cache keeps found records in process in front of a Store, so that a
// request costs no store round trip and keys already seen keep working
// while the store is unreachable. Unknown ids are not cached.
type Cache struct {
	p     CacheParams
	mu    sync.RWMutex
	m     map[string]cacheEntry
	stale atomic.Uint64
}

type cacheEntry struct {
	rec     Record
	fetched time.Time
}

// NewCache returns a cache over p.Store.
func NewCache(p CacheParams) *Cache {
	if p.TTL <= 0 {
		p.TTL = 30 * time.Second
	}
	if p.MaxStale == 0 {
		p.MaxStale = 24 * time.Hour
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return &Cache{p: p, m: map[string]cacheEntry{}}
}

// StaleServed counts lookups answered from an expired entry because the
// store failed.
func (c *Cache) StaleServed() uint64 { return c.stale.Load() }

// Lookup implements Store: a fresh entry, else the store, else (store
// failing) an entry younger than MaxStale, else the store's error.
func (c *Cache) Lookup(ctx context.Context, id string) (Record, error) {
	now := c.p.Now()
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	if ok && now.Sub(e.fetched) < c.p.TTL {
		return e.rec, nil
	}
	r, err := c.p.Store.Lookup(ctx, id)
	switch {
	case err == nil:
		c.mu.Lock()
		c.m[id] = cacheEntry{rec: r, fetched: now}
		c.mu.Unlock()
		return r, nil
	case errors.Is(err, ErrNotFound):
		c.forget(id)
		return Record{}, err
	case ok && c.p.MaxStale > 0 && now.Sub(e.fetched) < c.p.MaxStale && ctx.Err() == nil:
		c.stale.Add(1)
		return e.rec, nil
	default:
		return Record{}, err
	}
}

func (c *Cache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// Create implements Store.
func (c *Cache) Create(ctx context.Context, r Record) error { return c.p.Store.Create(ctx, r) }

// Revoke implements Store; this replica forgets the record at once.
func (c *Cache) Revoke(ctx context.Context, id string) error {
	c.forget(id)
	return c.p.Store.Revoke(ctx, id)
}

// List implements Store (always from the store).
func (c *Cache) List(ctx context.Context) ([]Record, error) { return c.p.Store.List(ctx) }
