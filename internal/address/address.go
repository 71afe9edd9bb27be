// Package address normalises US street addresses the way USPS
// Publication 28 writes them, so that the importers that create properties
// and the read side that searches them derive the same property from the
// same place: "600 University Street, Seattle" and "600 UNIVERSITY ST" in
// Seattle, WA are one property.
//
// Normalisation upper-cases, folds common Latin accents, drops periods and
// apostrophes, collapses whitespace, and abbreviates street suffixes
// (STREET -> ST), directionals (NORTHEAST -> NE, before or after the name),
// secondary unit designators (SUITE -> STE, "#5" -> "# 5") and spelled
// ordinals (FIRST -> 1ST). It is a parser of habits, not a CASS-certified
// matcher: it knows no street list, so a directional word before a name is
// always read as a directional ("EAST MARGINAL WAY S" -> "E MARGINAL WAY S"),
// and an input without commas is split into street and locality only after
// a street suffix, when a state or ZIP closes it or one to three plain
// words follow ("600 UNIVERSITY ST SEATTLE").
package address

import (
	"strconv"
	"strings"

	"github.com/permitd/permitd/events"
)

// Parsed is a normalised address. Every field is upper case and
// abbreviated; empty fields are absent from the input.
type Parsed struct {
	Number   string // house number, with a fraction: "600", "1515P", "12 1/2"
	PreDir   string // "N", "NE", ...
	Name     string // street name: "UNIVERSITY", "M L KING JR", "1ST"
	Suffix   string // "ST", "AVE", ...
	PostDir  string
	UnitType string // "APT", "STE", "UNIT", "#", ...
	Unit     string // "5", "200A"; empty for designators such as "PH"

	// City, State (USPS code) and Zip (5 digits) come from a locality tail
	// ("..., Seattle, WA 98101"); empty when the input had none.
	City  string
	State string
	Zip   string
}

// Street is the normalised street line without the unit:
// "600 UNIVERSITY ST".
func (p Parsed) Street() string {
	return join(p.Number, p.PreDir, p.Name, p.Suffix, p.PostDir)
}

// Line is the normalised street line with the unit:
// "600 UNIVERSITY ST STE 200".
func (p Parsed) Line() string {
	return join(p.Number, p.PreDir, p.Name, p.Suffix, p.PostDir, p.UnitType, p.Unit)
}

// Canonical is the one-line postal form "LINE, CITY, ST ZIP", leaving out
// what is unknown: "600 UNIVERSITY ST, SEATTLE, WA 98101".
func (p Parsed) Canonical() string {
	return Canonical(p.Line(), p.City, p.State, p.Zip)
}

// Canonical formats a normalised street line and locality as
// "LINE, CITY, ST ZIP", leaving out empty parts.
func Canonical(line, city, state, zip string) string {
	var b strings.Builder
	b.WriteString(line)
	if city != "" {
		b.WriteString(", ")
		b.WriteString(city)
	}
	if sz := join(state, zip); sz != "" {
		b.WriteString(", ")
		b.WriteString(sz)
	}
	return strings.TrimPrefix(b.String(), ", ")
}

// Addressable reports whether p names a single building: a house number
// and a street name.
func (p Parsed) Addressable() bool { return p.Number != "" && p.Name != "" }

// PropertyIdentity is the identity from which events.PropertyID derives a
// property's id when no parcel is known: "addr:<street>|<city>|<state>",
// e.g. "addr:600 UNIVERSITY ST|SEATTLE|WA". The unit is not part of it: a
// property is the building, and the permits of its suites are its history.
// city and state override p.City and p.State when non-empty; both are
// normalised (NormalizeCity, NormalizeState). The identity is "" when p is
// not Addressable or no city or state is known, so no property can be
// derived from it.
func PropertyIdentity(p Parsed, city, state string) string {
	city, state = NormalizeCity(city), NormalizeState(state)
	if city == "" {
		city = p.City
	}
	if state == "" {
		state = p.State
	}
	if !p.Addressable() || city == "" || state == "" {
		return ""
	}
	return "addr:" + p.Street() + "|" + city + "|" + state
}

// PropertyID is events.PropertyID(PropertyIdentity(p, city, state)), or ""
// when the identity is "".
func PropertyID(p Parsed, city, state string) string {
	id := PropertyIdentity(p, city, state)
	if id == "" {
		return ""
	}
	return events.PropertyID(id)
}

// NormalizeCity upper-cases a city name, folds accents, drops periods and
// apostrophes and collapses whitespace: "St. Louis" -> "ST LOUIS".
func NormalizeCity(s string) string {
	return strings.Join(tokenize(s), " ")
}

// NormalizeZip returns the first five digits of a US ZIP ("98101-1234"
// -> "98101", "98101.0" -> "98101"), "" when it does not start with five
// digits: the zipcode_norm form of leads, and the ZIP pipelines count by.
func NormalizeZip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) < 5 {
		return ""
	}
	for i := 0; i < 5; i++ {
		if s[i] < '0' || s[i] > '9' {
			return ""
		}
	}
	return s[:5]
}

