// Lead stats from the lead cells: the periods a query covers, the cells' aggregation body and its decoding.

package opensearch

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// leadPeriod is one range of cell periods a stats window reads: cells of
// level whose period starts in [from, to] ("" leaves a side open).
type leadPeriod struct {
	level, from, to string
}

// leadPeriods plans a stats window over the cells: the days [lo, hi]
// ("" for an open side) as whole years, then whole months, then single
// days, with the days from fresh on (today - 30, the freshness buckets'
// reach) always as day cells. With no bound at all the undated cells are
// read too (the filter keeps null dates only then).
func leadPeriods(lo, hi string, fresh time.Time) []leadPeriod {
	var out []leadPeriod
	if lo == "" && hi == "" {
		out = append(out, leadPeriod{level: levelNone})
	}
	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	var a *time.Time
	if lo != "" {
		t, _ := time.Parse(time.DateOnly, lo)
		a = &t
	}
	b := fresh.AddDate(0, 0, -1) // the roll-ups' last day
	if hi != "" {
		t, _ := time.Parse(time.DateOnly, hi)
		if t.Before(fresh) {
			b = t
		}
	}
	// Day cells from fresh on.
	if hi == "" || !mustDay(hi).Before(fresh) {
		from := fresh
		if a != nil && a.After(from) {
			from = *a
		}
		out = append(out, leadPeriod{level: levelDay, from: day(from), to: hi})
	}
	if a != nil && a.After(b) {
		return out
	}
	// [a, b] by roll-ups: whole years, the months and days around them.
	firstYear := func(t time.Time) int {
		if t.YearDay() == 1 {
			return t.Year()
		}
		return t.Year() + 1
	}
	lastYear := b.Year()
	if !(b.Month() == 12 && b.Day() == 31) {
		lastYear--
	}
	jan1 := func(y int) time.Time { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC) }
	if a == nil {
		out = append(out, leadPeriod{level: levelYear, to: day(jan1(lastYear))})
		return append(out, monthsAndDays(jan1(lastYear+1), b)...)
	}
	fy := firstYear(*a)
	if fy > lastYear {
		return append(out, monthsAndDays(*a, b)...)
	}
	out = append(out, leadPeriod{level: levelYear, from: day(jan1(fy)), to: day(jan1(lastYear))})
	out = append(out, monthsAndDays(*a, jan1(fy).AddDate(0, 0, -1))...)
	return append(out, monthsAndDays(jan1(lastYear+1), b)...)
}

func mustDay(s string) time.Time {
	t, _ := time.Parse(time.DateOnly, s)
	return t
}

// monthsAndDays covers the days [a, b] with whole months and the days
// around them.
func monthsAndDays(a, b time.Time) []leadPeriod {
	if a.After(b) {
		return nil
	}
	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	first := time.Date(a.Year(), a.Month(), 1, 0, 0, 0, 0, time.UTC)
	if a.Day() != 1 {
		first = first.AddDate(0, 1, 0)
	}
	last := time.Date(b.Year(), b.Month(), 1, 0, 0, 0, 0, time.UTC) // the month of b, whole when b is its last day
	if b.AddDate(0, 0, 1).Day() != 1 {
		last = last.AddDate(0, -1, 0)
	}
	if first.After(last) {
		return []leadPeriod{{level: levelDay, from: day(a), to: day(b)}}
	}
	out := []leadPeriod{{level: levelMonth, from: day(first), to: day(last)}}
	if a.Before(first) {
		out = append(out, leadPeriod{level: levelDay, from: day(a), to: day(first.AddDate(0, 0, -1))})
	}
	if end := last.AddDate(0, 1, -1); end.Before(b) {
		out = append(out, leadPeriod{level: levelDay, from: day(end.AddDate(0, 0, 1)), to: day(b)})
	}
	return out
}

// cellClasses are the confidence classes a floor keeps; false when the
// floor is not a class bound, so the cells cannot answer it.
func cellClasses(f *float64) ([]string, bool) {
	switch {
	case f == nil:
		return leadClasses, true
	case *f > 1:
		return []string{}, true
	case *f == 0.75:
		return []string{classHigh}, true
	case *f == 0.5:
		return []string{classHigh, classMedium}, true
	case *f <= 0:
		return []string{classHigh, classMedium, classLow}, true
	}
	return nil, false
}

