package propmatch

import (
	"cmp"
	"slices"

	"github.com/permitd/permitd/readmodel"
)

// AcceptConfidence is the match confidence from which a property resolve
// candidate is accepted; below it the decision is review.
const AcceptConfidence = 0.9

// ResolveCandidate presents a property match as a resolve candidate of
// the property scope: loc is the property as a location
// (readmodel.PropertyLocation), match_method address, score and
// confidence the match confidence, reason address_<match type>.
func ResolveCandidate(m readmodel.PropertyMatch, loc readmodel.Location) readmodel.Candidate {
	decision := "review"
	if m.MatchConfidence >= AcceptConfidence {
		decision = "accept"
	}
	return readmodel.Candidate{
		Location:    loc,
		Score:       m.MatchConfidence,
		Confidence:  m.MatchConfidence,
		MatchMethod: "address",
		Decision:    decision,
		Reasons:     []string{"address_" + m.MatchType},
	}
}

// MergeCandidates ranks property and location candidates together in the
// order of readmodel.Reader.ResolveCandidates (score descending,
// population descending, geo_id ascending) and keeps limit. It may reuse
// props' backing array.
func MergeCandidates(props, locs []readmodel.Candidate, limit int) []readmodel.Candidate {
	out := append(props, locs...)
	slices.SortStableFunc(out, func(x, y readmodel.Candidate) int {
		if c := cmp.Compare(y.Score, x.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(y.Location.Population, x.Location.Population); c != 0 {
			return c
		}
		return cmp.Compare(x.Location.GeoID, y.Location.GeoID)
	})
	return out[:min(len(out), limit)]
}
