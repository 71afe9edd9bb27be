package api

import (
	"sync"
	"sync/atomic"
)

// respCache keeps encoded 200 bodies per read-model version, the way
// OpenSearch's shard request cache keeps results until the next refresh: a
// dashboard repeating a query, or resolve traffic cycling through popular
// places, is answered from memory until the read model changes. It exists
// only with a Versioned reader, whose pre-read ETag names the version, the
// route, the path, the canonical query and the service date; that ETag is
// the key, so an entry can never answer for another state of the read
// model or another day.
//
// When a body of a newer version is stored, every older entry is dropped
// at once (they can no longer be hit: their keys name older versions). The
// total size is bounded by max; past it nothing more is stored until the
// version changes. Bodies are immutable once stored.
type respCache struct {
	max int64 // bytes of bodies at most

	mu    sync.RWMutex
	seq   uint64 // the version the entries belong to
	size  int64
	items map[string][]byte

	hits, misses atomic.Int64
}

// maxCachedBody: larger bodies are not kept (a page of 100 leads with
// groups is about 100 KB; anything larger is rare and cheap to rebuild
// relative to its transfer).
const maxCachedBody = 256 << 10

func newRespCache(maxBytes int64) *respCache {
	if maxBytes <= 0 {
		return nil
	}
	return &respCache{max: maxBytes, items: map[string][]byte{}}
}

// get returns the body stored under etag.
func (r *respCache) get(etag string) ([]byte, bool) {
	r.mu.RLock()
	b, ok := r.items[etag]
	r.mu.RUnlock()
	if ok {
		r.hits.Add(1)
	} else {
		r.misses.Add(1)
	}
	return b, ok
}

// put stores a copy of body under etag, taken at version seq. A body of an
// older version than the entries held is not stored.
func (r *respCache) put(etag string, seq uint64, body []byte) {
	if len(body) > maxCachedBody {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case seq < r.seq:
		return
	case seq > r.seq:
		r.seq, r.size = seq, 0
		clear(r.items)
	}
	if _, ok := r.items[etag]; ok || r.size+int64(len(body)) > r.max {
		return
	}
	r.items[etag] = append([]byte(nil), body...)
	r.size += int64(len(body))
}
