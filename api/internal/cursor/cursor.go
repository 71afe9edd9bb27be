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
	"hash"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/permitd/permitd/api/internal/jsonenc"
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
	key  []byte
	macs sync.Pool // keyed HMACs, Reset between uses
}

// New returns a Codec; secret should be at least 16 random bytes.
func New(secret []byte) *Codec {
	c := &Codec{key: append([]byte(nil), secret...)}
	c.macs.New = func() any { return hmac.New(sha256.New, c.key) }
	return c
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
	var arr [512]byte
	b := arr[:0]
	for i := 0; i+1 < len(pairs); i += 2 {
		b = strconv.AppendInt(b, int64(len(pairs[i])), 10)
		b = append(b, ':')
		b = append(b, pairs[i]...)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(len(pairs[i+1])), 10)
		b = append(b, ':')
		b = append(b, pairs[i+1]...)
		b = append(b, ';')
	}
	sum := sha256.Sum256(b)
	return b64.EncodeToString(sum[:12])
}

// Encode returns the token for key (any JSON-encodable search_after key).
func (c *Codec) Encode(endpoint, binding string, key any) (string, error) {
	k, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	// The payload as json.Marshal(payload{...}) writes it.
	var arr [256]byte
	p := append(arr[:0], `{"e":`...)
	p = jsonenc.String(p, endpoint)
	p = append(p, `,"b":`...)
	p = jsonenc.String(p, binding)
	p = append(p, `,"k":`...)
	p = jsonenc.Raw(p, k, "null")
	p = append(p, '}')
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
	m := c.macs.Get().(hash.Hash)
	m.Reset()
	_, _ = io.WriteString(m, prefix)
	_, _ = io.WriteString(m, body)
	sum := m.Sum(nil)[:16]
	c.macs.Put(m)
	return sum
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
