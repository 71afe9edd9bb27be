package apikey

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// Key format
//
//	pmk_<id>_<secret>_<check>
//
//	pmk_     identifies a permitd key (secret scanners can match on it)
//	id       16 characters, 80 random bits; not secret: the store's lookup
//	         key and the Principal's KeyID, safe to log
//	secret   32 characters, 160 random bits
//	check    7 characters: CRC-32C of "pmk_<id>_<secret>"
//
// Every part uses lowercase RFC 4648 base32 without padding (a-z, 2-7), so
// a key is 61 characters and selects with one double click. The checksum
// rejects a mistyped or truncated key before any lookup; it is not a
// security measure (the secret is).
const (
	KeyPrefix = "pmk_"
	KeyLen    = len(KeyPrefix) + idLen + 1 + secretLen + 1 + checkLen

	idBytes     = 10
	secretBytes = 20
	idLen       = 16 // base32 of idBytes
	secretLen   = 32 // base32 of secretBytes
	checkLen    = 7  // base32 of 4 bytes, unpadded
)

var (
	keyEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// ErrMalformedKey: the key is not in the pmk_ format or its checksum does
// not match. It wraps ErrInvalidKey.
var ErrMalformedKey = fmt.Errorf("%w: malformed", ErrInvalidKey)

// NewKey returns a fresh key and its id.
func NewKey() (key, id string) {
	var b [idBytes + secretBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	id = keyEncoding.EncodeToString(b[:idBytes])
	body := KeyPrefix + id + "_" + keyEncoding.EncodeToString(b[idBytes:])
	return body + "_" + checksum(body), id
}

// ParseKey checks a key's shape and checksum and returns its id. It does no
// lookup; a well-formed key may still be unknown.
func ParseKey(key string) (id string, err error) {
	if len(key) != KeyLen || !strings.HasPrefix(key, KeyPrefix) {
		return "", ErrMalformedKey
	}
	rest := key[len(KeyPrefix):]
	if rest[idLen] != '_' || rest[idLen+1+secretLen] != '_' {
		return "", ErrMalformedKey
	}
	id = rest[:idLen]
	secret := rest[idLen+1 : idLen+1+secretLen]
	check := rest[idLen+1+secretLen+1:]
	if !canonical(id) || !canonical(secret) || !canonical(check) {
		return "", ErrMalformedKey
	}
	if check != checksum(key[:len(key)-checkLen-1]) {
		return "", ErrMalformedKey
	}
	return id, nil
}

// ValidID reports whether id has the shape of a key id.
func ValidID(id string) bool { return len(id) == idLen && canonical(id) }

// canonical reports whether s decodes and re-encodes to itself, so that no
// two spellings (different trailing bits) stand for one value.
func canonical(s string) bool {
	b, err := keyEncoding.DecodeString(s)
	return err == nil && keyEncoding.EncodeToString(b) == s
}

func checksum(body string) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum([]byte(body), castagnoli))
	return keyEncoding.EncodeToString(b[:])
}
