package resolve

import (
	"slices"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// Matching a reading of the query against one name form of a location
// (its name, an alias, its ASCII fold): exact, prefix, fuzzy and partial
// matches, which scoreLoc (score.go) turns into a score.

// CityOfPrefixes are the leading words a name's matching forms drop
// ("City of Sedro-Woolley" matches as "Sedro-Woolley"), when a name
// follows them.
var CityOfPrefixes = []string{"city of", "town of", "village of"}

// form is one indexed name of a location, in matching form.
type form struct {
	toks    []Token
	core    int    // leading tokens that make the bare name; the rest is a type suffix ("county")
	compact string // Texts joined, for "Sedrowoolley" = "Sedro-Woolley"
	cityOf  bool   // a "City of" prefix was removed
	alias   bool   // from Location.Aliases
}

// formsOf returns the matching forms of a location's name and aliases,
// without duplicates. ZIPs have none: they match by code.
func formsOf(loc *readmodel.Location) []form {
	if loc.GeoType == readmodel.GeoZip {
		return nil
	}
	var out []form
	add := func(name string, alias bool) {
		toks := tokenize(name)
		f := form{alias: alias}
		if len(toks) > 2 && toks[1].Text == "of" && slices.Contains(CityOfPrefixes, toks[0].Text+" of") {
			toks = toks[2:]
			f.cityOf = true
		}
		if len(toks) == 0 {
			return
		}
		f.toks, f.core = toks, len(toks)
		if loc.GeoType == readmodel.GeoCounty || (loc.GeoType == readmodel.GeoJurisdiction && !loc.Incorporated) {
			for f.core > 1 && (countySuffixes[toks[f.core-1].Text] || toks[f.core-1].Text == "census" || toks[f.core-1].Text == "and") {
				f.core--
			}
		}
		f.compact = compactOf(toks)
		for _, o := range out {
			if o.compact == f.compact && o.cityOf == f.cityOf && len(o.toks) == len(f.toks) {
				return
			}
		}
		out = append(out, f)
	}
	add(loc.Name, false)
	for _, a := range loc.Aliases {
		add(a, true)
	}
	return out
}

// compactOf is the tokens' texts run together: the one token's own text,
// or one allocation of the whole length (a builder growing word by word
// took 0.57 more allocations a location event in BenchmarkHandleMix:
// 11.39 allocations an event of the mix against 11.28).
func compactOf(toks []Token) string {
	if len(toks) == 1 {
		return toks[0].Text
	}
	n := 0
	for _, t := range toks {
		n += len(t.Text)
	}
	var b strings.Builder
	b.Grow(n)
	for _, t := range toks {
		b.WriteString(t.Text)
	}
	return b.String()
}

// distancer answers whether a query word is within its typo budget of an
// indexed term, and at which distance.
type distancer interface {
	distance(q, term string) (int, bool)
}

// directDistance computes the bounded optimal-string-alignment distance.
type directDistance struct{}

func (directDistance) distance(q, term string) (int, bool) {
	k := maxEdits(q)
	if k == 0 {
		return 0, false
	}
	d := osa(q, term, k)
	return d, d <= k
}

// nameMatch is how one reading matched one form.
type nameMatch struct {
	quality float64
	method  string
	reasons []string
	// typingCounty: a county-type name matched without its suffix while
	// the last word is still being typed ("Salt La").
	typingCounty bool
}

// matchForm matches a reading against a form: every query word must match
// a distinct name word (exactly, within its typo budget, or - the last
// word only - as a prefix) and at least one word of the bare name.
func matchForm(r *Reading, f *form, dist distancer) (nameMatch, bool) {
	qt := r.Tokens
	if len(qt) == 1 && len(f.toks) >= 2 && qt[0].Text == f.compact {
		return nameMatch{quality: 0.97, method: MethodAlias, reasons: []string{"compound_name"}}, true
	}
	if len(qt) > len(f.toks) || len(f.toks) > 64 {
		return nameMatch{}, false
	}
	var used uint64
	edits, abbrev, inOrder := 0, false, true
	prefixRatio := -1.0
	lastJ := -1
	for i, q := range qt {
		bestJ, bestKind, bestD := -1, 4, 0 // kind: 0 exact in place, 1 exact, 2 fuzzy, 3 prefix
		for j, n := range f.toks {
			if used&(1<<j) != 0 {
				continue
			}
			kind, d := 4, 0
			switch {
			case q.Text == n.Text || slices.Contains(q.Alts, n.Text):
				kind = 1
				if j == lastJ+1 {
					kind = 0
				}
			case r.Compact:
				continue
			case q.Exact:
				// A trailing state kept in the name matches exactly, or,
				// as the last word, as the start of one ("Salt La" is
				// Salt Lake City being typed as much as Salt, Louisiana).
				if i == len(qt)-1 && prefixOf(q, n, len(qt), j, lastJ) {
					kind = 3
				} else {
					continue
				}
			default:
				if dd, ok := dist.distance(q.Text, n.Text); ok && len(n.Text) >= 4 {
					kind, d = 2, dd
				} else if i == len(qt)-1 && prefixOf(q, n, len(qt), j, lastJ) {
					kind = 3
				}
			}
			if kind < bestKind || (kind == bestKind && kind == 2 && d < bestD) {
				bestJ, bestKind, bestD = j, kind, d
			}
		}
		if bestJ < 0 {
			return nameMatch{}, false
		}
		n := f.toks[bestJ]
		switch bestKind {
		case 0, 1:
			if q.Surface != n.Surface && (abbreviations[q.Surface] != "" || abbreviations[n.Surface] != "") {
				abbrev = true
			}
		case 2:
			edits += bestD
		case 3:
			// One letter says nothing of the word's length: the names it
			// begins score alike, and population orders them ("St L":
			// St. Louis before St. Leo).
			prefixRatio = 0
			if p := prefixText(q); len(p) > 1 {
				prefixRatio = float64(len(p)) / float64(len(n.Text))
			}
		}
		if bestJ < lastJ {
			inOrder = false
		}
		lastJ = bestJ
		used |= 1 << bestJ
	}
	matchedCore, leading := 0, true
	for j := 0; j < f.core; j++ {
		if used&(1<<j) != 0 {
			matchedCore++
			if j > 0 && used&(1<<(j-1)) == 0 {
				leading = false
			}
		} else if used>>j != 0 {
			leading = false
		}
	}
	if matchedCore == 0 {
		return nameMatch{}, false
	}
	m := nameMatch{quality: 1, method: MethodExact}
	if edits > 0 {
		m.quality = 0.92 - 0.04*float64(edits-1)
		m.method = MethodFuzzy
		m.reasons = append(m.reasons, "typo_corrected")
	}
	if prefixRatio >= 0 {
		m.quality = min(m.quality, 0.70+0.18*prefixRatio-0.04*float64(edits))
		m.method = MethodPrefix
		m.reasons = append(m.reasons, "prefix_match")
	}
	if m.method == MethodExact {
		switch {
		case abbrev || f.alias || r.Compact:
			m.quality, m.method = 0.97, MethodAlias
			if abbrev && len(qt) == 1 && len(f.toks) == 1 && abbreviations[f.toks[0].Surface] != "" {
				// "Mount" is no way to write Montana's "MT": the places
				// that have the word come first.
				m.quality = abbrevCodeQuality
			}
			if abbrev {
				m.reasons = append(m.reasons, "abbreviation_expanded")
			} else if r.Compact {
				m.reasons = append(m.reasons, "compound_name")
			} else {
				m.reasons = append(m.reasons, "alias_name")
			}
		}
	} else if abbrev {
		m.reasons = append(m.reasons, "abbreviation_expanded")
	}
	if !inOrder {
		m.quality -= 0.05
		m.reasons = append(m.reasons, "word_order")
	}
	switch {
	case matchedCore < f.core:
		m.quality *= 0.62 + 0.3*float64(matchedCore)/float64(f.core)
		if m.method == MethodExact || m.method == MethodAlias {
			if leading {
				m.method = MethodPrefix
			} else {
				m.method = MethodFuzzy
			}
		}
		m.reasons = append(m.reasons, "partial_name")
	case bitsSet(used) < len(f.toks) && prefixRatio >= 0 && !r.County:
		// The bare name of a county while its last word is still being
		// typed ("Salt La"): the suffix is a word not yet typed, and the
		// city of the same name comes first (countyTypingPenalty).
		m.quality *= 0.62 + 0.3*float64(bitsSet(used))/float64(len(f.toks))
		m.typingCounty = true
		m.reasons = append(m.reasons, "bare_name")
	case bitsSet(used) < len(f.toks):
		// The bare name of a county ("King" for "King County").
		m.quality *= 0.9
		if m.method == MethodExact {
			m.method = MethodAlias
		}
		m.reasons = append(m.reasons, "bare_name")
	}
	if m.method == MethodExact {
		m.reasons = append(m.reasons, "exact_name")
	}
	return m, true
}

// prefixText is the text of q that must begin a name word when q is
// matched as a prefix: the word as written when it is a single letter
// (an "n" being typed may begin "new" as well as stand for "north").
func prefixText(q Token) string {
	if len(q.Surface) == 1 {
		return q.Surface
	}
	return q.Text
}

// prefixOf reports whether q, the last of words query words, may match
// the name word n (at position j; the word before q matched at lastJ) as
// a prefix. A single letter must begin the name word right after the
// words before it ("Lake Forest P": Park).
func prefixOf(q, n Token, words, j, lastJ int) bool {
	p := prefixText(q)
	if !Prefixable(len(p), words) || !strings.HasPrefix(n.Text, p) {
		return false
	}
	return len(p) > 1 || j == lastJ+1
}

func bitsSet(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}
