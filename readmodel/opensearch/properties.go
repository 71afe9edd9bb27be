package opensearch

import (
	"context"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
)

// Property search follows package propmatch, as the memory backend does:
// OpenSearch only fetches the properties that can match (propertyBody);
// propmatch.Match decides the match levels, confidences, ambiguity and
// order on the hits.

// SearchProperties implements readmodel.Reader with one _search.
func (s *Store) SearchProperties(ctx context.Context, q readmodel.PropertyQuery) ([]readmodel.PropertyMatch, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	pq, ok := propmatch.Parse(q)
	if !ok {
		return []readmodel.PropertyMatch{}, nil
	}
	r, err := s.search(ctx, s.read(readmodel.KindProperty), propertyBody(&pq))
	if err != nil {
		return nil, err
	}
	if err := propertyPoolComplete(r); err != nil {
		return nil, err
	}
	docs, err := decodeHits[propertyDoc](r)
	if err != nil {
		return nil, err
	}
	return matchProperties(&pq, q.Limit, docs), nil
}

// matchProperties ranks the properties fetched for q with package
// propmatch; the fetched documents serve both the street and the fuzzy
// pass.
func matchProperties(q *propmatch.Query, limit int, docs []propertyDoc) []readmodel.PropertyMatch {
	hints := q.Hints()
	var hits []propmatch.Hit[*propertyDoc]
	for i := range docs {
		d := &docs[i]
		if sc, ok := propmatch.ScoreStreet(q, hints, d.candidate()); ok {
			hits = append(hits, propmatch.Hit[*propertyDoc]{Property: d, ID: d.DocID, Score: sc})
		}
	}
	if q.Fuzzy(len(hits)) {
		for i := range docs {
			d := &docs[i]
			if sc, ok := propmatch.ScoreFuzzy(q, hints, d.candidate()); ok {
				hits = append(hits, propmatch.Hit[*propertyDoc]{Property: d, ID: d.DocID, Score: sc})
			}
		}
	}
	hits = propmatch.Rank(hits, limit)
	out := make([]readmodel.PropertyMatch, 0, len(hits))
	for _, h := range hits {
		out = append(out, q.Match(h.Property.property(), h.Score))
	}
	return out
}

// candidate is what the property scorer reads.
func (d *propertyDoc) candidate() propmatch.Candidate[string] {
	return propmatch.Candidate[string]{Canonical: d.CanonicalAddress, Norm: d.NormalizedAddress,
		Locality: propmatch.Locality[string]{City: d.CityNorm, State: d.State, Zip: d.Zipcode}}
}
