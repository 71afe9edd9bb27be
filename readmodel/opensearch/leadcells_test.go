package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/osgolden"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// A small interpreter of the query and aggregation shapes the lead cell
// stats body and the unlinked scan use (bool filter/should, term, terms,
// exists, range, match_none; sum, terms, filter, date_range, nested),
// over documents as JSON maps:
// enough to run leadCellStatsBody on the cells a fake cluster holds and
// compare the answer with the memory backend's.

type jdoc = map[string]any

func field(d jdoc, f string) any {
	if v, ok := d[f]; ok {
		return v
	}
	var cur any = d
	for _, p := range strings.Split(f, ".") {
		m, ok := cur.(jdoc)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func jstr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}

func matches(t testing.TB, d jdoc, q jdoc) bool {
	for op, arg := range q {
		a, _ := arg.(jdoc)
		switch op {
		case "match_none":
			return false
		case "exists":
			if field(d, jstr(a["field"])) == nil {
				return false
			}
		case "term":
			for f, v := range a {
				if jstr(field(d, f)) != jstr(v) {
					return false
				}
			}
		case "terms":
			for f, vs := range a {
				if !slices.ContainsFunc(vs.([]any), func(v any) bool { return jstr(v) == jstr(field(d, f)) }) {
					return false
				}
			}
		case "range":
			for f, r := range a {
				v := field(d, f)
				if v == nil {
					return false
				}
				s := jstr(v)
				for cmp, bound := range r.(jdoc) {
					b := jstr(bound)
					switch cmp {
					case "gte":
						if s < b {
							return false
						}
					case "lte":
						if s > b {
							return false
						}
					case "format":
					default:
						t.Errorf("range %s", cmp) // Errorf: a fake's handler calls this too
						return false
					}
				}
			}
		case "bool":
			for _, c := range asList(a["filter"]) {
				if !matches(t, d, c) {
					return false
				}
			}
			if should := asList(a["should"]); len(should) > 0 {
				if !slices.ContainsFunc(should, func(c jdoc) bool { return matches(t, d, c) }) {
					return false
				}
			}
		default:
			t.Errorf("query %s", op)
			return false
		}
	}
	return true
}

func asList(v any) []jdoc {
	var out []jdoc
	for _, x := range asAny(v) {
		out = append(out, x.(jdoc))
	}
	return out
}

func asAny(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func aggregate(t *testing.T, docs []jdoc, aggs jdoc) jdoc {
	out := jdoc{}
	for name, spec := range aggs {
		sp := spec.(jdoc)
		sub, _ := sp["aggs"].(jdoc)
		switch {
		case sp["sum"] != nil:
			f := sp["sum"].(jdoc)["field"].(string)
			var n float64
			for _, d := range docs {
				if v, ok := field(d, f).(float64); ok {
					n += v
				}
			}
			out[name] = jdoc{"value": n}
		case sp["filter"] != nil:
			var in []jdoc
			for _, d := range docs {
				if matches(t, d, sp["filter"].(jdoc)) {
					in = append(in, d)
				}
			}
			r := aggregate(t, in, sub)
			r["doc_count"] = len(in)
			out[name] = r
		case sp["nested"] != nil:
			path := sp["nested"].(jdoc)["path"].(string)
			var in []jdoc
			for _, d := range docs {
				for _, e := range asAny(d[path]) {
					n := jdoc{}
					for k, v := range e.(jdoc) {
						n[path+"."+k] = v
					}
					in = append(in, n)
				}
			}
			out[name] = aggregate(t, in, sub)
		case sp["terms"] != nil:
			f := sp["terms"].(jdoc)["field"].(string)
			groups := map[string][]jdoc{}
			for _, d := range docs {
				if v := field(d, f); v != nil {
					groups[jstr(v)] = append(groups[jstr(v)], d)
				}
			}
			keys := make([]string, 0, len(groups))
			for k := range groups {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var buckets []any
			for _, k := range keys {
				b := aggregate(t, groups[k], sub)
				b["key"], b["doc_count"] = k, len(groups[k])
				buckets = append(buckets, b)
			}
			out[name] = jdoc{"sum_other_doc_count": 0, "buckets": buckets}
		case sp["date_range"] != nil:
			dr := sp["date_range"].(jdoc)
			f := dr["field"].(string)
			buckets := jdoc{}
			for _, r := range asList(dr["ranges"]) {
				var in []jdoc
				for _, d := range docs {
					v := field(d, f)
					if v == nil {
						continue
					}
					s := jstr(v)
					if from, ok := r["from"]; ok && s < jstr(from) {
						continue
					}
					if to, ok := r["to"]; ok && s >= jstr(to) {
						continue
					}
					in = append(in, d)
				}
				b := aggregate(t, in, sub)
				b["doc_count"] = len(in)
				buckets[r["key"].(string)] = b
			}
			out[name] = jdoc{"buckets": buckets}
		default:
			t.Fatalf("aggregation %v", sp)
		}
	}
	return out
}

// cellSearch runs a body on the fake's lead cells.
func (f *fakeDocs) cellSearch(t *testing.T, body obj) *searchResult {
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	var b jdoc
	require.NoError(t, json.Unmarshal(raw, &b))
	f.mu.Lock()
	var in []jdoc
	for _, d := range f.docs["permitd-lead_cells"] {
		var doc jdoc
		require.NoError(t, json.Unmarshal(d.src, &doc))
		if matches(t, doc, b["query"].(jdoc)) {
			in = append(in, doc)
		}
	}
	f.mu.Unlock()
	ans, err := json.Marshal(jdoc{"aggregations": aggregate(t, in, b["aggs"].(jdoc))})
	require.NoError(t, err)
	var r searchResult
	require.NoError(t, json.Unmarshal(ans, &r))
	return &r
}

// TestLeadCellStatsAgreeWithMemory: random leads written through the
// Writer into a fake cluster and into the memory backend; for random
// filters (anchors, keys, windows around Today, each class-bound floor)
// the cell stats body, run on the fake's cells, answers what the memory
// backend answers.
func TestLeadCellStatsAgreeWithMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	s, f := newFakeDocs(t)
	mem := memory.New(memory.Params{})
	ctx := context.Background()
	anchors := []string{"gcity", "gzip1", "gzip2", "gstate"}
	var locs []readmodel.Location
	for i, g := range anchors {
		locs = append(locs, readmodel.Location{GeoID: g, GeoType: readmodel.GeoZip, Name: fmt.Sprint("Z", i), DisplayName: "Z", State: "WA", Version: 1})
	}
	_, err := mem.Apply(ctx, readmodel.Batch{Locations: locs})
	require.NoError(t, err)
	const today = "2026-11-22"
	days := []string{""}
	for _, back := range []int{-2, 0, 3, 7, 8, 14, 15, 29, 30, 31, 45, 300, 400, 800} {
		days = append(days, mustDay(today).AddDate(0, 0, -back).Format("2006-01-02"))
	}
	confs := []*float64{nil, ptr(0.1), ptr(0.5), ptr(0.6), ptr(0.75), ptr(0.9)}
	for i := range 120 {
		l := readmodel.Lead{LeadID: fmt.Sprint("lead:", i%90), Version: int64(1 + i/90), SignalKey: []string{"k1", "k2", "k3"}[r.IntN(3)],
			EventDateUsed: days[r.IntN(len(days))], Confidence: confs[r.IntN(len(confs))], SignalBasis: "observed_event",
			Location: readmodel.LeadLocation{CityNorm: []string{"", "seattle", "bellevue"}[r.IntN(3)],
				ZipcodeNorm: []string{"", "98101", "98004"}[r.IntN(3)], CountyNorm: []string{"king county", "pierce county"}[r.IntN(2)]}}
		for _, g := range anchors {
			if r.IntN(2) == 0 {
				l.GeoIDs = append(l.GeoIDs, g)
			}
		}
		b := readmodel.Batch{Leads: []readmodel.Lead{l}}
		if i%17 == 0 && i > 0 {
			b = readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindLead, ID: fmt.Sprint("lead:", i%90-1), Version: 9}}}
		}
		_, err := s.Apply(ctx, b)
		require.NoError(t, err)
		_, err = mem.Apply(ctx, b)
		require.NoError(t, err)
	}
	for n := range 300 {
		q := readmodel.StatsQuery{Today: today, TopN: -1, Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(anchors[r.IntN(len(anchors))])}}
		if r.IntN(2) == 0 {
			q.Filter.SignalKeys = []string{"k1", "k3"}[:1+r.IntN(2)]
		}
		pick := func() string { return days[1+r.IntN(len(days)-1)] }
		switch r.IntN(4) {
		case 1:
			q.Filter.FromDate = pick()
		case 2:
			q.Filter.ToDate = pick()
		case 3:
			q.Filter.FromDate, q.Filter.ToDate = pick(), pick()
		}
		if r.IntN(3) == 0 {
			q.Filter.FreshSince = pick()
		}
		q.Filter.MinConfidence = []*float64{nil, nil, ptr(0.5), ptr(0.75), ptr(0.0)}[r.IntN(5)]
		f.requireCellStats(t, mem, q, "query %d: %+v", n, q.Filter)
	}
}