// leadCellStatsBody is PermitStats over the lead cells (golden:
// stats_cells*.search.json): the cells of the anchor (and keys) whose
// periods leadPeriods plans for the window, summed by class; by signal
// key; by freshness range over the day cells; and, through the nested
// counters of the kept classes, by county, city and ZIP key.
func leadCellStatsBody(q readmodel.StatsQuery, classes []string) (obj, error) {
	lo, hi, err := leadWindow(q.Filter)
	if err != nil {
		return nil, err
	}
	today, err := time.Parse(time.DateOnly, q.Today)
	if err != nil {
		return nil, fmt.Errorf("%w: stats need Today, got %q", readmodel.ErrInvalidQuery, q.Today)
	}
	ago := func(days int) string { return today.AddDate(0, 0, -days).Format(time.DateOnly) }
	var periods []obj
	if lo == "" || hi == "" || lo <= hi {
		for _, p := range leadPeriods(lo, hi, today.AddDate(0, 0, -30)) {
			clauses := []obj{term("level", p.level)}
			if p.from != "" || p.to != "" {
				clauses = append(clauses, dateRange("day", p.from, p.to))
			}
			periods = append(periods, obj{"bool": obj{"filter": clauses}})
		}
	}
	if len(periods) == 0 {
		periods = []obj{{"match_none": obj{}}}
	}
	filter := []obj{term("anchor", q.Filter.Geo.ID())}
	if len(q.Filter.SignalKeys) > 0 {
		filter = append(filter, terms("signal_key", q.Filter.SignalKeys))
	}
	sums := func() obj {
		out := obj{}
		for _, c := range classes {
			out[c] = obj{"sum": obj{"field": c}}
		}
		return out
	}
	counters := func(kind string) obj {
		return obj{
			"filter": term("tops.kind", kind),
			"aggs": obj{"keys": obj{
				"terms": obj{"field": "tops.key", "size": maxTerms, "order": []obj{{"_key": "asc"}}},
				"aggs":  obj{"n": obj{"sum": obj{"field": "tops.n"}}},
			}},
		}
	}
	aggs := sums()
	aggs["by_signal"] = obj{
		"terms": obj{"field": "signal_key", "size": maxTerms, "order": []obj{{"_key": "asc"}}},
		"aggs":  sums(),
	}
	aggs["freshness"] = obj{
		"filter": term("level", levelDay),
		"aggs": obj{"ranges": obj{
			"date_range": obj{"field": "day", "format": "strict_date", "keyed": true, "ranges": []obj{
				{"key": "d0_7", "from": ago(7)},
				{"key": "d8_14", "from": ago(14), "to": ago(7)},
				{"key": "d15_30", "from": ago(30), "to": ago(14)},
			}},
			"aggs": sums(),
		}},
	}
	aggs["tops"] = obj{
		"nested": obj{"path": "tops"},
		"aggs": obj{"kept": obj{
			"filter": terms("tops.class", classes),
			"aggs":   obj{"county": counters("county"), "city": counters("city"), "zip": counters("zip")},
		}},
	}
	return obj{
		"size":             0,
		"track_total_hits": false,
		"query":            obj{"bool": obj{"filter": filter, "should": periods, "minimum_should_match": 1}},
		"aggs":             aggs,
	}, nil
}

// classSums reads the per-class sums of an aggregation object.
type classSums map[string]json.RawMessage

