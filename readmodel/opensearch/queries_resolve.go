// Request bodies of address resolution: the candidate search, the property pool and their scoring (golden-tested like queries.go).

package opensearch

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
	"github.com/permitd/permitd/readmodel/resolve"
)

// resolvePool is how many OpenSearch hits the resolver's scorer re-ranks.
// The pool is the best by relevance (scored with the index's term
// statistics: dfs_query_then_fetch), then population: a name that
// matches whole (a short field, every word) outranks the longer names
// that share a word with it, however many they are and however populous
// (conformance resolve/large_pool).
const resolvePool = 200

// focusPivot and focusRelevance shape the focus point's share of the
// pool's relevance: distance_feature scores boost * pivot/(pivot+d), so
// a location at the focus gains focusRelevance and one 50 km away half
// of it - about one matched word's weight, enough to bring the near
// places of a broad text ("Lake P") into the pool without ranking it
// (resolve.Score does).
const (
	focusPivot     = "50km"
	focusRelevance = 5.0
)

// fuzziness mirrors the resolver's typo budget: no edit below 4 letters,
// 1 for 4-7, 2 from 8.
const fuzziness = "AUTO:4,8"

// resolveBody finds the candidates of parsed resolve text: every word of
// one reading must match a word of a name or alias (normalised, or as
// another long form of an ambiguous abbreviation, within the typo
// budget, or as a prefix for the last word of 3 letters or more, 1 or
// more after other words), or the text's ZIP a ZIP, or a ZIP prefix (text
// of 3 or 4 digits alone) the ZIPs it begins - at most 100, inside the
// pool; state and geo_type are hard filters. The readings already leave
// the text's filler words out (resolve.Parse), so "Spokane, WA, USA"
// needs no rule here. A focus point adds a distance_feature on point, so
// the pool of a broad text holds the places near it. OpenSearch's
// relevance only picks the pool: resolve.Score and resolve.Rank order it
// exactly as the memory backend does.
func resolveBody(q resolve.Query) obj {
	var should []obj
	if q.Zip != "" {
		should = append(should, term("zipcode", q.Zip))
	}
	if q.ZipPrefix != "" {
		// Cities carry a zipcode too: only ZIP locations match by code.
		should = append(should, obj{"bool": obj{"filter": []obj{
			{"prefix": obj{"zipcode": q.ZipPrefix}},
			term("geo_type", string(readmodel.GeoZip)),
		}}})
	}
	for _, r := range q.Readings {
		if r.Compact && len(r.Tokens) == 1 {
			// As the memory index reads a joined reading: a joined name,
			// or a name that has the joined word ("De Kalb" reaches
			// DeKalb County), exactly.
			c := r.Tokens[0].Text
			should = append(should, obj{"bool": obj{"minimum_should_match": 1, "should": []obj{
				compactTerms(c), {"match": obj{"names_norm": obj{"query": c}}},
			}}})
			continue
		}
		var must []obj
		for i, t := range r.Tokens {
			alts := []obj{{"match": obj{"names_norm": obj{"query": t.Text}}}}
			for _, a := range t.Alts {
				// The other long forms of an ambiguous abbreviation
				// ("pt": port), exact only as the scorer matches them.
				alts = append(alts, obj{"match": obj{"names_norm": obj{"query": a}}})
			}
			if len(r.Tokens) == 1 {
				alts = append(alts, compactTerms(t.Text))
			}
			if !t.Exact {
				alts = append(alts, obj{"match": obj{"names_norm": obj{"query": t.Text, "fuzziness": fuzziness, "max_expansions": 256}}})
			}
			if i == len(r.Tokens)-1 && resolve.Prefixable(len(t.Text), len(r.Tokens)) && len(t.Text) > 1 {
				// The last word may be one being typed, a trailing state
				// word too ("Salt La"): the scorer matches it as a prefix.
				alts = append(alts, obj{"match": obj{"names_norm.prefix": obj{"query": t.Text}}})
			}
			if i == len(r.Tokens)-1 && len(r.Tokens) > 1 && len(t.Surface) == 1 {
				// A single letter after other words ("Lake Forest P",
				// "Port W"): the start of the next name word. The edge
				// n-grams begin at 2 letters, so a term prefix query.
				alts = append(alts, obj{"prefix": obj{"names_norm": obj{"value": t.Surface}}})
			}
			must = append(must, obj{"bool": obj{"should": alts, "minimum_should_match": 1}})
		}
		if len(must) > 0 {
			should = append(should, obj{"bool": obj{"must": must}})
		}
	}
	filter := []obj{live()}
	if q.FilterState != "" {
		filter = append(filter, term("state", q.FilterState))
	}
	if q.FilterType != "" {
		filter = append(filter, term("geo_type", string(q.FilterType)))
	}
	if len(should) == 0 {
		should = append(should, obj{"match_none": obj{}})
	}
	query := obj{"bool": obj{"filter": filter, "should": should, "minimum_should_match": 1}}
	if q.Focus != nil && len(q.Readings)+len(q.Zip)+len(q.ZipPrefix) > 0 {
		// The text decides what matches (must); nearness only adds to
		// the relevance that picks the pool (should).
		query = obj{"bool": obj{
			"filter": filter,
			"must":   []obj{{"bool": obj{"should": should, "minimum_should_match": 1}}},
			"should": []obj{{"distance_feature": obj{
				"field":  "point",
				"origin": obj{"lat": q.Focus.Lat, "lon": q.Focus.Lon},
				"pivot":  focusPivot,
				"boost":  focusRelevance,
			}}},
		}}
	}
	return obj{
		"size":             resolvePool,
		"track_total_hits": false,
		"query":            query,
		"sort":             []any{obj{"_score": "desc"}, obj{"population": obj{"order": "desc", "missing": "_last"}}, obj{"geo_id": "asc"}},
	}
}

