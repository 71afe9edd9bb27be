package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// Monthly series (readmodel.PermitMonthlyReader), exact like the memory
// backend's. OpenSearch has no exact median aggregation (percentiles is a
// TDigest estimate), so the series is read in at most three rounds, all
// on one point in time of the permits index (so the counts of one round
// are the documents of the next):
//
//  1. one _msearch: the anchor's existence, and a date_histogram of the
//     filtered permits per month of issue_date (monthlyBody) with, over the
//     known valuations (valuation_sort >= 0), their count n, their sum in
//     cents (a sum of Math.round(v*100): integral doubles, exact below
//     2^53 cents, the memory backend's int64 cents) and TDigest
//     percentiles around the median, used only as a guide;
//  2. for a month whose median ranks are deeper than the selection window
//     (index.max_result_window, 10,000: from+size may not pass it) from both
//     ends: exact counts of a range aggregation whose bounds are the
//     guide's percentiles, each bound also as a one-value range
//     [b, next double after b) (monthRanksBody);
//  3. per month, the value at each median rank by sort (monthSelectBody):
//     the known valuations of the month (of the range holding the rank in
//     round 2) sorted on valuation_sort, from = the rank's offset, size
//     1 or 2. A rank in a one-value range needs no read.
//
// Exactness never depends on the estimate: a rank whose range still holds
// more than twice the window fails the read (errMedianWindow) instead of
// answering an approximation. Every count read back is checked against
// the round before (without a point in time, on a cluster that cannot
// open one, a change between rounds is ErrUnavailable, not a wrong
// median). Cost: one pass over the window's permits (round 1), one more
// per month that has known valuations (round 3, a sorted top-k of at most
// 10,000 per shard), and one for each month past 20,000 known valuations.

var _ readmodel.PermitMonthlyReader = (*Store)(nil)

// selectWindow is index.max_result_window's default: a sorted read's
// from+size may not pass it.
const selectWindow = 10_000

// guidePercents are the percentiles asked as range bounds for a deep
// median (round 2): dense around the median, where the TDigest estimate
// is most exact, wider on both sides in case it is not.
var guidePercents = []float64{30, 40, 45, 47, 48, 49, 49.5, 49.8, 50, 50.2, 50.5, 51, 52, 53, 55, 60, 70}

// centsScript sums a month's valuations as the memory backend does: each
// rounded to the cent (Java's Math.round and Go's math.Round agree on
// non-negative values).
const centsScript = "Math.round(doc['valuation_sort'].value * 100)"

// errMedianWindow: a median rank lies in a range of valuations too large
// to read by sort; the read fails instead of estimating.
type errMedianWindow struct {
	month string
	count int64
}

func (e errMedianWindow) Error() string {
	return fmt.Sprintf("opensearch: monthly series: the median of %s lies among %d valuations between the percentile bounds, "+
		"more than an exact sorted read can reach (2 x %d); the series is refused rather than estimated", e.month, e.count, selectWindow)
}

// knownValuation keeps permits whose valuation is known (valuation_sort
// is the valuation, -1 when unknown; valuations are never negative).
func knownValuation() obj { return obj{"range": obj{"valuation_sort": obj{"gte": 0}}} }

// monthlyQuery is the query of the permits SearchPermits pages for q's
// anchor and filter, with issue dates in [from, to], and extra clauses.
func monthlyQuery(field string, q *readmodel.MonthlyQuery, from, to string, extra ...obj) obj {
	b := permitSearchBody(field, &readmodel.PermitQuery{Geo: q.Geo, FromDate: from, ToDate: to, Filter: q.Filter})
	query := b["query"].(obj)
	bl := query["bool"].(obj)
	bl["filter"] = append(bl["filter"].([]obj), extra...)
	return query
}

// withPIT searches pit instead of an index when pit is set.
func withPIT(b obj, pit string) obj {
	if pit != "" {
		b["pit"] = obj{"id": pit, "keep_alive": pitKeepAlive}
	}
	return b
}

