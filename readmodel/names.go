package readmodel

import (
	"strings"
	"unicode"
)

// NormName is the *_norm form of a city or county name, the one key the
// projection counts leads under (LeadLocation.CityNorm, CountyNorm) and
// the backends spell stats top lists by: lower case, letters and digits
// only, single spaces ("Seattle" -> "seattle", "  King  County" -> "king
// county", "Coeur d'Alene" -> "coeur d alene"). "" stays "".
func NormName(s string) string {
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
