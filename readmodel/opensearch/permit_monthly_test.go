package opensearch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// monthlyCluster answers the monthly series' requests from a list of
// permits as the engine would: it reads the issue_date and valuation_sort
// ranges of each body's filter (the other clauses are the filter's, which
// the fixture already satisfies), refuses a sorted read past
// index.max_result_window, and answers the guide percentiles with an
// error the test chooses (the reader may never depend on them).
type monthlyCluster struct {
	mu      sync.Mutex
	permits []fakePermit
	noPIT   bool
	guide   func(exact float64, vals []float64) float64
	// between runs after each _msearch (a concurrent write).
	between func(c *monthlyCluster, round int)

	opened, closed []string
	rounds         int
	maxFrom        int64
}

type fakePermit struct {
	day string
	val *float64
}

func (c *monthlyCluster) store(t *testing.T) *Store {
	s := storeOn(t, http.HandlerFunc(c.serve))
	return s
}

func (c *monthlyCluster) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/_search/point_in_time") && r.Method == http.MethodPost:
		if c.noPIT {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"type":"unsupported"},"status":404}`)
			return
		}
		id := fmt.Sprintf("pit-%d", len(c.opened)+1)
		c.opened = append(c.opened, id)
		_, _ = fmt.Fprintf(w, `{"pit_id":%q}`, id)
	case r.URL.Path == "/_search/point_in_time" && r.Method == http.MethodDelete:
		var d struct {
			PitID []string `json:"pit_id"`
		}
		_ = json.Unmarshal(body, &d)
		c.closed = append(c.closed, d.PitID...)
		_, _ = io.WriteString(w, `{"pits":[]}`)
	case r.URL.Path == "/_msearch":
		c.rounds++
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		var answers []string
		for sc.Scan() {
			var head obj
			_ = json.Unmarshal(sc.Bytes(), &head)
			sc.Scan()
			var b obj
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.UseNumber()
			_ = dec.Decode(&b)
			answers = append(answers, c.answer(head, b))
		}
		_, _ = io.WriteString(w, `{"took":1,"responses":[`+strings.Join(answers, ",")+`]}`)
		if c.between != nil {
			c.between(c, c.rounds)
		}
	default:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":{"type":"unexpected","reason":%q},"status":400}`, r.Method+" "+r.URL.Path)
	}
}

func num(v any) float64 {
	f, _ := v.(json.Number).Float64()
	return f
}

