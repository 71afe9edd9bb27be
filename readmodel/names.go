package readmodel

import (
	"strings"
	"unicode"
)

// NormName is the *_norm form of a city or county name that leads are
// counted under (LeadLocation.CityNorm, CountyNorm): lower case, letters
// and digits only, one space between words ("Seattle" -> "seattle",
// "  King  County" -> "king county", "Coeur d'Alene" -> "coeur d alene").
// "" stays "". The projection writes it and both backends key their
// stats top lists with it, so all three agree by construction.
//
// An ASCII name (nearly all of them) is normalized a byte at a time into
// a buffer on the stack, and one already in the form is returned as is:
// the projection writes two per lead, and the Unicode path allocated
// twice for each (strings.ToLower, then the builder).
func NormName(s string) string {
	var buf [64]byte
	out := buf[:0]
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			return normNameRunes(s)
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		default:
			space = true
			continue
		}
		if space && len(out) > 0 {
			out = append(out, ' ')
		}
		space = false
		out = append(out, c)
	}
	if string(out) == s { // compared without a copy
		return s
	}
	return string(out)
}

// normNameRunes is NormName for any text.
func normNameRunes(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		} else {
			space = true
		}
	}
	return b.String()
}
