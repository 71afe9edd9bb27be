package opensearch

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/address"
)

// Property search follows the memory backend's rules exactly (see
// memory.Store.SearchProperties): OpenSearch only fetches the properties
// that can match (propertyBody); the confidence levels, the fuzzy street
// similarity and the ambiguity factor are computed here on the hits. The
// constants and similarity below mirror readmodel/memory/properties.go;
// the conformance suite keeps the two in step.

const (
	confExact      = 1.0
	confNormalized = 0.95
	confFuzzyMax   = 0.85
	confFuzzyMin   = 0.5
	fuzzyMinSim    = 0.75
	ambiguity      = 0.8
)

// lookup is a parsed property query.
type lookup struct {
	propertySearch
	normInput, typed string
}

func propertySearchOf(q readmodel.PropertyQuery) (propertySearch, bool) {
	l, ok := lookupOf(q)
	return l.propertySearch, ok
}

// lookupOf normalises a query; false when it cannot match anything (no
// house number or street name).
func lookupOf(q readmodel.PropertyQuery) (lookup, bool) {
	in := address.Normalize(q.Address)
	city := address.NormalizeCity(q.City)
	if city == "" {
		city = in.City
	}
	state := address.NormalizeState(q.State)
	if state == "" {
		state = in.State
	}
	zip := strings.TrimSpace(q.Zipcode)
	if len(zip) > 5 {
		zip = zip[:5]
	}
	if zip == "" {
		zip = in.Zip
	}
	l := lookup{
		propertySearch: propertySearch{street: in.Street(), number: in.Number, city: city, state: state, zip: zip},
		normInput:      address.Canonical(in.Line(), city, state, zip),
		typed:          strings.Join(strings.Fields(strings.ToUpper(q.Address)), " "),
	}
	return l, in.Number != "" && in.Name != ""
}

// SearchProperties implements readmodel.Reader with one _search.
func (s *Store) SearchProperties(ctx context.Context, q readmodel.PropertyQuery) ([]readmodel.PropertyMatch, error) {
	if q.Limit < 1 || q.Limit > 20 {
		return nil, fmt.Errorf("%w: property limit %d", readmodel.ErrInvalidQuery, q.Limit)
	}
	ps, ok := propertySearchOf(q)
	if !ok {
		return []readmodel.PropertyMatch{}, nil
	}
	r, err := s.search(ctx, s.read(readmodel.KindProperty), propertyBody(ps))
	if err != nil {
		return nil, err
	}
	docs, err := decodeHits[propertyDoc](r)
	if err != nil {
		return nil, err
	}
	return matchProperties(ps, q, docs), nil
}

type propertyHit struct {
	doc    propertyDoc
	conf   float64
	typ    string
	fields []string
}

// matchProperties ranks the fetched properties as the memory backend does.
func matchProperties(_ propertySearch, q readmodel.PropertyQuery, docs []propertyDoc) []readmodel.PropertyMatch {
	l, ok := lookupOf(q)
	if !ok {
		return []readmodel.PropertyMatch{}
	}
	filter := func(d propertyDoc) ([]string, bool) {
		fields := []string{"address"}
		if l.city != "" {
			if d.CityNorm != l.city {
				return nil, false
			}
			fields = append(fields, "city")
		}
		if l.state != "" {
			if d.State != l.state {
				return nil, false
			}
			fields = append(fields, "state")
		}
		if l.zip != "" {
			if d.Zipcode != "" && d.Zipcode != l.zip {
				return nil, false
			}
			if d.Zipcode == l.zip {
				fields = append(fields, "zipcode")
			}
		}
		return fields, true
	}
	var hits []propertyHit
	for _, d := range docs {
		if d.NormalizedAddress != l.street {
			continue
		}
		fields, ok := filter(d)
		if !ok {
			continue
		}
		h := propertyHit{doc: d, conf: confNormalized, typ: "normalized", fields: fields}
		if l.typed == d.CanonicalAddress || l.typed == d.NormalizedAddress {
			h.conf, h.typ = confExact, "exact"
		}
		hits = append(hits, h)
	}
	if len(hits) == 0 && l.city != "" {
		rest := strings.TrimPrefix(l.street, l.number+" ")
		for _, d := range docs {
			if houseNumber(d.NormalizedAddress) != l.number {
				continue
			}
			fields, ok := filter(d)
			if !ok {
				continue
			}
			sim := similarity(rest, strings.TrimPrefix(d.NormalizedAddress, l.number+" "))
			if sim < fuzzyMinSim {
				continue
			}
			conf := confFuzzyMin + (confFuzzyMax-confFuzzyMin)*(sim-fuzzyMinSim)/(1-fuzzyMinSim)
			hits = append(hits, propertyHit{doc: d, conf: math.Round(conf*1e4) / 1e4, typ: "fuzzy", fields: fields})
		}
	}
	if len(hits) > 1 {
		best := 0.0
		for _, h := range hits {
			best = max(best, h.conf)
		}
		tied := 0
		for _, h := range hits {
			if h.conf >= best-0.05 {
				tied++
			}
		}
		if tied > 1 {
			for i := range hits {
				hits[i].conf = math.Round(hits[i].conf*ambiguity*1e4) / 1e4
			}
		}
	}
	sort.SliceStable(hits, func(a, b int) bool {
		if hits[a].conf != hits[b].conf {
			return hits[a].conf > hits[b].conf
		}
		return hits[a].doc.PropertyID < hits[b].doc.PropertyID
	})
	out := make([]readmodel.PropertyMatch, 0, min(len(hits), q.Limit))
	for _, h := range hits[:min(len(hits), q.Limit)] {
		out = append(out, readmodel.PropertyMatch{
			Property:          h.doc.property(),
			MatchConfidence:   h.conf,
			MatchType:         h.typ,
			NormalizedInput:   l.normInput,
			MatchedFields:     h.fields,
			InputAddressShown: q.Address,
		})
	}
	return out
}

// similarity is 1 - edit distance / length of the longer string.
func similarity(a, b string) float64 {
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

// looksLikeAddress reports whether resolve text starts with a house
// number.
func looksLikeAddress(text string) bool {
	text = strings.TrimSpace(text)
	return text != "" && text[0] >= '0' && text[0] <= '9' && address.Normalize(text).Addressable()
}
