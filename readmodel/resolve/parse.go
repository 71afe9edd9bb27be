package resolve

import (
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// Query is parsed resolve text, independent of any backend.
type Query struct {
	Text string // the text as given

	// Zip is the 5-digit ZIP found in the text ("" for none); Plus4 its
	// ZIP+4 extension when given ("98052-1234", "980521234").
	Zip, Plus4 string

	// ZipPrefix is the text when its only word is 3 or 4 digits ("981",
	// "9810"): the start of a ZIP, matched by the ZIPs it begins. Mixed
	// with other words ("Seattle 981") such a number stays a word of the
	// name, which no place name has, so it matches nothing.
	ZipPrefix string

	// CityOf: the text began with "city of", "town of" or "village of",
	// which asks for the incorporated place's permitting jurisdiction.
	CityOf bool

	// Dropped: the text had filler words (a country, "state of", "the",
	// ...; see fillerPhrases) that some readings leave out.
	Dropped bool

	// Focus, when set, lifts locations near it (see focusBoost).
	Focus *readmodel.Point

	// Readings are the alternative readings of the name part of the text
	// (with and without a trailing state, "X Co" as county or Colorado,
	// words joined). A location scores by its best reading. Empty when the
	// text is only a ZIP.
	Readings []Reading

	// Hard filters from the request; "" for none.
	FilterState string
	FilterType  readmodel.GeoType
}

// Reading is one interpretation of the name part of a query.
type Reading struct {
	Tokens []Token
	// State is the USPS code the text named after the place ("spokane
	// wa", "Yakima, Washington"); "" when this reading names none.
	State string
	// County: the text ended in "County", "Co", "Cnty" or "Parish".
	County bool
	// Compact: the words of the text joined into one ("De Kalb" ->
	// "dekalb").
	Compact bool
	// Dropped: the reading leaves out the text's filler words; its
	// matches score fillerPenalty less and say filler_dropped.
	Dropped bool
	// StateWord: the dropped words said "state" ("Washington State",
	// "State of Ohio"): a state scores stateWordBonus more.
	StateWord bool
}

// ParseQuery parses a resolve request: the text with Parse, plus the
// state and geo_type hard filters.
func ParseQuery(rq readmodel.ResolveQuery) Query {
	q := Parse(rq.Text)
	q.FilterState = strings.ToUpper(rq.State)
	q.FilterType = rq.GeoType
	if rq.Focus != nil {
		f := *rq.Focus
		q.Focus = &f
	}
	return q
}

// Parse reads free text into a Query: it extracts a ZIP or ZIP+4 (or,
// when the text is only 3 or 4 digits, a ZIP prefix), a leading "city
// of", a trailing state code or name and a trailing county word; it
// normalises case, accents, punctuation and abbreviations of the rest.
// When the text has filler words (a country, "state of", "the", ...) it
// reads the words without them first, then all the words; a text of
// filler words only has no reading.
func Parse(text string) Query {
	q := Query{Text: text}
	ws := words(text)
	if len(ws) == 1 && len(ws[0]) >= minZipPrefix && len(ws[0]) < 5 && isDigits(ws[0]) {
		q.ZipPrefix = ws[0]
		return q
	}
	kept := ws[:0:0]
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if q.Zip == "" && isDigits(w) {
			switch {
			case len(w) == 5:
				q.Zip = w
				if i+1 < len(ws) && len(ws[i+1]) == 4 && isDigits(ws[i+1]) {
					q.Plus4 = ws[i+1]
					i++
				}
				continue
			case len(w) == 9:
				q.Zip, q.Plus4 = w[:5], w[5:]
				continue
			}
		}
		kept = append(kept, w)
	}
	kept, q.CityOf = cityOfPrefix(kept)
	core, dropped := dropFillers(kept)
	if dropped.any {
		q.Dropped = true
		var cityOf bool
		core, cityOf = cityOfPrefix(core)
		q.CityOf = q.CityOf || cityOf || dropped.cityOf
		if len(core) == 0 {
			// Only filler words (and perhaps a ZIP): no name to match.
			return q
		}
		// The words without their filler first, then (below) every word,
		// which a name containing the filler ("The Dalles") matches best.
		q.addReadings(core, Reading{Dropped: true, StateWord: dropped.state})
	}
	if len(kept) == 0 {
		return q
	}
	q.addReadings(kept, Reading{})
	return q
}

