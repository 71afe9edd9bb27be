// Package cursor makes the API's pagination cursors: opaque, URL-safe,
// signed (HMAC-SHA256) and bound to the endpoint and the query that made
// them. A cursor carries the search_after key of the last item of its page.
//
// Token: "c1." + base64url(JSON payload) + "." + base64url(MAC[:16]).
// The MAC covers the version prefix and the payload; the payload names the
// endpoint and a hash of the query binding (every parameter except cursor
// and limit, so a client may change page size mid-walk).
package cursor

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid wraps every reason a cursor is refused: tampered, truncated,
// foreign (another endpoint or query), or of an unknown format.
var ErrInvalid = errors.New("invalid cursor")

// MaxLen bounds an accepted token.
const MaxLen = 2048

const prefix = "c1."

var b64 = base64.RawURLEncoding

// Codec signs and verifies cursors with one secret. Replicas that serve
// the same clients must share it.
type Codec struct {
	key []byte
}

// New returns a Codec; secret should be at least 16 random bytes.
func New(secret []byte) *Codec {
	return &Codec{key: append([]byte(nil), secret...)}
}

type payload struct {
	Endpoint string          `json:"e"`
	Binding  string          `json:"b"`
	Key      json.RawMessage `json:"k"`
}

// Binding canonicalises the parameters a cursor is bound to: pairs are
// name=value, order-independent. Callers pass the effective (defaulted,
// normalised) values so equivalent queries bind alike.
func Binding(pairs ...string) string {
	h := sha256.New()
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(h, "%d:%s=%d:%s;", len(pairs[i]), pairs[i], len(pairs[i+1]), pairs[i+1])
	}
	return b64.EncodeToString(h.Sum(nil)[:12])
}

// Encode returns the token for key (any JSON-encodable search_after key).
func (c *Codec) Encode(endpoint, binding string, key any) (string, error) {
	k, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(payload{Endpoint: endpoint, Binding: binding, Key: k})
	if err != nil {
		return "", err
	}
	body := b64.EncodeToString(p)
	return prefix + body + "." + b64.EncodeToString(c.mac(body)), nil
}

// Decode verifies token for endpoint and binding and fills key. Every
// failure wraps ErrInvalid.
func (c *Codec) Decode(token, endpoint, binding string, key any) error {
	if len(token) > MaxLen {
		return fmt.Errorf("%w: longer than %d characters", ErrInvalid, MaxLen)
	}
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return fmt.Errorf("%w: unknown format", ErrInvalid)
	}
	body, sig, ok := strings.Cut(rest, ".")
	if !ok || body == "" || sig == "" {
		return fmt.Errorf("%w: truncated", ErrInvalid)
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac(body)) {
		return fmt.Errorf("%w: signature does not match", ErrInvalid)
	}
	raw, err := b64.DecodeString(body)
	if err != nil {
		return fmt.Errorf("%w: bad encoding", ErrInvalid)
	}
	var p payload
	if err := strict(raw, &p); err != nil {
		return fmt.Errorf("%w: bad payload", ErrInvalid)
	}
	if p.Endpoint != endpoint {
		return fmt.Errorf("%w: made by another endpoint", ErrInvalid)
	}
	if p.Binding != binding {
		return fmt.Errorf("%w: made for another query; restart paging without a cursor", ErrInvalid)
	}
	if err := strict(p.Key, key); err != nil {
		return fmt.Errorf("%w: bad position", ErrInvalid)
	}
	return nil
}

func (c *Codec) mac(body string) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(prefix))
	m.Write([]byte(body))
	return m.Sum(nil)[:16]
}

func strict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}