// matching applies the body's issue_date and valuation_sort ranges.
func (c *monthlyCluster) matching(b obj) []fakePermit {
	var out []fakePermit
	filter := b["query"].(obj)["bool"].(obj)["filter"].([]any)
	for _, p := range c.permits {
		ok := true
		for _, f := range filter {
			rg, isRange := f.(obj)["range"].(obj)
			if !isRange {
				continue
			}
			if d, has := rg["issue_date"].(obj); has {
				if gte, has := d["gte"].(string); has && p.day < gte {
					ok = false
				}
				if lte, has := d["lte"].(string); has && p.day > lte {
					ok = false
				}
			}
			if v, has := rg["valuation_sort"].(obj); has {
				val := -1.0
				if p.val != nil {
					val = *p.val
				}
				if gte, has := v["gte"]; has && val < num(gte) {
					ok = false
				}
				if lt, has := v["lt"]; has && val >= num(lt) {
					ok = false
				}
			}
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

const okShards = `"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0}`

func (c *monthlyCluster) answer(head, b obj) string {
	pit := ""
	if p, ok := b["pit"].(obj); ok {
		pit = `,"pit_id":"` + p["id"].(string) + `"`
		if idx, has := head["index"]; has {
			return fmt.Sprintf(`{"error":{"type":"illegal_argument_exception","reason":"index %v with a pit"},"status":400}`, idx)
		}
	}
	if idx, _ := head["index"].(string); strings.Contains(idx, "location") || strings.Contains(idx, "propert") {
		return `{` + okShards + `,"hits":{"total":{"value":1,"relation":"eq"},"hits":[{"_id":"g1","_source":{"doc_id":"g1"}}]},"status":200}`
	}
	ps := c.matching(b)
	known := func(ps []fakePermit) []float64 {
		var vs []float64
		for _, p := range ps {
			if p.val != nil {
				vs = append(vs, *p.val)
			}
		}
		slices.Sort(vs)
		return vs
	}
	aggs, _ := b["aggs"].(obj)
	switch {
	case aggs["months"] != nil:
		byMonth := map[string][]fakePermit{}
		for _, p := range ps {
			byMonth[p.day[:7]] = append(byMonth[p.day[:7]], p)
		}
		var buckets []string
		for _, m := range slices.Sorted(maps.Keys(byMonth)) {
			vs := known(byMonth[m])
			cents := 0.0
			for _, v := range vs {
				cents += float64(int64(math.Round(v * 100)))
			}
			var guide []string
			for _, pc := range guidePercents {
				if len(vs) == 0 {
					guide = append(guide, fmt.Sprintf(`{"key":%g,"value":null}`, pc))
					continue
				}
				exact := vs[min(len(vs)-1, int(pc/100*float64(len(vs))))]
				guide = append(guide, fmt.Sprintf(`{"key":%g,"value":%s}`, pc, mustJSON(c.guide(exact, vs))))
			}
			buckets = append(buckets, fmt.Sprintf(`{"key_as_string":%q,"key":0,"doc_count":%d,"known":{"doc_count":%d,"cents":{"value":%s},"guide":{"values":[%s]}}}`,
				m, len(byMonth[m]), len(vs), mustJSON(cents), strings.Join(guide, ",")))
		}
		return `{` + okShards + pit + `,"hits":{"hits":[]},"aggregations":{"months":{"buckets":[` + strings.Join(buckets, ",") + `]}},"status":200}`
	case aggs["ranks"] != nil:
		vs := known(ps)
		var buckets []string
		for _, r := range aggs["ranks"].(obj)["range"].(obj)["ranges"].([]any) {
			r := r.(obj)
			n := 0
			for _, v := range vs {
				if (r["from"] == nil || v >= num(r["from"])) && (r["to"] == nil || v < num(r["to"])) {
					n++
				}
			}
			buckets = append(buckets, fmt.Sprintf(`%q:{"doc_count":%d}`, r["key"], n))
		}
		return fmt.Sprintf(`{%s%s,"hits":{"total":{"value":%d,"relation":"eq"},"hits":[]},"aggregations":{"ranks":{"buckets":{%s}}},"status":200}`,
			okShards, pit, len(ps), strings.Join(buckets, ","))
	case b["sort"] != nil:
		from, _ := b["from"].(json.Number).Int64()
		size, _ := b["size"].(json.Number).Int64()
		c.maxFrom = max(c.maxFrom, from)
		if from+size > selectWindow {
			return `{"error":{"type":"illegal_argument_exception","reason":"Result window is too large"},"status":400}`
		}
		vs := known(ps)
		if b["sort"].([]any)[0].(obj)["valuation_sort"] == "desc" {
			slices.Reverse(vs)
		}
		var hits []string
		for i := from; i < min(from+size, int64(len(vs))); i++ {
			hits = append(hits, `{"_id":"x","sort":[`+mustJSON(vs[i])+`]}`)
		}
		return fmt.Sprintf(`{%s%s,"hits":{"total":{"value":%d,"relation":"eq"},"hits":[%s]},"status":200}`, okShards, pit, len(vs), strings.Join(hits, ","))
	}
	return `{"error":{"type":"unexpected body"},"status":400}`
}

// mustJSON is v as JSON; it panics if v does not marshal.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wantMonthly is the memory backend's arithmetic over the fixture.
func wantMonthly(ps []fakePermit, from, to string) []readmodel.MonthBucket {
	months := readmodel.MonthsOf(from, to)
	out := make([]readmodel.MonthBucket, len(months))
	vals := map[string][]float64{}
	cents := map[string]int64{}
	count := map[string]int64{}
	for _, p := range ps {
		if p.day < from || p.day > to {
			continue
		}
		m := p.day[:7]
		count[m]++
		if p.val != nil {
			vals[m] = append(vals[m], *p.val)
			cents[m] += int64(math.Round(*p.val * 100))
		}
	}
	for i, m := range months {
		out[i] = readmodel.MonthBucket{Month: m, Count: count[m], TotalValuation: float64(cents[m]) / 100, MedianValuation: readmodel.Median(vals[m])}
	}
	return out
}

// genPermits: per month of 2024, n permits (a tenth of them without a
// valuation), valuations drawn from few values (many ties) or many.
func genPermits(rng *rand.Rand, sizes map[string]int) []fakePermit {
	var out []fakePermit
	for month, n := range sizes {
		distinct := 1 + rng.IntN(3)*rng.IntN(5000)
		for i := 0; i < n; i++ {
			p := fakePermit{day: fmt.Sprintf("%s-%02d", month, 1+rng.IntN(28))}
			if rng.IntN(10) > 0 {
				v := float64(rng.IntN(distinct))*250 + float64(rng.IntN(3))*0.25
				p.val = &v
			}
			out = append(out, p)
		}
	}
	return out
}

func TestPermitMonthlyExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 13))
	noisy := func(exact float64, _ []float64) float64 { return exact * (0.995 + 0.01*rng.Float64()) }
	for name, tc := range map[string]struct {
		sizes     map[string]int
		guide     func(float64, []float64) float64
		from, to  string
		maxRounds int
	}{
		"small months, one or two middle ranks": {sizes: map[string]int{"2024-01": 1, "2024-02": 2, "2024-03": 3, "2024-05": 40, "2024-06": 41},
			guide: noisy, from: "2024-01-10", to: "2024-06-30", maxRounds: 2},
		"a month at the window's edge": {sizes: map[string]int{"2024-02": 19_990, "2024-03": 5}, guide: noisy, from: "2024-01-01", to: "2024-12-31", maxRounds: 2},
		"months deeper than the window, guide off by 0.5%": {sizes: map[string]int{"2024-02": 26_001, "2024-03": 45_000, "2024-04": 12},
			guide: noisy, from: "2024-01-01", to: "2024-04-30", maxRounds: 3},
		"a deep month whose guide is the exact median": {sizes: map[string]int{"2024-07": 30_000},
			guide: func(e float64, _ []float64) float64 { return e }, from: "2024-07-01", to: "2024-07-31", maxRounds: 3},
		"no valuations in the window": {sizes: map[string]int{"2023-12": 5}, guide: noisy, from: "2024-01-01", to: "2024-03-31", maxRounds: 1},
	} {
		t.Run(name, func(t *testing.T) {
			c := &monthlyCluster{permits: genPermits(rng, tc.sizes), guide: tc.guide}
			s := c.store(t)
			got, err := s.PermitMonthly(context.Background(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef("g1"), FromDate: tc.from, ToDate: tc.to})
			require.NoError(t, err)
			require.Equal(t, wantMonthly(c.permits, tc.from, tc.to), got)
			require.LessOrEqual(t, c.rounds, tc.maxRounds, "msearch rounds")
			require.Less(t, c.maxFrom, int64(selectWindow))
			require.Equal(t, []string{"pit-1"}, c.opened)
			require.Equal(t, []string{"pit-1"}, c.closed, "the point in time is closed")
		})
	}
}