// cityOfPrefix strips a leading "city of" ("town of", "village of") from
// the words of a longer text.
func cityOfPrefix(ws []string) ([]string, bool) {
	if len(ws) > 2 && ws[1] == "of" && (ws[0] == "city" || ws[0] == "town" || ws[0] == "village") {
		return ws[2:], true
	}
	return ws, false
}

// addReadings adds the readings of the words ws: with a trailing state
// stripped, the whole words, "X Co" as a county, and the words joined.
// Every reading copies base's flags.
func (q *Query) addReadings(ws []string, base Reading) {
	toks := make([]Token, len(ws))
	for i, w := range ws {
		toks[i] = Token{Text: canonical(w), Surface: w, Alts: alsoMeans[w]}
	}
	add := func(r Reading) {
		if len(r.Tokens) == 0 {
			return
		}
		if n := len(r.Tokens); n >= 2 {
			switch r.Tokens[n-1].Surface {
			case "county", "co", "cnty", "parish":
				t := append([]Token(nil), r.Tokens...)
				if t[n-1].Surface != "parish" {
					t[n-1].Text = "county"
				}
				r.Tokens, r.County = t, true
			}
		}
		q.Readings = append(q.Readings, r)
		if len(r.Tokens) >= 2 && len(r.Tokens) <= 4 && !r.County {
			var b strings.Builder
			for _, t := range r.Tokens {
				b.WriteString(t.Text)
			}
			c := b.String()
			cr := base
			cr.Tokens, cr.State, cr.Compact = []Token{{Text: c, Surface: c}}, r.State, true
			q.Readings = append(q.Readings, cr)
		}
	}
	if st, k := trailingState(toks, 1); k > 0 && !officialState[Normalize(strings.Join(ws, " "))] {
		r := base
		r.Tokens, r.State = toks[:len(toks)-k], st
		add(r)
		// The words may still belong to the name ("Virginia Beach" is
		// not asked here, "Minnesota Lake MN" might be), but only exactly.
		toks = append([]Token(nil), toks...)
		for i := len(toks) - k; i < len(toks); i++ {
			toks[i].Exact = true
		}
	}
	r := base
	r.Tokens = toks
	add(r)
}

// trailingState finds a state code or name in the last words of toks and
// returns its code and how many tokens it takes (0 for none).
// At least keep tokens stay before it.
func trailingState(toks []Token, keep int) (string, int) {
	n := len(toks)
	for k := 3; k >= 1; k-- {
		if k > n-keep {
			continue
		}
		parts := make([]string, k)
		for i, t := range toks[n-k:] {
			parts[i] = t.Text
		}
		if code, ok := stateByName[strings.Join(parts, " ")]; ok {
			return code, k
		}
	}
	if w := toks[n-1].Surface; len(w) == 2 && n > keep {
		if code, ok := stateByCode[w]; ok {
			return code, 1
		}
	}
	return "", 0
}

// maxEdits is the typo budget of a query word: 1 edit for words of 4 to 7
// letters, 2 from 8 letters, none below 4.
func maxEdits(w string) int {
	switch {
	case len(w) >= 8:
		return 2
	case len(w) >= 4:
		return 1
	}
	return 0
}

// minPrefix is the shortest last word that may match as a prefix;
// minBoundedPrefix the shortest when other words come before it and bound
// the candidates ("Port An" -> Port Angeles, "San Fr" -> San Francisco,
// "Lake Forest P" -> Lake Forest Park). A single letter matches only the
// start of the name word right after the words before it.
const (
	minPrefix        = 3
	minBoundedPrefix = 1
)

// Prefixable reports whether the last word of a reading of words words,
// of n bytes, may match as a prefix.
func Prefixable(n, words int) bool {
	return n >= minPrefix || (words > 1 && n >= minBoundedPrefix)
}

// minZipPrefix is the fewest digits a text of digits alone needs to be
// read as the start of a ZIP: "98" would be a thousand ZIPs.
const minZipPrefix = 3
