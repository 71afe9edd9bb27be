package apikey

import (
	"context"
	"errors"
)

// Guard bounds the calls a store makes to its backend: a circuit breaker
// (quota.Breaker) that fails at once while the backend is known to be
// down, and a timeout otherwise. Do runs fn unless it refuses; fn returns
// nil for any answer the backend gave.
type Guard interface {
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}

// Guarded returns s with Lookup (the request path) run through g: a
// missing record is an answer, anything else a failure of the store.
// Create, Revoke and List (administration) go straight to s.
func Guarded(s Store, g Guard) Store { return guarded{Store: s, g: g} }

type guarded struct {
	Store
	g Guard
}

func (s guarded) Lookup(ctx context.Context, id string) (Record, error) {
	var r Record
	var lerr error
	err := s.g.Do(ctx, func(ctx context.Context) error {
		r, lerr = s.Store.Lookup(ctx, id)
		if lerr != nil && !errors.Is(lerr, ErrNotFound) {
			return lerr
		}
		return nil
	})
	if err != nil {
		return Record{}, err
	}
	return r, lerr
}