// compactTerms matches a joined word against the locations' joined
// names (the compact field: each name and alias in resolve.Normalize
// form, its words joined). The memory index's joined names drop a
// leading "City of", "Town of" or "Village of" (resolve's forms), which
// compact keeps, so the same joined word is also looked up behind those
// prefixes: "Sedrowoolley" reaches "City of Sedro-Woolley" and "dekalb"
// "City of DeKalb" as in the memory backend, with the documents as they
// are indexed (no reindex). The scorer (resolve.Score) then judges every
// hit as the memory backend does.
func compactTerms(c string) obj {
	vs := []string{c}
	for _, p := range resolve.CityOfPrefixes {
		vs = append(vs, strings.ReplaceAll(p, " ", "")+c)
	}
	return terms("compact", vs)
}

// maxPropertyScan bounds the properties one lookup reads: the candidate
// pool the shared scorer (package propmatch) ranks. The pool is complete
// or the read fails (propertyPoolComplete): every property that can be a
// street match, and when none is, every one that can be a fuzzy match, so
// the scorer sees what the memory backend's sees and the first answer
// (and the ambiguity rule, which looks at all the matches) agree.
const maxPropertyScan = 5000

// Scores of the two tiers of the property pool (constant, so the order
// does not depend on per-shard term statistics): a street match also has
// the house number, so it scores streetTier+numberTier and comes before
// every property that only shares the house number.
const (
	streetTier = 2.0
	numberTier = 1.0
)

// propertyBody fetches the properties a lookup may match, best tier
// first: the normalised street line (street tier), then, with a city,
// the same house number in that city with a street name whose length
// allows the fuzzy pass's similarity (fuzzyLengths); city, state and ZIP
// hints are filters (a property without a ZIP passes the ZIP filter).
// Within a tier, doc_id (the property id) ascending; the total is tracked
// so an incomplete pool is seen.
func propertyBody(q *propmatch.Query) obj {
	filter := []obj{live()}
	if q.City != "" {
		filter = append(filter, term("city_norm", q.City))
	}
	if q.State != "" {
		filter = append(filter, term("state", q.State))
	}
	if q.Zip != "" {
		filter = append(filter, obj{"bool": obj{"should": []obj{
			term("zipcode", q.Zip),
			{"bool": obj{"must_not": []obj{{"exists": obj{"field": "zipcode"}}}}},
		}, "minimum_should_match": 1}})
	}
	should := []obj{{"constant_score": obj{"filter": term("normalized_address", q.Street), "boost": streetTier}}}
	if q.City != "" {
		lo, hi := fuzzyLengths(streetName(q.Street, q.Number))
		should = append(should, obj{"constant_score": obj{"filter": obj{"bool": obj{"filter": []obj{
			term("house_number", q.Number),
			{"range": obj{"street_len": obj{"gte": lo, "lte": hi}}},
		}}}, "boost": numberTier}})
	}
	return obj{
		"size":             maxPropertyScan,
		"track_total_hits": maxPropertyScan + 1,
		"query":            obj{"bool": obj{"filter": filter, "should": should, "minimum_should_match": 1}},
		"sort":             []any{obj{"_score": "desc"}, obj{"doc_id": "asc"}},
	}
}

// streetName is a street line without its house number, as the fuzzy
// pass compares it.
func streetName(street, number string) string {
	if rest, ok := strings.CutPrefix(street, number+" "); ok && number != "" {
		return rest
	}
	return street
}

// fuzzyLengths bounds the street name length (in runes) of a property the
// fuzzy pass can match for a query street name: similarity is 1 - edit
// distance / longer length and must reach propmatch.FuzzyMinSim (3/4),
// and the distance is at least the length difference, so a length L
// outside [3n/4, 4n/3] can never match a name of n runes. The bounds are
// widened by one against rounding; the scorer decides.
func fuzzyLengths(name string) (lo, hi int) {
	n := utf8.RuneCountInString(name)
	return max(0, 3*n/4-1), 4*n/3 + 1
}

// propertyPoolComplete fails a property pool that may miss a candidate:
// more properties matched than were returned, and the last one returned
// is still in the street tier (street matches were cut), or no street
// match came back (the fuzzy candidates were cut).
func propertyPoolComplete(r *searchResult) error {
	n := len(r.Hits.Hits)
	if r.Hits.Total == nil || r.Hits.Total.Value <= int64(n) {
		return nil
	}
	streetFirst, streetLast := n > 0 && hitScore(r, 0) >= streetTier, n > 0 && hitScore(r, n-1) >= streetTier
	if streetFirst && !streetLast {
		return nil // every street match is in; the fuzzy pass will not run
	}
	return fmt.Errorf("opensearch: property candidates overflow maxPropertyScan: more than %d match", n)
}

// hitScore is hit i's first sort value (its _score in propertyBody).
func hitScore(r *searchResult, i int) float64 {
	if len(r.Hits.Hits[i].Sort) == 0 {
		return 0
	}
	switch v := r.Hits.Hits[i].Sort[0].(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case float64:
		return v
	}
	return 0
}
