// Permit leads and stats reads: the aggregations, the spelling of top values and their decoding.

package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// PermitLeads implements readmodel.Reader (one _msearch: the anchor
// location's existence and the page).
func (s *Store) PermitLeads(ctx context.Context, q readmodel.LeadQuery) (readmodel.LeadPage, error) {
	if err := q.Validate(); err != nil {
		return readmodel.LeadPage{}, err
	}
	body, err := leadPageBody(q)
	if err != nil {
		return readmodel.LeadPage{}, err
	}
	rs, err := s.msearch(ctx,
		msearchReq{index: s.read(readmodel.KindLocation), body: byIDBody(q.Filter.Geo.ID())},
		msearchReq{index: s.read(readmodel.KindLead), body: body})
	if err != nil {
		return readmodel.LeadPage{}, err
	}
	loc, err := anchor(rs[0])
	if err != nil {
		return readmodel.LeadPage{}, err
	}
	docs, err := decodeHits[leadDoc](rs[1])
	if err != nil {
		return readmodel.LeadPage{}, err
	}
	page := readmodel.LeadPage{GeoType: loc.GeoType, Leads: make([]readmodel.Lead, 0, min(len(docs), q.Limit))}
	for i, d := range docs {
		if i == q.Limit {
			last := docs[i-1]
			page.Next = &readmodel.LeadKey{EventDate: last.EventDateUsed, LeadID: last.DocID}
			if last.Confidence != nil {
				page.Next.HasConfidence, page.Next.Confidence = true, *last.Confidence
			}
			break
		}
		page.Leads = append(page.Leads, d.lead())
	}
	return page, nil
}

// PermitStats implements readmodel.Reader (one _msearch: the anchor
// location's existence and the aggregations). Without a confidence floor,
// or with one at a class bound (0.5, 0.75, or 0 and below), it reads the
// lead stats cells (leadcells.go: a few roll-ups and edge days per key,
// not the leads); another floor needs each lead's confidence and
// aggregates the leads (statsAggs).
func (s *Store) PermitStats(ctx context.Context, q readmodel.StatsQuery) (readmodel.PermitStats, error) {
	if err := q.Validate(); err != nil {
		return readmodel.PermitStats{}, err
	}
	classes, fromCells := cellClasses(q.Filter.MinConfidence)
	var body obj
	var err error
	index := s.read(readmodel.KindLead)
	if fromCells {
		body, err = leadCellStatsBody(q, classes)
		index = s.read(mappings.KindLeadCell)
	} else {
		body, err = statsBody(q)
	}
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	rs, err := s.msearch(ctx,
		msearchReq{index: s.read(readmodel.KindLocation), body: byIDBody(q.Filter.Geo.ID())},
		msearchReq{index: index, body: body})
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	loc, err := anchor(rs[0])
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	var st readmodel.PermitStats
	if fromCells {
		st, err = statsFromCells(rs[1], classes)
	} else {
		st, err = statsFrom(rs[1], -1)
	}
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	st.GeoType = loc.GeoType
	st.TopZips = cut(st.TopZips, q.TopN)
	if st.TopCounties, st.TopCities, err = s.spellTops(ctx, st.TopCounties, st.TopCities, q.TopN); err != nil {
		return readmodel.PermitStats{}, err
	}
	return st, nil
}

func cut(l []readmodel.ValueCount, n int) []readmodel.ValueCount {
	if n >= 0 && len(l) > n {
		return l[:n]
	}
	return l
}

// spellTops names the county and city top lists as location detail
// spells them, as the memory backend does: a *_norm key becomes the Name
// of the live county (city) location whose normalised name (name_key) it
// is, the most recently indexed one when several are; a key no location
// spells stays as it is. Lists arrive whole (count descending, key
// ascending) and leave ordered by count descending then name ascending,
// cut to n; only the entries that can make the cut (a count at least the
// n-th) are looked up, in one _msearch.
func (s *Store) spellTops(ctx context.Context, counties, cities []readmodel.ValueCount, n int) ([]readmodel.ValueCount, []readmodel.ValueCount, error) {
	counties, cities = contenders(counties, n), contenders(cities, n)
	var reqs []msearchReq
	var types []readmodel.GeoType
	for _, l := range []struct {
		t    readmodel.GeoType
		list []readmodel.ValueCount
	}{{readmodel.GeoCounty, counties}, {readmodel.GeoCity, cities}} {
		if len(l.list) == 0 {
			continue
		}
		keys := make([]string, len(l.list))
		for i, v := range l.list {
			keys[i] = v.Value
		}
		reqs = append(reqs, msearchReq{index: s.read(readmodel.KindLocation), body: spellingBody(l.t, keys)})
		types = append(types, l.t)
	}
	if len(reqs) == 0 {
		return cut(counties, n), cut(cities, n), nil
	}
	rs, err := s.msearch(ctx, reqs...)
	if err != nil {
		return nil, nil, err
	}
	for i, t := range types {
		docs, err := decodeHits[locationDoc](rs[i])
		if err != nil {
			return nil, nil, err
		}
		names := make(map[string]string, len(docs))
		for _, d := range docs {
			if _, ok := names[d.NameKey]; !ok && d.Name != "" {
				names[d.NameKey] = d.Name
			}
		}
		list := &cities
		if t == readmodel.GeoCounty {
			list = &counties
		}
		*list = spelled(*list, names, n)
	}
	return cut(counties, n), cut(cities, n), nil
}

