package address

import (
	"strings"
	"unicode"
)

// fold maps accented Latin letters (upper case) to their base letter.
var fold = map[rune]rune{
	'À': 'A', 'Á': 'A', 'Â': 'A', 'Ã': 'A', 'Ä': 'A', 'Å': 'A',
	'Ç': 'C', 'È': 'E', 'É': 'E', 'Ê': 'E', 'Ë': 'E',
	'Ì': 'I', 'Í': 'I', 'Î': 'I', 'Ï': 'I', 'Ñ': 'N',
	'Ò': 'O', 'Ó': 'O', 'Ô': 'O', 'Õ': 'O', 'Ö': 'O',
	'Ù': 'U', 'Ú': 'U', 'Û': 'U', 'Ü': 'U', 'Ý': 'Y',
}

// tokenize upper-cases s and splits it into words. Periods and apostrophes
// vanish ("N.E." -> "NE", "O'Neil" -> "ONEIL"); "#" is a word of its own;
// "-" and "/" stay only between digits ("98101-1234", "1/2"); every other
// non-alphanumeric rune separates words.
func tokenize(s string) []string {
	rs := []rune(s)
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	digit := func(i int) bool { return i >= 0 && i < len(rs) && rs[i] >= '0' && rs[i] <= '9' }
	for i, r := range rs {
		switch {
		case r == '.' || r == '\'' || r == '’':
			// dropped inside a word
		case r == '#':
			flush()
			out = append(out, "#")
		case (r == '-' || r == '/') && digit(i-1) && digit(i+1):
			cur.WriteRune(r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			r = unicode.ToUpper(r)
			if f, ok := fold[r]; ok {
				r = f
			}
			cur.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}