// NormalizeState returns the USPS code of a state or territory given as a
// code or a name in any case ("Washington", "wa" -> "WA"); other input is
// returned normalised like a city name.
func NormalizeState(s string) string {
	n := NormalizeCity(s)
	if code, ok := states[n]; ok {
		return code
	}
	return n
}

// Normalize parses and normalises one free-form address: a street line,
// optionally followed by a unit and a locality, either comma-separated
// ("600 University Street, Suite 200, Seattle, WA 98101-1234") or, when a
// state or ZIP closes it, without commas ("600 University St Seattle WA").
// It never fails; what it cannot place stays in Name.
func Normalize(input string) Parsed {
	parts := strings.Split(input, ",")
	street := tokenize(parts[0])
	var tail []string
	for _, part := range parts[1:] {
		t := tokenize(part)
		if len(t) == 0 {
			continue
		}
		if len(tail) == 0 && isUnitPart(t) {
			street = append(street, t...)
			continue
		}
		tail = append(tail, t...)
	}
	if len(parts) == 1 {
		street, tail = splitLocality(street)
	}
	p := parseStreet(street)
	if len(tail) > 0 {
		p.City, p.State, p.Zip = parseLocality(tail, len(parts) > 1)
	}
	return p
}

// splitLocality splits a comma-less input at the end of the street (its
// suffix, a directional after it, and a unit) when what follows closes with
// a state or a ZIP.
func splitLocality(tokens []string) (street, tail []string) {
	end := -1
	for j := 2; j < len(tokens); j++ {
		if _, ok := suffixes[tokens[j]]; !ok {
			continue
		}
		if end < 0 {
			end = j
		}
		if j+1 < len(tokens) {
			if _, next := suffixes[tokens[j+1]]; next {
				continue
			}
		}
		end = j
		break
	}
	if end < 0 || end == len(tokens)-1 {
		return tokens, nil
	}
	if _, ok := directionalAt(tokens, end+1); ok && end+2 < len(tokens) {
		end++
	}
	if end+2 < len(tokens) && isUnitPart(tokens[end+1:end+3]) {
		end += 2
	}
	if end >= len(tokens)-1 {
		return tokens, nil
	}
	tail = tokens[end+1:]
	if _, state, zip := parseLocality(tail, false); state == "" && zip == "" && !cityWords(tail) {
		return tokens, nil
	}
	return tokens[:end+1], tail
}

// cityWords reports whether the words after a street can only be a city:
// one to three words of letters, none a directional, unit designator or
// street suffix ("600 UNIVERSITY ST SEATTLE", but not "301 2ND AV ET S").
func cityWords(t []string) bool {
	if len(t) == 0 || len(t) > 3 {
		return false
	}
	for _, w := range t {
		for i := 0; i < len(w); i++ {
			if w[i] < 'A' || w[i] > 'Z' {
				return false
			}
		}
		_, dir := directionals[w]
		_, unit := units[w]
		_, suf := suffixes[w]
		if dir || unit || suf {
			return false
		}
	}
	return true
}

// parseLocality reads "CITY STATE ZIP" tokens from the end. A lone state
// name is read as a city ("WASHINGTON" may be either) unless a ZIP follows
// or comma says it stands on its own as a two-letter code.
func parseLocality(tokens []string, commas bool) (city, state, zip string) {
	if n := len(tokens); n > 0 && isZip(tokens[n-1]) {
		zip = tokens[n-1][:5]
		tokens = tokens[:n-1]
	}
	for k := min(maxStateWords, len(tokens)); k >= 1; k-- {
		cand := strings.Join(tokens[len(tokens)-k:], " ")
		code, ok := states[cand]
		if !ok {
			continue
		}
		alone := k == len(tokens)
		if alone && zip == "" && !(commas && len(cand) == 2) {
			continue
		}
		state = code
		tokens = tokens[:len(tokens)-k]
		break
	}
	return strings.Join(tokens, " "), state, zip
}