// contenders are the entries of a whole top list (count descending) that
// can be among the first n once renamed: those whose count is at least
// the n-th count.
func contenders(l []readmodel.ValueCount, n int) []readmodel.ValueCount {
	if n < 0 || len(l) <= n {
		return l
	}
	if n == 0 {
		return l[:0]
	}
	last := l[n-1].Count
	end := n
	for end < len(l) && l[end].Count == last {
		end++
	}
	return l[:end]
}

// spelled renames the keys names spells and orders the list by count
// descending then name ascending.
func spelled(l []readmodel.ValueCount, names map[string]string, n int) []readmodel.ValueCount {
	out := make([]readmodel.ValueCount, len(l))
	for i, v := range l {
		if name, ok := names[v.Value]; ok {
			v.Value = name
		}
		out[i] = v
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out
}

type termsAgg struct {
	// SumOtherDocCount counts the documents of the values that did not
	// fit in the buckets: any makes the distribution inexact.
	SumOtherDocCount int64 `json:"sum_other_doc_count"`
	Buckets          []struct {
		Key      string `json:"key"`
		DocCount int64  `json:"doc_count"`
	} `json:"buckets"`
}

type keyedRange struct {
	Buckets map[string]struct {
		DocCount int64 `json:"doc_count"`
	} `json:"buckets"`
}

func statsFrom(r *searchResult, topN int) (readmodel.PermitStats, error) {
	st := readmodel.PermitStats{Total: r.total()}
	top := func(name string, n int) ([]readmodel.ValueCount, error) {
		var a termsAgg
		if err := json.Unmarshal(r.Aggregations[name], &a); err != nil {
			return nil, fmt.Errorf("opensearch: stats %s: %w", name, err)
		}
		if a.SumOtherDocCount > 0 {
			// Counted exactly or not at all: a top list or distribution
			// missing values could rank the wrong ones first.
			return nil, fmt.Errorf("opensearch: stats %s overflow maxTerms: %d leads hold values beyond the first %d", name, a.SumOtherDocCount, maxTerms)
		}
		out := make([]readmodel.ValueCount, 0, len(a.Buckets))
		for _, b := range a.Buckets {
			if b.DocCount > 0 && b.Key != "" {
				out = append(out, readmodel.ValueCount{Value: b.Key, Count: b.DocCount})
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			if out[i].Count != out[j].Count {
				return out[i].Count > out[j].Count
			}
			return out[i].Value < out[j].Value
		})
		if n >= 0 && len(out) > n {
			out = out[:n]
		}
		return out, nil
	}
	var err error
	if st.BySignal, err = top("by_signal", -1); err != nil {
		return st, err
	}
	if st.TopCounties, err = top("top_counties", topN); err != nil {
		return st, err
	}
	if st.TopCities, err = top("top_cities", topN); err != nil {
		return st, err
	}
	if st.TopZips, err = top("top_zips", topN); err != nil {
		return st, err
	}
	var conf, fresh keyedRange
	if err := json.Unmarshal(r.Aggregations["confidence"], &conf); err != nil {
		return st, fmt.Errorf("opensearch: stats confidence: %w", err)
	}
	if err := json.Unmarshal(r.Aggregations["freshness"], &fresh); err != nil {
		return st, fmt.Errorf("opensearch: stats freshness: %w", err)
	}
	st.ConfidenceHigh = conf.Buckets["high"].DocCount
	st.ConfidenceMedium = conf.Buckets["medium"].DocCount
	st.ConfidenceLow = st.Total - st.ConfidenceHigh - st.ConfidenceMedium
	st.Fresh0to7 = fresh.Buckets["d0_7"].DocCount
	st.Fresh8to14 = fresh.Buckets["d8_14"].DocCount
	st.Fresh15to30 = fresh.Buckets["d15_30"].DocCount
	st.Fresh31Plus = st.Total - st.Fresh0to7 - st.Fresh8to14 - st.Fresh15to30
	return st, nil
}
