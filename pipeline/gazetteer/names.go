package gazetteer

import "strings"

// foldTable maps the accented letters of the bundled sources (and the rest
// of Latin-1 and the common Latin Extended-A letters) to ASCII.
var foldTable = map[rune]string{
	'à': "a", 'á': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a", 'ā': "a",
	'À': "A", 'Á': "A", 'Â': "A", 'Ã': "A", 'Ä': "A", 'Å': "A", 'Ā': "A",
	'è': "e", 'é': "e", 'ê': "e", 'ë': "e", 'ē': "e",
	'È': "E", 'É': "E", 'Ê': "E", 'Ë': "E", 'Ē': "E",
	'ì': "i", 'í': "i", 'î': "i", 'ï': "i", 'ī': "i",
	'Ì': "I", 'Í': "I", 'Î': "I", 'Ï': "I", 'Ī': "I",
	'ò': "o", 'ó': "o", 'ô': "o", 'õ': "o", 'ö': "o", 'ø': "o", 'ō': "o",
	'Ò': "O", 'Ó': "O", 'Ô': "O", 'Õ': "O", 'Ö': "O", 'Ø': "O", 'Ō': "O",
	'ù': "u", 'ú': "u", 'û': "u", 'ü': "u", 'ū': "u",
	'Ù': "U", 'Ú': "U", 'Û': "U", 'Ü': "U", 'Ū': "U",
	'ñ': "n", 'ń': "n", 'Ñ': "N", 'Ń': "N",
	'ç': "c", 'Ç': "C", 'ý': "y", 'ÿ': "y", 'Ý': "Y",
	'ß': "ss", 'æ': "ae", 'Æ': "AE",
}

// fold returns s with accented letters replaced by their ASCII letters.
// Other runes are kept.
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if f, ok := foldTable[r]; ok {
			b.WriteString(f)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// abbreviations maps a place-name word to its canonical short form, so
// "Saint Louis" (GeoNames) and "St. Louis" (simplemaps) share a key.
var abbreviations = map[string]string{
	"saint": "st", "sainte": "ste", "mount": "mt", "fort": "ft",
}

// nameKey is the case-, accent- and punctuation-insensitive matching key
// of a place name: ASCII-folded, lower-cased, words of letters and digits
// with Saint/Mount/Fort abbreviated, joined without spaces (so "Mc Lean"
// equals "McLean").
func nameKey(s string) string {
	s = strings.ToLower(fold(s))
	var b strings.Builder
	word := make([]byte, 0, 16)
	flush := func() {
		if len(word) == 0 {
			return
		}
		if a, ok := abbreviations[string(word)]; ok {
			b.WriteString(a)
		} else {
			b.Write(word)
		}
		word = word[:0]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			word = append(word, c)
			continue
		}
		if c == '\'' { // "St. Mary's" = "St Marys"
			continue
		}
		flush()
	}
	flush()
	return b.String()
}

// expansions are the alternative spellings of a leading abbreviation a
// user may type.
var expansions = map[string]string{
	"St.": "Saint", "Saint": "St.",
	"Mt.": "Mount", "Mount": "Mt.",
	"Ft.": "Fort", "Fort": "Ft.",
}

// placeAliases returns the extra names the resolver should match for a
// place called name whose ASCII spelling is ascii: the ASCII form when it
// differs, and the other spelling of a leading Saint/St., Mount/Mt.,
// Fort/Ft. Never nil-vs-empty ambiguous: nil when there is none.
func placeAliases(name, ascii string) []string {
	var out []string
	add := func(a string) {
		if a == "" || a == name {
			return
		}
		for _, have := range out {
			if have == a {
				return
			}
		}
		out = append(out, a)
	}
	add(ascii)
	for _, n := range []string{name, ascii} {
		first, rest, ok := strings.Cut(n, " ")
		if !ok {
			continue
		}
		if alt, ok := expansions[first]; ok {
			add(alt + " " + rest)
		}
	}
	return out
}