func (c classSums) total(classes []string) (int64, error) {
	var n int64
	for _, cl := range classes {
		v, err := c.sum(cl)
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

func (c classSums) sum(class string) (int64, error) {
	var a struct {
		Value *float64 `json:"value"`
	}
	if err := json.Unmarshal(c[class], &a); err != nil || a.Value == nil {
		return 0, fmt.Errorf("opensearch: lead cells: no %s sum", class)
	}
	return int64(math.Round(*a.Value)), nil
}

// statsFromCells reads leadCellStatsBody's answer; top lists come whole
// (count descending, key ascending).
func statsFromCells(r *searchResult, classes []string) (readmodel.PermitStats, error) {
	var st readmodel.PermitStats
	top := classSums(r.Aggregations)
	var err error
	if st.Total, err = top.total(classes); err != nil {
		return st, err
	}
	for _, c := range classes {
		n, err := top.sum(c)
		if err != nil {
			return st, err
		}
		switch c {
		case classHigh:
			st.ConfidenceHigh = n
		case classMedium:
			st.ConfidenceMedium = n
		default:
			st.ConfidenceLow += n
		}
	}
	var bySignal struct {
		SumOtherDocCount int64       `json:"sum_other_doc_count"`
		Buckets          []classSums `json:"buckets"`
	}
	if err := json.Unmarshal(r.Aggregations["by_signal"], &bySignal); err != nil {
		return st, fmt.Errorf("opensearch: lead cells by_signal: %w", err)
	}
	if bySignal.SumOtherDocCount > 0 {
		return st, fmt.Errorf("opensearch: lead cells by_signal overflow maxTerms")
	}
	for _, b := range bySignal.Buckets {
		n, err := b.total(classes)
		if err != nil {
			return st, err
		}
		var key string
		if err := json.Unmarshal(b["key"], &key); err != nil {
			return st, fmt.Errorf("opensearch: lead cells by_signal key: %w", err)
		}
		if n > 0 {
			st.BySignal = append(st.BySignal, readmodel.ValueCount{Value: key, Count: n})
		}
	}
	sortCounts(st.BySignal)
	var fresh struct {
		Ranges struct {
			Buckets map[string]classSums `json:"buckets"`
		} `json:"ranges"`
	}
	if err := json.Unmarshal(r.Aggregations["freshness"], &fresh); err != nil {
		return st, fmt.Errorf("opensearch: lead cells freshness: %w", err)
	}
	for key, dst := range map[string]*int64{"d0_7": &st.Fresh0to7, "d8_14": &st.Fresh8to14, "d15_30": &st.Fresh15to30} {
		b, ok := fresh.Ranges.Buckets[key]
		if !ok {
			return st, fmt.Errorf("opensearch: lead cells freshness: no %s", key)
		}
		if *dst, err = b.total(classes); err != nil {
			return st, err
		}
	}
	st.Fresh31Plus = st.Total - st.Fresh0to7 - st.Fresh8to14 - st.Fresh15to30
	var tops struct {
		Kept map[string]json.RawMessage `json:"kept"`
	}
	if err := json.Unmarshal(r.Aggregations["tops"], &tops); err != nil {
		return st, fmt.Errorf("opensearch: lead cells tops: %w", err)
	}
	for kind, dst := range map[string]*[]readmodel.ValueCount{"county": &st.TopCounties, "city": &st.TopCities, "zip": &st.TopZips} {
		var k struct {
			Keys struct {
				SumOtherDocCount int64 `json:"sum_other_doc_count"`
				Buckets          []struct {
					Key string `json:"key"`
					N   struct {
						Value float64 `json:"value"`
					} `json:"n"`
				} `json:"buckets"`
			} `json:"keys"`
		}
		if err := json.Unmarshal(tops.Kept[kind], &k); err != nil {
			return st, fmt.Errorf("opensearch: lead cells %s counters: %w", kind, err)
		}
		if k.Keys.SumOtherDocCount > 0 {
			return st, fmt.Errorf("opensearch: lead cells %s counters overflow maxTerms", kind)
		}
		for _, b := range k.Keys.Buckets {
			if n := int64(math.Round(b.N.Value)); n > 0 && b.Key != "" {
				*dst = append(*dst, readmodel.ValueCount{Value: b.Key, Count: n})
			}
		}
		sortCounts(*dst)
	}
	return st, nil
}

// sortCounts orders a list by count descending, value ascending.
func sortCounts(l []readmodel.ValueCount) {
	slices.SortFunc(l, func(a, b readmodel.ValueCount) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Value, b.Value)
	})
}