// requireCellStats runs q's cell stats body on the fake's lead cells and
// requires the answer the memory backend mem gives (an empty list and a
// nil one alike; the geo type, which the cells do not read, left out).
// It returns the cells' answer.
func (f *fakeDocs) requireCellStats(t *testing.T, mem readmodel.Reader, q readmodel.StatsQuery, msgAndArgs ...any) readmodel.PermitStats {
	t.Helper()
	classes, ok := cellClasses(q.Filter.MinConfidence)
	require.True(t, ok)
	body, err := leadCellStatsBody(q, classes)
	require.NoError(t, err)
	got, err := statsFromCells(f.cellSearch(t, body), classes)
	require.NoError(t, err)
	want, err := mem.PermitStats(context.Background(), q)
	require.NoError(t, err)
	want.GeoType = ""
	for _, l := range []*[]readmodel.ValueCount{&want.BySignal, &want.TopCounties, &want.TopCities, &want.TopZips, &got.BySignal, &got.TopCounties, &got.TopCities, &got.TopZips} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	require.Equal(t, want, got, msgAndArgs...)
	return got
}

// TestLeadCellStatsGolden: the request a California stats call makes,
// all time and over a quarter with a floor: an aggregation over the
// cells of a few roll-ups and edge days per key.
func TestLeadCellStatsGolden(t *testing.T) {
	ca := "gSTATECA0000000000"
	all, err := leadCellStatsBody(readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(ca)}, Today: "2026-06-30", TopN: 10}, leadClasses)
	require.NoError(t, err)
	osgolden.Compare(t, "stats_cells_california.search.json", render(t, all))
	classes, ok := cellClasses(ptr(0.75))
	require.True(t, ok)
	quarter, err := leadCellStatsBody(readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(ca), SignalKeys: []string{"framing_nowcast_early"},
		FromDate: "2026-04-01", ToDate: "2026-06-30", MinConfidence: ptr(0.75)}, Today: "2026-06-30", TopN: 10}, classes)
	require.NoError(t, err)
	osgolden.Compare(t, "stats_cells_quarter.search.json", render(t, quarter))
}

