// Package apikey authenticates API keys and names the plan each key is on.
package apikey

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
)

// ErrInvalidKey: the key is missing, malformed or unknown. The API answers
// 403 without saying which.
var ErrInvalidKey = errors.New("apikey: invalid key")

// ErrStoreUnavailable: the store of issued keys could not answer (down,
// slow, or its circuit open), so the key is neither accepted nor known to
// be bad. The API answers 503 with Retry-After.
var ErrStoreUnavailable = errors.New("apikey: key store unavailable")

// Plan is what a key may do.
type Plan struct {
	Name          string
	RatePerSecond float64 // sustained requests per second
	Burst         int     // requests admitted at once above the rate
	MonthlyQuota  int64   // requests per calendar month (UTC); 0 = unlimited
}

// Principal is an authenticated caller. KeyID is not secret and may be
// logged; the key itself never is.
type Principal struct {
	KeyID string
	Plan  Plan
}

// Authenticator checks a presented key.
type Authenticator interface {
	// Authenticate returns the key's principal, or an error wrapping
	// ErrInvalidKey when the key is missing, malformed or unknown. Any
	// other error means the check could not be made: it wraps
	// ErrStoreUnavailable when the store could not answer (the key is then
	// neither accepted nor known to be bad). The error never contains the
	// key.
	Authenticate(ctx context.Context, key string) (Principal, error)
}

// DefaultDevPlan is the plan of development keys from PERMITD_API_KEYS.
var DefaultDevPlan = Plan{Name: "development", RatePerSecond: 1000, Burst: 2000}

// DevKeys authenticates a fixed list of development keys by the SHA-256
// of the presented key: only hashes are kept and looked up, so the time a
// look-up takes tells nothing about the keys themselves (as with hashed
// keys in the key store).
type DevKeys struct {
	ids  map[[32]byte]string // key hash -> key id ("dev" + its index)
	plan Plan
}

// NewDevKeys returns an authenticator for keys on plan.
func NewDevKeys(keys []string, plan Plan) *DevKeys {
	d := &DevKeys{plan: plan, ids: map[[32]byte]string{}}
	n := 0
	for _, k := range keys {
		if k == "" {
			continue
		}
		h := sha256.Sum256([]byte(k))
		if _, dup := d.ids[h]; !dup {
			d.ids[h] = "dev" + strconv.Itoa(n)
		}
		n++
	}
	return d
}

// Authenticate implements Authenticator.
func (d *DevKeys) Authenticate(_ context.Context, key string) (Principal, error) {
	if key == "" {
		return Principal{}, ErrInvalidKey
	}
	id, ok := d.ids[sha256.Sum256([]byte(key))]
	if !ok {
		return Principal{}, ErrInvalidKey
	}
	return Principal{KeyID: id, Plan: d.plan}, nil
}

// NewDevKey returns a random development key in the pmk_ format (see
// NewKey); DevKeys accepts any non-empty string.
func NewDevKey() string {
	k, _ := NewKey()
	return k
}
