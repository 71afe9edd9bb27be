package resolve

import (
	"slices"
	"strings"
)

// foldRune maps the accented letters that occur in US place names (and the
// rest of Latin-1 and common Latin Extended-A) to lower-case ASCII.
var foldRune = map[rune]string{
	'à': "a", 'á': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a", 'ā': "a", 'ą': "a",
	'è': "e", 'é': "e", 'ê': "e", 'ë': "e", 'ē': "e", 'ę': "e",
	'ì': "i", 'í': "i", 'î': "i", 'ï': "i", 'ī': "i",
	'ò': "o", 'ó': "o", 'ô': "o", 'õ': "o", 'ö': "o", 'ø': "o", 'ō': "o",
	'ù': "u", 'ú': "u", 'û': "u", 'ü': "u", 'ū': "u",
	'ñ': "n", 'ń': "n", 'ç': "c", 'ć': "c", 'č': "c", 'ý': "y", 'ÿ': "y",
	'ß': "ss", 'æ': "ae", 'œ': "oe", 'ł': "l", 'š': "s", 'ž': "z",
}

// abbreviations maps a word a user or a source may abbreviate to its long
// form. Both indexed names and queries are rewritten to the long form, so
// "St. Louis", "Saint Louis" and "st louis" share their tokens.
var abbreviations = map[string]string{
	"mt": "mount", "mtn": "mountain", "ft": "fort",
	"st": "saint", "ste": "sainte",
	"n": "north", "s": "south", "e": "east", "w": "west",
	"pt": "point", "is": "island", "isl": "island",
	"hts": "heights", "hgts": "heights", "spgs": "springs", "spg": "spring",
	"jct": "junction", "lk": "lake", "bch": "beach", "vlg": "village",
	"twp": "township", "ctr": "center", "hbr": "harbor", "vly": "valley",
	"pk": "park", "cyn": "canyon", "crk": "creek", "fls": "falls",
}

// alsoMeans lists the other long forms of an ambiguous abbreviation. A
// query word takes them as alternatives that match only exactly ("Pt
// Angeles" is Port Angeles, "Pt Pleasant" Point Pleasant); an indexed
// name keeps the first long form (abbreviations), so an indexed "Pt."
// reads Point.
var alsoMeans = map[string][]string{
	"pt": {"port"},
}

// Token is one normalised word: Text is its canonical form (abbreviations
// expanded), Surface the word as written (folded, lower case).
type Token struct {
	Text    string
	Surface string
	// Exact: the word matches only exactly, never as a typo or prefix
	// (the state words of a reading that keeps them as part of the name).
	Exact bool
	// Alts are other long forms of an ambiguous abbreviation (alsoMeans:
	// "pt" is Point, or Port); each matches a name word only exactly.
	// Set on query words, never on indexed names. Shared: never written.
	Alts []string
}

// words splits s into lower-case ASCII words of letters and digits.
// Accents are folded, apostrophes dropped ("St. Mary's" -> st, marys), and
// every other rune separates words (so "Sedro-Woolley" -> sedro, woolley).
func words(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		case r == '\'' || r == '’':
		default:
			if r >= 0x80 {
				lr := []rune(strings.ToLower(string(r)))[0]
				if f, ok := foldRune[lr]; ok {
					b.WriteString(f)
					continue
				}
			}
			flush()
		}
	}
	flush()
	return out
}

// canonical returns the long form of an abbreviated word, or w.
func canonical(w string) string {
	if c, ok := abbreviations[w]; ok {
		return c
	}
	return w
}

// tokenize returns the canonical tokens of s.
func tokenize(s string) []Token {
	ws := words(s)
	out := make([]Token, len(ws))
	for i, w := range ws {
		out[i] = Token{Text: canonical(w), Surface: w}
	}
	return out
}

