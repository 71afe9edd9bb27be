package propmatch

import (
	"math"
	"slices"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// Confidences and thresholds (see the package documentation).
const (
	ConfExact      = 1.0
	ConfNormalized = 0.95
	ConfFuzzyMax   = 0.85
	ConfFuzzyMin   = 0.5
	FuzzyMinSim    = 0.75 // street similarity below this is not plausible
	Ambiguity      = 0.8  // factor when several properties match equally well
	AmbiguityBand  = 0.05 // "equally well": within this of the best
)

// Match types, as readmodel.PropertyMatch.MatchType.
const (
	TypeExact      = "exact"
	TypeNormalized = "normalized"
	TypeFuzzy      = "fuzzy"
)

// Locality is a property's city (address.NormalizeCity form), state and
// ZIP, or a query's hints, in the backend's representation T: strings,
// or interned symbols. The zero value of T means absent.
type Locality[T comparable] struct {
	City, State, Zip T
}

// Filter applies the hints to a property's locality: a hint the property
// does not share rejects it, except that a property without a ZIP passes
// the ZIP hint. fields are "address" and each hint the property shares,
// in the order city, state, zipcode; a fresh slice per call.
func Filter[T comparable](hints, p Locality[T]) (fields []string, ok bool) {
	var zero T
	if hints.City != zero && p.City != hints.City ||
		hints.State != zero && p.State != hints.State ||
		hints.Zip != zero && p.Zip != zero && p.Zip != hints.Zip {
		return nil, false
	}
	fields = make([]string, 1, 4)
	fields[0] = "address"
	if hints.City != zero {
		fields = append(fields, "city")
	}
	if hints.State != zero {
		fields = append(fields, "state")
	}
	if hints.Zip != zero && p.Zip == hints.Zip {
		fields = append(fields, "zipcode")
	}
	return fields, true
}

// Candidate is what the scorer reads of a property.
type Candidate[T comparable] struct {
	Canonical string // canonical address
	Norm      string // normalised street line
	Locality  Locality[T]
}

// Score is how one property matches a query.
type Score struct {
	Confidence float64
	Type       string   // TypeExact, TypeNormalized or TypeFuzzy
	Fields     []string // see Filter
}

// ScoreStreet scores a property of the street pass, one whose street
// line may be q.Street: exact or normalized; false when the street lines
// differ or a hint rejects it (Filter; hints in the backend's
// representation, Query.Hints for strings).
func ScoreStreet[T comparable](q *Query, hints Locality[T], c Candidate[T]) (Score, bool) {
	if c.Norm != q.Street {
		return Score{}, false
	}
	fields, ok := Filter(hints, c.Locality)
	if !ok {
		return Score{}, false
	}
	if q.Typed == c.Canonical || q.Typed == c.Norm {
		return Score{Confidence: ConfExact, Type: TypeExact, Fields: fields}, true
	}
	return Score{Confidence: ConfNormalized, Type: TypeNormalized, Fields: fields}, true
}

// Fuzzy reports whether the fuzzy pass runs after a street pass that
// matched n properties: only when it matched none and q has a city.
func (q *Query) Fuzzy(n int) bool { return n == 0 && q.City != "" }

// ScoreFuzzy scores a property of the fuzzy pass, one that may have the
// house number q.Number in the city q.City: false unless the house
// numbers are equal, the hints pass and the streets are similar enough
// (FuzzyConfidence).
func ScoreFuzzy[T comparable](q *Query, hints Locality[T], c Candidate[T]) (Score, bool) {
	if HouseNumber(c.Norm) != q.Number {
		return Score{}, false
	}
	fields, ok := Filter(hints, c.Locality)
	if !ok {
		return Score{}, false
	}
	conf, ok := FuzzyConfidence(Similarity(q.name, trimNumber(c.Norm, q.Number)))
	if !ok {
		return Score{}, false
	}
	return Score{Confidence: conf, Type: TypeFuzzy, Fields: fields}, true
}

// Hit is a scored property: P is the backend's handle (an index entry, a
// document), ID its property_id.
type Hit[P any] struct {
	Property P
	ID       string
	Score
}

// Rank applies the ambiguity factor to all the hits of a query, orders
// them by confidence descending then ID ascending and keeps limit. It
// reorders hits in place and returns a prefix of it.
func Rank[P any](hits []Hit[P], limit int) []Hit[P] {
	penalize(hits)
	slices.SortStableFunc(hits, func(a, b Hit[P]) int {
		switch {
		case a.Confidence > b.Confidence:
			return -1
		case a.Confidence < b.Confidence:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return hits[:min(len(hits), limit)]
}

// Match presents a scored property as a search result.
func (q *Query) Match(p readmodel.Property, s Score) readmodel.PropertyMatch {
	return readmodel.PropertyMatch{
		Property:          p,
		MatchConfidence:   s.Confidence,
		MatchType:         s.Type,
		NormalizedInput:   q.NormalizedInput,
		MatchedFields:     s.Fields,
		InputAddressShown: q.Address,
	}
}

// FuzzyConfidence maps a street similarity to a fuzzy match confidence,
// linearly from ConfFuzzyMin at FuzzyMinSim to ConfFuzzyMax at 1, rounded
// to 4 decimals; false below FuzzyMinSim.
func FuzzyConfidence(sim float64) (float64, bool) {
	if sim < FuzzyMinSim {
		return 0, false
	}
	conf := ConfFuzzyMin + (ConfFuzzyMax-ConfFuzzyMin)*(sim-FuzzyMinSim)/(1-FuzzyMinSim)
	return round4(conf), true
}

// penalize multiplies every confidence by Ambiguity when more than one
// hit lies within AmbiguityBand of the best.
func penalize[P any](hits []Hit[P]) {
	if len(hits) < 2 {
		return
	}
	best := 0.0
	for _, h := range hits {
		best = max(best, h.Confidence)
	}
	tied := 0
	for _, h := range hits {
		if h.Confidence >= best-AmbiguityBand {
			tied++
		}
	}
	if tied < 2 {
		return
	}
	for i := range hits {
		hits[i].Confidence = round4(hits[i].Confidence * Ambiguity)
	}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// Similarity is 1 - Levenshtein distance / length of the longer string,
// both in runes: 1 for equal strings, 0 when one is empty.
func Similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 || len(rb) == 0 {
		return 0
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(rb)])/float64(max(len(ra), len(rb)))
}