// monthlyBody is round 1: counts, known counts, cents and the guide
// percentiles per month of the window.
func monthlyBody(field string, q *readmodel.MonthlyQuery) obj {
	return obj{
		"size": 0, "track_total_hits": false,
		"query": monthlyQuery(field, q, q.FromDate, q.ToDate),
		"aggs": obj{"months": obj{
			"date_histogram": obj{"field": "issue_date", "calendar_interval": "month", "format": "yyyy-MM", "min_doc_count": 1},
			"aggs": obj{"known": obj{
				"filter": knownValuation(),
				"aggs": obj{
					"cents": obj{"sum": obj{"script": obj{"lang": "painless", "source": centsScript}}},
					"guide": obj{"percentiles": obj{"field": "valuation_sort", "percents": guidePercents, "keyed": false}},
				},
			}},
		}},
	}
}

// valRange is a range of valuations [lo, hi) (nil: open), as a range
// aggregation and a range query read it.
type valRange struct {
	lo, hi *float64
}

func (r valRange) clause() obj {
	c := obj{"gte": 0.0}
	if r.lo != nil {
		c["gte"] = *r.lo
	}
	if r.hi != nil {
		c["lt"] = *r.hi
	}
	return obj{"range": obj{"valuation_sort": c}}
}

// point: the range holds one double only, so its count is how often that
// value occurs.
func (r valRange) point() bool {
	return r.lo != nil && r.hi != nil && math.Nextafter(*r.lo, math.Inf(1)) == *r.hi
}

// guideRanges cuts [0, inf) at the distinct bounds, each bound also a
// one-value range: (, b1) [b1, b1+) [b1+, b2) ... [bm, bm+) [bm+, ).
func guideRanges(bounds []float64) []valRange {
	bs := append([]float64(nil), bounds...)
	sort.Float64s(bs)
	var out []valRange
	var lo *float64
	for i, b := range bs {
		if i > 0 && b == bs[i-1] {
			continue
		}
		next := math.Nextafter(b, math.Inf(1))
		if lo == nil || *lo < b {
			out = append(out, valRange{lo, &b})
		}
		out = append(out, valRange{&b, &next})
		lo = &next
	}
	return append(out, valRange{lo, nil})
}

// monthRanksBody is round 2 for one month: exact counts of the known
// valuations of [from, to] in each range.
func monthRanksBody(field string, q *readmodel.MonthlyQuery, from, to string, ranges []valRange) obj {
	rs := make([]obj, len(ranges))
	for i, r := range ranges {
		o := obj{"key": "r" + strconv.Itoa(i)}
		if r.lo != nil {
			o["from"] = *r.lo
		}
		if r.hi != nil {
			o["to"] = *r.hi
		}
		rs[i] = o
	}
	return obj{
		"size": 0, "track_total_hits": true,
		"query": monthlyQuery(field, q, from, to, knownValuation()),
		"aggs":  obj{"ranks": obj{"range": obj{"field": "valuation_sort", "ranges": rs, "keyed": true}}},
	}
}

// monthSelectBody is round 3: the known valuations of [from, to] in r,
// sorted (ascending, or descending when the offset is nearer that end),
// size values from offset; track_total_hits checks r's count.
func monthSelectBody(field string, q *readmodel.MonthlyQuery, from, to string, r valRange, asc bool, offset, size int64) obj {
	order := "asc"
	if !asc {
		order = "desc"
	}
	return obj{
		"from": offset, "size": size, "track_total_hits": true, "_source": false,
		"query": monthlyQuery(field, q, from, to, r.clause()),
		"sort":  []obj{{"valuation_sort": order}},
	}
}

// monthSel is one month's median being read.
type monthSel struct {
	i        int // index in the series
	month    string
	from, to string // the month's days inside the window
	n        int64  // known valuations
	ranks    []int64
	vals     []float64
	got      []bool
	guide    []float64
}

// monthPick is a round-3 read: the ranks of one month that lie in one
// range, given the count before the range and in it.
type monthPick struct {
	sel           *monthSel
	r             valRange
	before, count int64
	idx           []int // positions in sel.ranks
}