// TestPermitStatsFromCells: without a floor (and with one at a class
// bound) PermitStats asks the lead cells, in the same _msearch as the
// anchor, and reads their sums and counters as the lead scan's answer
// (spellings looked up after); a floor between the bounds asks the leads.
func TestPermitStatsFromCells(t *testing.T) {
	sums := func(h, m, l, n int) string {
		return fmt.Sprintf(`"high":{"value":%d.0},"medium":{"value":%d.0},"low":{"value":%d.0},"null":{"value":%d.0}`, h, m, l, n)
	}
	counters := func(buckets string) string {
		return `{"doc_count":1,"keys":{"sum_other_doc_count":0,"buckets":[` + buckets + `]}}`
	}
	cells := `{"status":200,"hits":{"hits":[]},"aggregations":{` + sums(3, 2, 1, 1) + `,` +
		`"by_signal":{"sum_other_doc_count":0,"buckets":[{"key":"k1","doc_count":4,` + sums(1, 0, 1, 1) + `},{"key":"k2","doc_count":2,` + sums(2, 2, 0, 0) + `}]},` +
		`"freshness":{"doc_count":5,"ranges":{"buckets":{"d0_7":{"doc_count":2,` + sums(1, 1, 0, 0) + `},"d8_14":{"doc_count":1,` + sums(0, 0, 1, 0) +
		`},"d15_30":{"doc_count":0,` + sums(0, 0, 0, 0) + `}}}},` +
		`"tops":{"doc_count":20,"kept":{"doc_count":20,` +
		`"county":` + counters(`{"key":"king county","doc_count":3,"n":{"value":7.0}}`) + `,` +
		`"city":` + counters(`{"key":"bellevue","doc_count":2,"n":{"value":2.0}},{"key":"seattle","doc_count":3,"n":{"value":5.0}}`) + `,` +
		`"zip":` + counters(`{"key":"98101","doc_count":1,"n":{"value":0.0}}`) + `}}}}`
	named := `{"name":"King County","name_key":"king county"}`
	s, seen := fakeAnswers(t, `{"responses":[`+hits(1, locSrc)+`,`+cells+`]}`,
		`{"responses":[`+hits(-1, named)+`,`+hits(-1)+`]}`)
	st, err := s.PermitStats(context.Background(), readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("g1")}, Today: "2026-06-30", TopN: 5})
	require.NoError(t, err)
	require.Equal(t, []readmodel.ValueCount{{Value: "k2", Count: 4}, {Value: "k1", Count: 3}}, st.BySignal, "count desc")
	require.Equal(t, int64(7), st.Total)
	require.Equal(t, [3]int64{3, 2, 2}, [3]int64{st.ConfidenceHigh, st.ConfidenceMedium, st.ConfidenceLow}, "low holds the nulls")
	require.Equal(t, [4]int64{2, 1, 0, 4}, [4]int64{st.Fresh0to7, st.Fresh8to14, st.Fresh15to30, st.Fresh31Plus})
	require.Equal(t, []readmodel.ValueCount{{Value: "King County", Count: 7}}, st.TopCounties)
	require.Equal(t, []readmodel.ValueCount{{Value: "seattle", Count: 5}, {Value: "bellevue", Count: 2}}, st.TopCities)
	require.Empty(t, st.TopZips, "zero counters are not listed")
	require.Equal(t, readmodel.GeoCity, st.GeoType)
	require.Contains(t, (*seen)[0], `{"allow_partial_search_results":false,"index":"permitd-lead_cells"}`)

	for _, tc := range []struct {
		floor *float64
		index string
	}{{ptr(0.75), "permitd-lead_cells"}, {ptr(0.5), "permitd-lead_cells"}, {ptr(0.0), "permitd-lead_cells"}, {ptr(0.6), "permitd-leads"}} {
		s, seen := fakeAnswers(t, `{"responses":[`+hits(0)+`,`+hits(0)+`]}`)
		_, err := s.PermitStats(context.Background(), readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("g1"), MinConfidence: tc.floor}, Today: "2026-06-30", TopN: 5})
		require.ErrorIs(t, err, readmodel.ErrNotFound)
		require.Contains(t, (*seen)[0], `"index":"`+tc.index+`"}`, "floor %v", *tc.floor)
	}
}
