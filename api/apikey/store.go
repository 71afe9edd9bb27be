package apikey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors of a Store.
var (
	ErrNotFound = errors.New("apikey: no such key id")
	ErrExists   = errors.New("apikey: key id already exists")
)

// Record is what a store keeps of a key: its non-secret id, the SHA-256 of
// the whole key, and the plan's name. The key itself is never stored.
type Record struct {
	ID      string
	Hash    [32]byte
	Plan    string
	Created time.Time
}

// recordJSON is the stored form, shared by the file and Redis stores.
type recordJSON struct {
	ID      string    `json:"id"`
	SHA256  string    `json:"sha256"`
	Plan    string    `json:"plan"`
	Created time.Time `json:"created"`
}

func (r Record) MarshalJSON() ([]byte, error) {
	return json.Marshal(recordJSON{ID: r.ID, SHA256: hex.EncodeToString(r.Hash[:]), Plan: r.Plan, Created: r.Created.UTC()})
}

func (r *Record) UnmarshalJSON(b []byte) error {
	var j recordJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	h, err := hex.DecodeString(j.SHA256)
	if err != nil || len(h) != len(r.Hash) {
		return fmt.Errorf("apikey: record %q: sha256 must be 64 hex digits", j.ID)
	}
	if !ValidID(j.ID) {
		return fmt.Errorf("apikey: record %q: malformed id", j.ID)
	}
	*r = Record{ID: j.ID, Plan: j.Plan, Created: j.Created}
	copy(r.Hash[:], h)
	return nil
}

// Store keeps key records. Implementations: FileStore (embedded default),
// RedisStore (distributed), Cache (in front of either).
type Store interface {
	// Lookup returns the record with id, or ErrNotFound. Any other error
	// means the store could not answer.
	Lookup(ctx context.Context, id string) (Record, error)
	// Create stores a new record, durably once it returns nil; ErrExists
	// when the id is taken (the record is then unchanged).
	Create(ctx context.Context, r Record) error
	// Revoke removes the record with id; ErrNotFound when there is none.
	Revoke(ctx context.Context, id string) error
	// List returns every record ordered by id; empty, not nil, when there
	// are none.
	List(ctx context.Context) ([]Record, error)
}

// Issue creates a key on plan, stores its record and returns the key. The
// key is not recoverable afterwards: only its hash is stored.
func Issue(ctx context.Context, s Store, plan string, now time.Time) (key string, r Record, err error) {
	if _, ok := LookupPlan(plan); !ok {
		return "", Record{}, fmt.Errorf("apikey: unknown plan %q (plans: %v)", plan, PlanNames())
	}
	for range 3 { // an id collision (80 random bits) is practically impossible
		key, id := NewKey()
		r = Record{ID: id, Hash: sha256.Sum256([]byte(key)), Plan: plan, Created: now.UTC().Truncate(time.Second)}
		err = s.Create(ctx, r)
		if err == nil {
			return key, r, nil
		}
		if !errors.Is(err, ErrExists) {
			return "", Record{}, err
		}
	}
	return "", Record{}, err
}

// Keys authenticates pmk_ keys against a Store: the checksum is checked
// first (a typo never reaches the store), then the record is looked up by
// id and the key's SHA-256 compared with the stored hash in constant time.
type Keys struct {
	store Store
}

// NewKeys returns an authenticator over s.
func NewKeys(s Store) *Keys { return &Keys{store: s} }

// Authenticate implements Authenticator. A record naming a plan this
// build does not know is an error (not ErrInvalidKey): the key is real,
// the deployment is wrong.
func (k *Keys) Authenticate(ctx context.Context, key string) (Principal, error) {
	id, err := ParseKey(key)
	if err != nil {
		return Principal{}, err
	}
	r, err := k.store.Lookup(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrInvalidKey
	}
	if err != nil {
		return Principal{}, fmt.Errorf("apikey: lookup of key id %s: %w: %w", id, ErrStoreUnavailable, err)
	}
	h := sha256.Sum256([]byte(key))
	if subtle.ConstantTimeCompare(h[:], r.Hash[:]) != 1 {
		return Principal{}, ErrInvalidKey
	}
	plan, ok := LookupPlan(r.Plan)
	if !ok {
		return Principal{}, fmt.Errorf("apikey: key id %s is on unknown plan %q", id, r.Plan)
	}
	return Principal{KeyID: id, Plan: plan}, nil
}

// Chain tries each authenticator in order and returns the first
// principal. When none accepts, it returns the first error that is not
// ErrInvalidKey (a store could not answer), else ErrInvalidKey.
func Chain(auths ...Authenticator) Authenticator { return chain(auths) }

type chain []Authenticator

func (c chain) Authenticate(ctx context.Context, key string) (Principal, error) {
	var hard error
	for _, a := range c {
		p, err := a.Authenticate(ctx, key)
		if err == nil {
			return p, nil
		}
		if hard == nil && !errors.Is(err, ErrInvalidKey) {
			hard = err
		}
	}
	if hard != nil {
		return Principal{}, hard
	}
	return Principal{}, ErrInvalidKey
}