// body reads the pick's adjacent ranks (the one or two middle ones) by
// sort; asc says which end it counts from.
func (p *monthPick) body(field string, q *readmodel.MonthlyQuery, pit string) (obj, bool, error) {
	lo := p.sel.ranks[p.idx[0]] - p.before
	hi := p.sel.ranks[p.idx[len(p.idx)-1]] - p.before
	size := hi - lo + 1
	switch {
	case lo+size <= selectWindow:
		return withPIT(monthSelectBody(field, q, p.sel.from, p.sel.to, p.r, true, lo, size), pit), true, nil
	case p.count-lo <= selectWindow: // descending: from count-1-hi, size: count-lo in all
		return withPIT(monthSelectBody(field, q, p.sel.from, p.sel.to, p.r, false, p.count-1-hi, size), pit), false, nil
	}
	return nil, false, errMedianWindow{p.sel.month, p.count}
}

// PermitMonthly implements readmodel.PermitMonthlyReader (see the rounds
// above). Unknown GeoID: ErrNotFound.
func (s *Store) PermitMonthly(ctx context.Context, q readmodel.MonthlyQuery) ([]readmodel.MonthBucket, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.Geo.IsZero() {
		return nil, readmodel.ErrNotFound
	}
	months := readmodel.MonthsOf(q.FromDate, q.ToDate)
	out := make([]readmodel.MonthBucket, len(months))
	at := make(map[string]int, len(months))
	for i, m := range months {
		out[i].Month, at[m] = m, i
	}
	field := permitField(q.Geo)
	pit := s.openPIT(ctx, readmodel.KindPermit)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closePITTimeout)
		defer cancel()
		s.closePIT(cctx, pit)
	}()
	permits := s.read(readmodel.KindPermit)
	target := func() string {
		if pit != "" {
			return "" // a point in time names its index
		}
		return permits
	}
	keep := func(r *searchResult) {
		if pit != "" && r.PitID != "" {
			pit = r.PitID
		}
	}

	// Round 1.
	rs, err := s.msearch(ctx, s.exists(q.Geo), msearchReq{index: target(), body: withPIT(monthlyBody(field, &q), pit)})
	if err != nil {
		return nil, err
	}
	if !found(rs[0]) {
		return nil, readmodel.ErrNotFound
	}
	keep(rs[1])
	var hist struct {
		Buckets []struct {
			Key      string `json:"key_as_string"`
			DocCount int64  `json:"doc_count"`
			Known    struct {
				DocCount int64 `json:"doc_count"`
				Cents    struct {
					Value *float64 `json:"value"`
				} `json:"cents"`
				Guide struct {
					Values []struct {
						Value *float64 `json:"value"`
					} `json:"values"`
				} `json:"guide"`
			} `json:"known"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal(rs[1].Aggregations["months"], &hist); err != nil {
		return nil, fmt.Errorf("opensearch: monthly series: %w", err)
	}
	var sels []*monthSel
	for _, b := range hist.Buckets {
		i, ok := at[b.Key]
		if !ok || b.DocCount == 0 {
			continue
		}
		out[i].Count = b.DocCount
		if b.Known.DocCount == 0 {
			continue
		}
		if b.Known.Cents.Value != nil {
			out[i].TotalValuation = math.Round(*b.Known.Cents.Value) / 100
		}
		n := b.Known.DocCount
		sel := &monthSel{i: i, month: b.Key, n: n, ranks: []int64{(n - 1) / 2}}
		if n%2 == 0 {
			sel.ranks = append(sel.ranks, n/2)
		}
		sel.from, sel.to = monthDays(b.Key, q.FromDate, q.ToDate)
		sel.vals, sel.got = make([]float64, len(sel.ranks)), make([]bool, len(sel.ranks))
		for _, g := range b.Known.Guide.Values {
			if g.Value != nil {
				sel.guide = append(sel.guide, *g.Value)
			}
		}
		sels = append(sels, sel)
	}

	// Round 2, for the months whose median is deeper than the window.
	var picks []*monthPick
	var deep []*monthSel
	var deepRanges [][]valRange
	var reqs []msearchReq
	for _, sel := range sels {
		whole := &monthPick{sel: sel, r: valRange{}, count: sel.n, idx: seq(len(sel.ranks))}
		if _, _, err := whole.body(field, &q, pit); err == nil || len(sel.guide) == 0 {
			picks = append(picks, whole)
			continue
		}
		ranges := guideRanges(sel.guide)
		deep, deepRanges = append(deep, sel), append(deepRanges, ranges)
		reqs = append(reqs, msearchReq{index: target(), body: withPIT(monthRanksBody(field, &q, sel.from, sel.to, ranges), pit)})
	}
	if len(reqs) > 0 {
		rs, err := s.msearch(ctx, reqs...)
		if err != nil {
			return nil, err
		}
		for j, r := range rs {
			keep(r)
			sel, ranges := deep[j], deepRanges[j]
			var agg struct {
				Buckets map[string]struct {
					DocCount int64 `json:"doc_count"`
				} `json:"buckets"`
			}
			if err := json.Unmarshal(r.Aggregations["ranks"], &agg); err != nil {
				return nil, fmt.Errorf("opensearch: monthly series ranges: %w", err)
			}
			if r.total() != sel.n {
				return nil, changedBetweenReads(sel.month, sel.n, r.total())
			}
			var before, sum int64
			for k, rg := range ranges {
				c := agg.Buckets["r"+strconv.Itoa(k)].DocCount
				sum += c
				var idx []int
				for x, rank := range sel.ranks {
					if rank >= before && rank < before+c {
						if rg.point() {
							sel.vals[x], sel.got[x] = *rg.lo, true
						} else {
							idx = append(idx, x)
						}
					}
				}
				if len(idx) > 0 {
					picks = append(picks, &monthPick{sel: sel, r: rg, before: before, count: c, idx: idx})
				}
				before += c
			}
			if sum != sel.n {
				return nil, changedBetweenReads(sel.month, sel.n, sum)
			}
		}
	}

	// Round 3.
	reqs, asc := reqs[:0], make([]bool, len(picks))
	for k, p := range picks {
		b, up, err := p.body(field, &q, pit)
		if err != nil {
			return nil, err
		}
		asc[k] = up
		reqs = append(reqs, msearchReq{index: target(), body: b})
	}
	if len(reqs) > 0 {
		rs, err := s.msearch(ctx, reqs...)
		if err != nil {
			return nil, err
		}
		for k, r := range rs {
			keep(r)
			p := picks[k]
			if r.total() != p.count {
				return nil, changedBetweenReads(p.sel.month, p.count, r.total())
			}
			hits := r.Hits.Hits
			if len(hits) != len(p.idx) {
				return nil, changedBetweenReads(p.sel.month, int64(len(p.idx)), int64(len(hits)))
			}
			for h, x := range p.idx {
				j := h
				if !asc[k] {
					j = len(hits) - 1 - h
				}
				v, err := sortValue(hits[j].Sort)
				if err != nil {
					return nil, fmt.Errorf("opensearch: monthly series %s: %w", p.sel.month, err)
				}
				p.sel.vals[x], p.sel.got[x] = v, true
			}
		}
	}
	for _, sel := range sels {
		for x := range sel.got {
			if !sel.got[x] {
				return nil, fmt.Errorf("opensearch: monthly series %s: median rank %d not read", sel.month, sel.ranks[x])
			}
		}
		m := sel.vals[0]
		if len(sel.vals) == 2 {
			m = (sel.vals[0] + sel.vals[1]) / 2
		}
		out[sel.i].MedianValuation = &m
	}
	return out, nil
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// monthDays are the first and last days of month (YYYY-MM) inside
// [from, to].
func monthDays(month, from, to string) (string, string) {
	t, _ := time.Parse("2006-01", month)
	first := t.Format(time.DateOnly)
	last := t.AddDate(0, 1, -1).Format(time.DateOnly)
	return max(first, from), min(last, to)
}

// sortValue is a hit's first sort value.
func sortValue(sv []any) (float64, error) {
	if len(sv) == 0 {
		return 0, fmt.Errorf("hit without sort values")
	}
	switch v := sv[0].(type) {
	case json.Number:
		return v.Float64()
	case float64:
		return v, nil
	}
	return 0, fmt.Errorf("sort value %v is not a number", sv[0])
}

func changedBetweenReads(month string, want, got int64) error {
	return fmt.Errorf("%w: monthly series %s: the permits changed between reads (%d, then %d); retry",
		readmodel.ErrUnavailable, month, want, got)
}
