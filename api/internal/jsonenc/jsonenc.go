// Package jsonenc appends JSON values to a byte slice exactly as
// encoding/json.Marshal writes them (HTML-safe string escaping, ES6 float
// formatting, compacted raw messages), without reflection. The API's
// hand-written response encoders are built on it; the agreement tests
// compare every function with encoding/json.
package jsonenc

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// safe[b] is true for the ASCII bytes encoding/json writes as they are in a
// string with HTML escaping on: printable, not '"', '\\', '<', '>', '&'.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		switch b {
		case '"', '\\', '<', '>', '&', 0x7f:
			t[b] = b == 0x7f // DEL is written as it is
		default:
			t[b] = true
		}
	}
	return t
}()

// String appends s as a JSON string: invalid UTF-8 becomes U+FFFD, U+2028
// and U+2029 and the HTML characters <, > and & are escaped as \u00XX,
// the way encoding/json does by default.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight plain ASCII bytes at a time: the common case.
		for i+8 <= len(s) && plain8(load8(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load8 reads s[i:i+8] as a little-endian word (the compiler merges the
// loads into one).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// hasByte reports whether any byte of x equals c.
func hasByte(x uint64, c byte) bool {
	v := x ^ (lsb * uint64(c))
	return (v-lsb)&^v&msb != 0
}

// plain8 reports whether the eight bytes of x are all written as they
// are: ASCII, not a control character, not '"', '\\', '<', '>' or '&'.
func plain8(x uint64) bool {
	if x&msb != 0 || (x-lsb*0x20)&^x&msb != 0 {
		return false // non-ASCII, or a byte below 0x20
	}
	return !hasByte(x, '"') && !hasByte(x, '\\') && !hasByte(x, '<') && !hasByte(x, '>') && !hasByte(x, '&')
}

// NullString appends s, or null when s is empty (the API's nullable
// strings).
func NullString(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return String(dst, s)
}

// Strings appends a JSON array of strings; nil is written as [] (the API
// never sends a null list).
func Strings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = String(dst, s)
	}
	return append(dst, ']')
}

// Float appends a float64 as encoding/json does: like %g, but 'e' only
// below 1e-6 or from 1e21 on, and exponents not padded. NaN and
// infinities, which encoding/json refuses, are written as null.
func Float(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	dst = strconv.AppendFloat(dst, f, fmt, -1, 64)
	if fmt == 'e' {
		// e-09 -> e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// NullFloat appends *f, or null when f is nil.
func NullFloat(dst []byte, f *float64) []byte {
	if f == nil {
		return append(dst, "null"...)
	}
	return Float(dst, *f)
}

// Int appends an integer.
func Int(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// NullInt appends *n, or null when n is nil.
func NullInt(dst []byte, n *int) []byte {
	if n == nil {
		return append(dst, "null"...)
	}
	return strconv.AppendInt(dst, int64(*n), 10)
}

// rawSpecial marks the bytes Raw must look at: quotes and backslashes
// (string state), whitespace (dropped outside strings), the HTML
// characters and the first byte of U+2028/U+2029 (escaped).
var rawSpecial = func() (t [256]bool) {
	for _, c := range []byte{'"', '\\', ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2} {
		t[c] = true
	}
	return t
}()

// Raw appends a valid JSON document compacted and HTML-escaped, as
// encoding/json writes a json.RawMessage: whitespace outside strings is
// dropped; <, >, &, U+2028 and U+2029 are escaped everywhere. Empty raw is
// written as fallback. raw must be valid JSON (the read model stores only
// documents the indexer validated); for invalid input the output is not
// specified.
func Raw(dst, raw []byte, fallback string) []byte {
	if len(raw) == 0 {
		return append(dst, fallback...)
	}
	start := 0
	inStr, esc := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !rawSpecial[c] {
			esc = false
			continue
		}
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, raw[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
			esc = false
		case c == 0xE2:
			esc = false
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				dst = append(dst, raw[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[raw[i+2]&0xF])
				i += 2
				start = i + 1
			}
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}
