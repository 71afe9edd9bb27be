package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisPrefix namespaces permitd's keys in a shared Redis.
const DefaultRedisPrefix = "permitd:"

// RedisStore keeps each record as JSON under <prefix>apikey:<id>: the
// distributed mode's store. Put a Cache in front of it on the request
// path.
type RedisStore struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedisStore returns a store on rdb; prefix "" is DefaultRedisPrefix.
func NewRedisStore(rdb redis.UniversalClient, prefix string) *RedisStore {
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	return &RedisStore{rdb: rdb, prefix: prefix}
}

func (s *RedisStore) key(id string) string { return s.prefix + "apikey:" + id }

// Lookup implements Store.
func (s *RedisStore) Lookup(ctx context.Context, id string) (Record, error) {
	b, err := s.rdb.Get(ctx, s.key(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, err
	}
	return r, nil
}

// Create implements Store (SET NX: durable as Redis's persistence
// settings make it).
func (s *RedisStore) Create(ctx context.Context, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ok, err := s.rdb.SetNX(ctx, s.key(r.ID), b, 0).Result()
	if err != nil {
		return err
	}
	if !ok {
		return ErrExists
	}
	return nil
}

// Revoke implements Store.
func (s *RedisStore) Revoke(ctx context.Context, id string) error {
	n, err := s.rdb.Del(ctx, s.key(id)).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// List implements Store (SCAN; not for the request path).
func (s *RedisStore) List(ctx context.Context) ([]Record, error) {
	recs := map[string]Record{}
	it := s.rdb.Scan(ctx, 0, s.key("*"), 256).Iterator()
	for it.Next(ctx) {
		b, err := s.rdb.Get(ctx, it.Val()).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // revoked meanwhile
		}
		if err != nil {
			return nil, err
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", it.Val(), err)
		}
		recs[r.ID] = r
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return sortedRecords(recs), nil
}
