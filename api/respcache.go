package api

import (
	"strconv"
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
// version changes. Entries are immutable once stored; they carry the
// header values a hit sends, made once.
type respCache struct {
	max int64 // bytes of bodies at most

	mu    sync.RWMutex
	seq   uint64 // the version the entries belong to
	size  int64
	items map[uint64]*cachedBody

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
	return &respCache{max: maxBytes, items: map[uint64]*cachedBody{}}
}

// cachedBody is a stored 200: its body and the ETag and Content-Length
// header values that go with it.
type cachedBody struct {
	body   []byte
	etag   []string
	length []string
}

// get returns the entry stored under key (the hash its ETag shows).
func (r *respCache) get(key uint64) (*cachedBody, bool) {
	r.mu.RLock()
	e, ok := r.items[key]
	r.mu.RUnlock()
	if ok {
		r.hits.Add(1)
	} else {
		r.misses.Add(1)
	}
	return e, ok
}

// put stores a copy of body under key, with its ETag tag, taken at
// version seq, and returns the entry; nil when it is not stored (a body
// of an older version than the entries held, too large, or past max).
func (r *respCache) put(key, seq uint64, tag *etag, body []byte) *cachedBody {
	if len(body) > maxCachedBody {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case seq < r.seq:
		return nil
	case seq > r.seq:
		r.seq, r.size = seq, 0
		clear(r.items)
	}
	if e, ok := r.items[key]; ok {
		return e
	}
	if r.size+int64(len(body)) > r.max {
		return nil
	}
	e := &cachedBody{body: append([]byte(nil), body...), etag: []string{tag.String()}, length: []string{strconv.Itoa(len(body))}}
	r.items[key] = e
	r.size += int64(len(body))
	return e
}