// Normalize returns the canonical matching form of a name: folded, lower
// case, punctuation removed, abbreviations expanded, words joined by one
// space ("Mt. Vernon" -> "mount vernon", "Sedro-Woolley" -> "sedro
// woolley").
func Normalize(s string) string {
	ws := words(s)
	for i, w := range ws {
		ws[i] = canonical(w)
	}
	return strings.Join(ws, " ")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// states lists USPS codes with their names, the 50 states, DC and the
// territories the gazetteer may carry.
var states = [][2]string{
	{"AL", "Alabama"}, {"AK", "Alaska"}, {"AZ", "Arizona"}, {"AR", "Arkansas"},
	{"CA", "California"}, {"CO", "Colorado"}, {"CT", "Connecticut"}, {"DE", "Delaware"},
	{"DC", "District of Columbia"}, {"FL", "Florida"}, {"GA", "Georgia"}, {"HI", "Hawaii"},
	{"ID", "Idaho"}, {"IL", "Illinois"}, {"IN", "Indiana"}, {"IA", "Iowa"},
	{"KS", "Kansas"}, {"KY", "Kentucky"}, {"LA", "Louisiana"}, {"ME", "Maine"},
	{"MD", "Maryland"}, {"MA", "Massachusetts"}, {"MI", "Michigan"}, {"MN", "Minnesota"},
	{"MS", "Mississippi"}, {"MO", "Missouri"}, {"MT", "Montana"}, {"NE", "Nebraska"},
	{"NV", "Nevada"}, {"NH", "New Hampshire"}, {"NJ", "New Jersey"}, {"NM", "New Mexico"},
	{"NY", "New York"}, {"NC", "North Carolina"}, {"ND", "North Dakota"}, {"OH", "Ohio"},
	{"OK", "Oklahoma"}, {"OR", "Oregon"}, {"PA", "Pennsylvania"}, {"RI", "Rhode Island"},
	{"SC", "South Carolina"}, {"SD", "South Dakota"}, {"TN", "Tennessee"}, {"TX", "Texas"},
	{"UT", "Utah"}, {"VT", "Vermont"}, {"VA", "Virginia"}, {"WA", "Washington"},
	{"WV", "West Virginia"}, {"WI", "Wisconsin"}, {"WY", "Wyoming"},
	{"PR", "Puerto Rico"}, {"GU", "Guam"}, {"VI", "Virgin Islands"},
	{"AS", "American Samoa"}, {"MP", "Northern Mariana Islands"},
}

var (
	stateByCode = map[string]string{} // "wa" -> "WA"
	stateByName = map[string]string{} // "washington", "north carolina" -> code
	// officialState holds the official names: a text that is one ("West
	// Virginia") is never read as a place in a state ("West", VA).
	officialState = map[string]bool{}
)

func init() {
	for _, s := range states {
		stateByCode[strings.ToLower(s[0])] = s[0]
		stateByName[Normalize(s[1])] = s[0]
		officialState[Normalize(s[1])] = true
	}
	// Common spellings.
	stateByName["washington dc"] = "DC"
	stateByName["wash"] = "WA"
	stateByName["calif"] = "CA"
	stateByName["mass"] = "MA"
}

// countySuffixes are the words that end a county-equivalent's name; the
// words before them are the county's bare name ("King" of "King County").
var countySuffixes = map[string]bool{
	"county": true, "parish": true, "borough": true, "municipio": true,
	"municipality": true, "city": true, "area": true, // "Bethel Census Area"
}

// Filler phrases are words people add around a place name that name no
// place: a country, "state" / "state of", "city of", "county of", "the",
// and street-style or vague-area words. Parse drops them into an extra
// reading (see dropFillers); the reading of every word is kept too, so a
// name that has such a word ("State College", "The Dalles") still matches
// by name first. Each phrase is a sequence of words as written (folded,
// lower case); the longest phrase at a position wins.
type filler int

const (
	fillerPlain    filler = iota
	fillerState           // "state", "state of": a state is meant
	fillerCityOf          // "city of": the city's jurisdiction is meant
	fillerCountyOf        // "county of X": X County is meant
)

var fillerPhrases = func() map[string][]fillerPhrase {
	m := map[string][]fillerPhrase{}
	add := func(kind filler, phrases ...string) {
		for _, p := range phrases {
			ws := strings.Fields(p)
			m[ws[0]] = append(m[ws[0]], fillerPhrase{words: ws, kind: kind})
		}
	}
	// Country names and codes ("U.S.A." splits into u, s, a).
	add(fillerPlain, "united states of america", "united states", "u s a", "u s", "usa", "us", "america")
	add(fillerState, "state of", "state")
	add(fillerCityOf, "city of")
	add(fillerCountyOf, "county of")
	add(fillerPlain, "the")
	// Street-style and vague-area words. Not "st" (Saint), "ste" (Sainte)
	// or "in" (Indiana): those mean something.
	add(fillerPlain, "near", "around", "downtown", "greater", "metro", "area", "vicinity", "region",
		"street", "avenue", "ave", "road", "rd", "boulevard", "blvd", "highway", "hwy", "suite", "apt", "unit", "at")
	for _, ps := range m {
		slices.SortFunc(ps, func(a, b fillerPhrase) int { return len(b.words) - len(a.words) })
	}
	return m
}()

type fillerPhrase struct {
	words []string
	kind  filler
}

// droppedWords is what dropFillers found.
type droppedWords struct {
	any, state, cityOf bool
}

// dropFillers returns ws without its filler phrases. "county of X" becomes
// "X county" (read as a county); "city of" and "state" are reported.
func dropFillers(ws []string) ([]string, droppedWords) {
	var d droppedWords
	var out []string
	countyOf := false
	for i := 0; i < len(ws); {
		var hit *fillerPhrase
		for k, p := range fillerPhrases[ws[i]] {
			if i+len(p.words) <= len(ws) && slices.Equal(ws[i:i+len(p.words)], p.words) {
				hit = &fillerPhrases[ws[i]][k]
				break
			}
		}
		if hit == nil {
			out = append(out, ws[i])
			i++
			continue
		}
		if out == nil {
			out = make([]string, 0, len(ws))
		}
		d.any = true
		switch hit.kind {
		case fillerState:
			d.state = true
		case fillerCityOf:
			d.cityOf = true
		case fillerCountyOf:
			countyOf = true
		}
		i += len(hit.words)
	}
	if countyOf && len(out) > 0 && out[len(out)-1] != "county" {
		out = append(out, "county")
	}
	return out, d
}
