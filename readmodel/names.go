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