// TestPermitMonthlyAllTiesDeep: a deep month whose median value repeats
// beyond the window is read from a one-value range without a sorted read.
func TestPermitMonthlyAllTiesDeep(t *testing.T) {
	var ps []fakePermit
	for i := range 50_000 {
		v := 150000.0
		if i%5 == 0 {
			v = float64(i)
		}
		ps = append(ps, fakePermit{day: "2024-03-09", val: &v})
	}
	c := &monthlyCluster{permits: ps, guide: func(e float64, _ []float64) float64 { return e }}
	got, err := c.store(t).PermitMonthly(context.Background(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef("g1"), FromDate: "2024-03-01", ToDate: "2024-03-31"})
	require.NoError(t, err)
	require.Equal(t, wantMonthly(ps, "2024-03-01", "2024-03-31"), got)
	require.Equal(t, 2, c.rounds, "the median is a one-value range's: no sorted read")
}

// TestPermitMonthlyRefusesAnEstimate: when the guide is so far off that
// the median's range is beyond a sorted read, the series fails; it never
// answers an approximate median.
func TestPermitMonthlyRefusesAnEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ps []fakePermit
	for range 60_000 {
		v := float64(rng.IntN(1_000_000))
		ps = append(ps, fakePermit{day: "2024-03-09", val: &v})
	}
	c := &monthlyCluster{permits: ps, guide: func(_ float64, vs []float64) float64 { return vs[len(vs)-1] + 1 }}
	_, err := c.store(t).PermitMonthly(context.Background(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef("g1"), FromDate: "2024-03-01", ToDate: "2024-03-31"})
	var ew errMedianWindow
	require.ErrorAs(t, err, &ew)
	require.Equal(t, []string{"pit-1"}, c.closed, "the point in time is closed on error")
}

// TestPermitMonthlyChangedWithoutPIT: a cluster that cannot open a point
// in time, with a write landing between the rounds: the read fails as
// unavailable rather than mixing two states.
func TestPermitMonthlyChangedWithoutPIT(t *testing.T) {
	v := 10.0
	c := &monthlyCluster{noPIT: true, guide: func(e float64, _ []float64) float64 { return e },
		permits: []fakePermit{{day: "2024-03-09", val: &v}, {day: "2024-03-10", val: &v}},
		between: func(c *monthlyCluster, round int) {
			if round == 1 {
				w := 99.0
				c.permits = append(c.permits, fakePermit{day: "2024-03-11", val: &w})
			}
		}}
	_, err := c.store(t).PermitMonthly(context.Background(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef("g1"), FromDate: "2024-03-01", ToDate: "2024-03-31"})
	require.True(t, errors.Is(err, readmodel.ErrUnavailable), "%v", err)
	require.Empty(t, c.closed)
}

func TestGuideRanges(t *testing.T) {
	rs := guideRanges([]float64{5, 1, 5, 3})
	var points []float64
	for i, r := range rs {
		if r.point() {
			points = append(points, *r.lo)
		}
		if i > 0 {
			require.Equal(t, *rs[i-1].hi, *r.lo, "ranges are contiguous")
		}
	}
	require.Equal(t, []float64{1, 3, 5}, points)
	require.Nil(t, rs[0].lo)
	require.Nil(t, rs[len(rs)-1].hi)
}