func isZip(t string) bool {
	if len(t) != 5 && len(t) != 10 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if i == 5 && t[i] == '-' {
			continue
		}
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// parseStreet splits street tokens into number, predirectional, name,
// suffix, postdirectional and unit.
func parseStreet(t []string) Parsed {
	var p Parsed
	t = p.takeUnit(t)
	if len(t) > 0 && startsWithDigit(t[0]) {
		p.Number = t[0]
		t = t[1:]
		if len(t) > 1 && strings.Contains(t[0], "/") {
			p.Number += " " + t[0]
			t = t[1:]
		}
	}
	if len(t) >= 2 {
		if d, n := directionalBack(t); n > 0 && len(t) > n {
			p.PostDir = d
			t = t[:len(t)-n]
		}
	}
	if len(t) >= 2 {
		if s, ok := suffixes[t[len(t)-1]]; ok {
			p.Suffix = s
			t = t[:len(t)-1]
		}
	}
	if len(t) >= 2 {
		if d, n := directionalFront(t); n > 0 && len(t) > n {
			p.PreDir = d
			t = t[n:]
		}
	}
	p.Name = strings.Join(ordinals(t), " ")
	return p
}

// takeUnit removes a trailing secondary unit ("APT 5", "STE 200 A", "# 3",
// "PH") after at least a number and a name, and returns the rest.
func (p *Parsed) takeUnit(t []string) []string {
	for i := len(t) - 1; i >= 2; i-- {
		std, ok := units[t[i]]
		if !ok {
			continue
		}
		rest := t[i+1:]
		if std != "#" && len(rest) > 0 && rest[0] == "#" {
			rest = rest[1:]
		}
		switch {
		case len(rest) == 0 && unitsWithoutNumber[std]:
		case len(rest) >= 1 && len(rest) <= 2 && unitValue(rest):
		default:
			continue
		}
		if std == "#" && i > 2 {
			if prev, ok := units[t[i-1]]; ok && prev != "#" {
				std, i = prev, i-1
			}
		}
		p.UnitType, p.Unit = std, strings.Join(rest, "")
		return t[:i]
	}
	return t
}

// isUnitPart reports whether t is a whole secondary unit: a designator
// and a unit number ("STE 200", "APT # 5", "# 5"), or a designator that
// needs none ("PH"). "LOWER BURRELL" is a city, not a unit.
func isUnitPart(t []string) bool {
	if len(t) == 0 {
		return false
	}
	std, ok := units[t[0]]
	if !ok {
		return false
	}
	rest := t[1:]
	if std != "#" && len(rest) > 0 && rest[0] == "#" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return unitsWithoutNumber[std]
	}
	return len(rest) <= 2 && unitValue(rest)
}

// unitValue reports whether tokens read as a unit number: each has a digit
// or is a single letter.
func unitValue(t []string) bool {
	for _, s := range t {
		if len(s) != 1 && !strings.ContainsAny(s, "0123456789") {
			return false
		}
	}
	return true
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// directionalAt returns the directional at t[i] alone.
func directionalAt(t []string, i int) (string, bool) {
	if i < 0 || i >= len(t) {
		return "", false
	}
	d, ok := directionals[t[i]]
	return d, ok
}

// compound joins a north/south and an east/west directional ("NORTH EAST",
// "N E") into one ("NE").
func compound(a, b string) (string, bool) {
	da, oka := directionals[a]
	db, okb := directionals[b]
	if oka && okb && (da == "N" || da == "S") && (db == "E" || db == "W") {
		return da + db, true
	}
	return "", false
}

// directionalFront reads a predirectional of one or two tokens; n is the
// number of tokens it used (0 when none).
func directionalFront(t []string) (string, int) {
	if len(t) >= 3 {
		if d, ok := compound(t[0], t[1]); ok {
			return d, 2
		}
	}
	if d, ok := directionalAt(t, 0); ok {
		return d, 1
	}
	return "", 0
}

// directionalBack reads a postdirectional of one or two tokens.
func directionalBack(t []string) (string, int) {
	n := len(t)
	if n >= 3 {
		if d, ok := compound(t[n-2], t[n-1]); ok {
			return d, 2
		}
	}
	if d, ok := directionalAt(t, n-1); ok {
		return d, 1
	}
	return "", 0
}

// ordinals rewrites spelled ordinals as numbers ("FIRST" -> "1ST",
// "TWENTY FIRST" -> "21ST") and old forms ("2D" -> "2ND").
func ordinals(t []string) []string {
	out := make([]string, 0, len(t))
	for i := 0; i < len(t); i++ {
		w := t[i]
		if n, ok := tens[w]; ok && i+1 < len(t) {
			if m, ok := ordinalWords[t[i+1]]; ok && m < 10 {
				out = append(out, ordinal(n+m))
				i++
				continue
			}
		}
		if n, ok := ordinalWords[w]; ok {
			out = append(out, ordinal(n))
			continue
		}
		if l := len(w); l >= 2 && (w[l-1] == 'D') && allDigits(w[:l-1]) {
			if n, err := strconv.Atoi(w[:l-1]); err == nil && (n%10 == 2 || n%10 == 3) {
				out = append(out, ordinal(n))
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

func ordinal(n int) string {
	s := strconv.Itoa(n)
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return s + "TH"
	case n%10 == 1:
		return s + "ST"
	case n%10 == 2:
		return s + "ND"
	case n%10 == 3:
		return s + "RD"
	}
	return s + "TH"
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func join(parts ...string) string {
	var b strings.Builder
	for _, s := range parts {
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}
