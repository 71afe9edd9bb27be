package resolve

import (
	"math"
	"sort"

	"github.com/permitd/permitd/readmodel"
)

// less is the ordering contract: Score descending, population descending,
// geo_id ascending.
func less(a, b *Match) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Location.Population != b.Location.Population {
		return a.Location.Population > b.Location.Population
	}
	if a.Location.GeoType == readmodel.GeoZip && b.Location.GeoType == readmodel.GeoZip && a.Location.Zipcode != b.Location.Zipcode {
		return a.Location.Zipcode < b.Location.Zipcode // the ZIPs of one prefix in code order
	}
	return a.Location.GeoID < b.Location.GeoID
}

// samePlace reports whether two locations are scopes of one place (a city
// and its jurisdiction, a county and its authority), which do not compete
// for the margin.
func samePlace(a, b *readmodel.Location) bool {
	linked := func(x, y *readmodel.Location) bool {
		return (x.CityGeoID != "" && x.CityGeoID == y.GeoID) ||
			(x.JurisdictionGeoID != "" && x.JurisdictionGeoID == y.GeoID) ||
			(x.GeoType == readmodel.GeoJurisdiction && !x.Incorporated && x.CountyGeoID != "" && x.CountyGeoID == y.GeoID)
	}
	return linked(a, b) || linked(b, a)
}

// Rank orders matches by the ordering contract, keeps at most limit, and
// assigns each its confidence and decision:
//
//   - confidence starts at Quality, less fillerConfidence (0.05) when
//     filler words of the text were dropped; halved when the text names
//     another state or ZIP place; times 0.65 when another place (not a
//     scope of the same place) scores within ambiguityMargin (reason
//     ambiguous_name); for a lower candidate, reduced with its gap to the
//     top.
//   - accept: the top candidate, matched exactly, by alias or by ZIP, not
//     ambiguous, confidence >= 0.8. reject: confidence < 0.4, or a gap of
//     0.12 or more below the top for a different place. Otherwise review.
//
// Confidence and decision read the scores without the focus boost (Base):
// a focus point orders the candidates, it does not make a name less
// ambiguous. Rank sorts matches in place.
func Rank(matches []Match, limit int) []readmodel.Candidate {
	sort.Slice(matches, func(i, j int) bool { return less(&matches[i], &matches[j]) })
	n := min(limit, len(matches))
	if n <= 0 {
		return []readmodel.Candidate{}
	}
	// byBase is the order of the scores without the focus boost; without
	// a focus it is the ranking order itself.
	var byBase []int
	for i := range matches {
		if matches[i].Base != matches[i].Score {
			byBase = make([]int, len(matches))
			for j := range byBase {
				byBase[j] = j
			}
			sort.SliceStable(byBase, func(a, b int) bool {
				x, y := &matches[byBase[a]], &matches[byBase[b]]
				if x.Base != y.Base {
					return x.Base > y.Base
				}
				return less(x, y)
			})
			break
		}
	}
	at := func(k int) int {
		if byBase == nil {
			return k
		}
		return byBase[k]
	}
	out := make([]readmodel.Candidate, n)
	top := &matches[at(0)]
	for i := 0; i < n; i++ {
		m := &matches[i]
		// Best competitor: the first other candidate that is not a scope
		// of the same place.
		var comp *Match
		for k := range matches {
			j := at(k)
			if j != i && !samePlace(matches[j].Location, m.Location) {
				comp = &matches[j]
				break
			}
		}
		reasons := append([]string(nil), m.Reasons...)
		conf := m.Quality
		if m.Dropped {
			conf -= fillerConfidence
		}
		if m.Mismatch {
			conf *= 0.5
		}
		ambiguous := comp != nil && math.Abs(m.Base-comp.Base) < ambiguityMargin
		if ambiguous {
			conf *= 0.65
			reasons = append(reasons, "ambiguous_name")
			if i == 0 && m.Location.Population > comp.Location.Population && m.Base-comp.Base < popWeight/scoreScale+1e-9 {
				reasons = append(reasons, "population_prior")
			}
		}
		gap := max(0, top.Base-m.Base)
		isTop := m == top
		related := !isTop && samePlace(top.Location, m.Location)
		if !isTop {
			if related {
				conf *= 0.85
			} else {
				conf *= max(0, 1-4*gap)
			}
		}
		conf = round4(min(1, max(0, conf)))
		decision := DecisionReview
		switch {
		case i == 0 && isTop && !ambiguous && !m.Mismatch && conf >= 0.8 &&
			(m.Method == MethodExact || m.Method == MethodAlias || m.Method == MethodPostalCode):
			decision = DecisionAccept
		case conf < 0.4, !isTop && !related && gap >= 0.12:
			decision = DecisionReject
		}
		out[i] = readmodel.Candidate{
			Location:    m.Location.Clone(),
			Score:       m.Score,
			Confidence:  conf,
			MatchMethod: m.Method,
			Decision:    decision,
			Reasons:     reasons,
		}
	}
	return out
}
