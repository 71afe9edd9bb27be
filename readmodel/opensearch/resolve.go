// Address resolution: candidate properties for an address query.

package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
	"github.com/permitd/permitd/readmodel/resolve"
)

// ResolveCandidates implements readmodel.Reader. One _msearch fetches the
// fuzzy location pool (resolveBody) and, for address-like text, the
// property candidates; resolve.Score and resolve.Rank order the pool as
// the memory backend's resolver does. Property candidates need a second
// _msearch for their hierarchy and permit counts (propertyCandidates).
func (s *Store) ResolveCandidates(ctx context.Context, q readmodel.ResolveQuery) ([]readmodel.Candidate, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	pq := resolve.ParseQuery(q)
	withProps := (q.GeoType == "" || q.GeoType == readmodel.GeoProperty) && propmatch.LooksLikeAddress(q.Text)
	withLocs := q.GeoType != readmodel.GeoProperty
	var reqs []msearchReq
	if withLocs {
		reqs = append(reqs, msearchReq{index: s.read(readmodel.KindLocation), body: resolveBody(pq), dfs: true})
	}
	var propQ propmatch.Query
	var psOK bool
	if withProps {
		propQ, psOK = propmatch.Parse(readmodel.PropertyQuery{Address: q.Text, State: q.State, Limit: q.Limit})
		if psOK {
			reqs = append(reqs, msearchReq{index: s.read(readmodel.KindProperty), body: propertyBody(&propQ)})
		}
	}
	if len(reqs) == 0 {
		return []readmodel.Candidate{}, nil
	}
	rs, err := s.msearch(ctx, reqs...)
	if err != nil {
		return nil, err
	}
	var ranked []readmodel.Candidate
	if withLocs {
		docs, err := decodeHits[locationDoc](rs[0])
		if err != nil {
			return nil, err
		}
		var matches []resolve.Match
		for _, d := range docs {
			if m, ok := resolve.Score(pq, d.location()); ok {
				matches = append(matches, m)
			}
		}
		ranked = resolve.Rank(matches, q.Limit)
		rs = rs[1:]
	}
	var props []readmodel.Candidate
	if psOK {
		// A pool that may have been cut fails rather than answering
		// without the property that should rank first (as
		// SearchProperties does).
		if err := propertyPoolComplete(rs[0]); err != nil {
			return nil, err
		}
		docs, err := decodeHits[propertyDoc](rs[0])
		if err != nil {
			return nil, err
		}
		matches := matchProperties(&propQ, q.Limit, docs)
		if props, err = s.propertyCandidates(ctx, matches); err != nil {
			return nil, err
		}
	}
	if q.GeoType == readmodel.GeoProperty {
		if props == nil {
			props = []readmodel.Candidate{}
		}
		return props, nil
	}
	if len(props) == 0 {
		return ranked, nil
	}
	return propmatch.MergeCandidates(props, ranked, q.Limit), nil
}

// propertyCandidates presents property matches as resolve candidates
// (propmatch.ResolveCandidate), with one _msearch for their linked
// locations and permit counts.
func (s *Store) propertyCandidates(ctx context.Context, matches []readmodel.PropertyMatch) ([]readmodel.Candidate, error) {
	if len(matches) == 0 {
		return nil, nil
	}
	var geoIDs, propIDs []string
	for _, m := range matches {
		propIDs = append(propIDs, m.Property.PropertyID)
		for _, g := range m.Property.GeoLinks {
			geoIDs = append(geoIDs, g.GeoID)
		}
	}
	slices.Sort(geoIDs) // matches of one street share their city, county and state
	geoIDs = slices.Compact(geoIDs)
	reqs := []msearchReq{{index: s.read(readmodel.KindPermit), body: propertyPermitStatsBody(propIDs)}}
	if len(geoIDs) > 0 {
		reqs = append(reqs, msearchReq{index: s.read(readmodel.KindLocation), body: locationsByIDBody(geoIDs)})
	}
	rs, err := s.msearch(ctx, reqs...)
	if err != nil {
		return nil, err
	}
	var locs []locationDoc
	if len(rs) > 1 {
		if locs, err = decodeHits[locationDoc](rs[1]); err != nil {
			return nil, err
		}
	}
	var agg struct {
		Buckets []struct {
			Key      string          `json:"key"`
			DocCount int64           `json:"doc_count"`
			Latest   json.RawMessage `json:"latest"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal(rs[0].Aggregations["by_property"], &agg); err != nil {
		return nil, fmt.Errorf("opensearch: property permit counts: %w", err)
	}
	type pc struct {
		n      int64
		latest string
	}
	counts := map[string]pc{}
	for _, b := range agg.Buckets {
		var l struct {
			Value *float64 `json:"value"`
		}
		_ = json.Unmarshal(b.Latest, &l)
		c := pc{n: b.DocCount}
		if l.Value != nil {
			c.latest = epochDay(*l.Value)
		}
		counts[b.Key] = c
	}
	look := locationLookup(locs)
	out := make([]readmodel.Candidate, 0, len(matches))
	for _, m := range matches {
		c := counts[m.Property.PropertyID]
		out = append(out, propmatch.ResolveCandidate(m, readmodel.PropertyLocation(m.Property, look, c.n, c.latest)))
	}
	return out, nil
}
