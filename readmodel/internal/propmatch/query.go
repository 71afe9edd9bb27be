// Package propmatch is permitd's property matcher: it decides which stored
// properties an address names and how confidently, the same way for every
// backend, as package resolve does for locations. A backend fetches the
// candidates its own way (the memory backend walks hash chains with
// interned symbols, the OpenSearch backend runs one _search) and scores
// and ranks them here:
//
//	q, ok := Parse(pq)             // false: no house number or street name
//	for each street candidate c:   s, ok := ScoreStreet(&q, hints, c)
//	if q.Fuzzy(len(hits)) {
//		for each house candidate c: s, ok := ScoreFuzzy(&q, hints, c)
//	}
//	for _, h := range Rank(hits, pq.Limit) { q.Match(property, h.Score) }
//
// # Parsing
//
// The address is normalised with package address (USPS Publication 28),
// its locality tail ("..., Seattle, WA 98101") read as hints; q.City,
// q.State and q.Zipcode of the request override those (the ZIP cut to 5
// digits). An input without a house number or a street name matches
// nothing.
//
// # Matching
//
// Best first:
//
//   - exact (1.0): the input, upper-cased with whitespace collapsed, is the
//     canonical address or the normalised street line;
//   - normalized (0.95): the normalised street lines are equal;
//   - fuzzy (0.5..0.85): same house number and city, street similarity
//     (1 - edit distance / longer length, on the street line without the
//     number) at least 0.75, scaled linearly; only when nothing matched
//     above and a city is known.
//
// City, state and ZIP hints are filters (a property without a ZIP passes
// the ZIP filter); MatchedFields lists "address" and each hint the
// property has ("city", "state", "zipcode"). When several properties match
// within 0.05 of the best confidence, every confidence is multiplied by
// 0.8: the input is ambiguous. Confidences are rounded to 4 decimals.
//
// # Ordering
//
// Confidence descending, property_id ascending, at most the limit.
//
// Why a package and not package address: address is the postal
// normaliser the importers share with the read side and knows nothing of
// queries, confidences or readmodel; this package is read-side ranking
// policy, the property counterpart of package resolve.
package propmatch

import (
	"strings"

	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/readmodel"
)

// Query is a parsed property query. Every field but Address is upper
// case and normalised.
type Query struct {
	Address string // the input as given, echoed as InputAddressShown
	Street  string // normalised street line without the unit: "600 UNIVERSITY ST"
	Number  string // house number: "600"
	City    string // city hint, address.NormalizeCity form; "" when none
	State   string // USPS state code hint; "" when none
	Zip     string // 5-digit ZIP hint; "" when none

	// Typed is the input upper-cased with whitespace collapsed, the form
	// an exact match compares.
	Typed string
	// NormalizedInput is the input in canonical postal form with the
	// hints: "600 UNIVERSITY ST, SEATTLE, WA 98101".
	NormalizedInput string

	name string // Street without Number: what the fuzzy pass compares
}

// Parse normalises a property query. It reports false when the address
// cannot match anything (no house number or no street name); the Query is
// filled in either way.
func Parse(pq readmodel.PropertyQuery) (Query, bool) {
	in := address.Normalize(pq.Address)
	city := address.NormalizeCity(pq.City)
	if city == "" {
		city = in.City
	}
	state := address.NormalizeState(pq.State)
	if state == "" {
		state = in.State
	}
	zip := strings.TrimSpace(pq.Zipcode)
	if len(zip) > 5 {
		zip = zip[:5]
	}
	if zip == "" {
		zip = in.Zip
	}
	q := Query{
		Address:         pq.Address,
		Street:          in.Street(),
		Number:          in.Number,
		City:            city,
		State:           state,
		Zip:             zip,
		Typed:           strings.Join(strings.Fields(strings.ToUpper(pq.Address)), " "),
		NormalizedInput: address.Canonical(in.Line(), city, state, zip),
	}
	q.name = trimNumber(q.Street, q.Number)
	return q, in.Number != "" && in.Name != ""
}

// Hints are the query's city, state and ZIP as strings, for a backend
// whose properties hold them as strings (see Filter).
func (q Query) Hints() Locality[string] {
	return Locality[string]{City: q.City, State: q.State, Zip: q.Zip}
}

// LooksLikeAddress reports whether free text (a resolve query) starts
// with a house number and names a street, so that it is worth a property
// search.
func LooksLikeAddress(text string) bool {
	text = strings.TrimSpace(text)
	return text != "" && text[0] >= '0' && text[0] <= '9' && address.Normalize(text).Addressable()
}

// HouseNumber is the leading number of a normalised street line
// ("600 UNIVERSITY ST" -> "600"); "" when the line does not start with a
// digit.
func HouseNumber(street string) string {
	n, _, _ := strings.Cut(street, " ")
	if n == "" || n[0] < '0' || n[0] > '9' {
		return ""
	}
	return n
}

// trimNumber is strings.TrimPrefix(street, number+" ") without building
// the prefix.
func trimNumber(street, number string) string {
	if len(street) > len(number) && street[len(number)] == ' ' && street[:len(number)] == number {
		return street[len(number)+1:]
	}
	return street
}
