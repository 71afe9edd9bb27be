package opensearch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// Answers recorded from OpenSearch 2.x (trimmed to what the reader reads):
// a search that lost a shard, one the server-side timeout cut short, and
// a rejection by a full search queue, as one search of an _msearch and as
// the whole request.
const (
	shardFailedAnswer = `{"took":12,"timed_out":false,"_shards":{"total":3,"successful":2,"skipped":0,"failed":1,` +
		`"failures":[{"shard":2,"index":"permitd-leads-v1","node":"Xq3hM1","reason":{"type":"node_disconnected_exception",` +
		`"reason":"[os-2][10.0.2.7:9300][indices:data/read/search[phase/query]] disconnected"}}]},` +
		`"hits":{"total":{"value":0,"relation":"eq"},"max_score":null,"hits":[]},"status":200}`
	timedOutAnswer = `{"took":10004,"timed_out":true,"_shards":{"total":3,"successful":3,"skipped":0,"failed":0},` +
		`"hits":{"total":{"value":0,"relation":"eq"},"max_score":null,"hits":[]},"status":200}`
	rejectedItem = `{"error":{"root_cause":[{"type":"rejected_execution_exception","reason":"rejected execution of ` +
		`org.opensearch.action.search.SearchTask on QueueResizingOpenSearchThreadPoolExecutor[name = os-1/search, queue capacity = 1000]"}],` +
		`"type":"rejected_execution_exception","reason":"rejected execution of org.opensearch.action.search.SearchTask"},"status":429}`
	goodAnswer = `{"took":1,"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},` +
		`"hits":{"total":{"value":1,"relation":"eq"},"hits":[{"_id":"g1","_source":` +
		`{"doc_id":"g1","version":1,"deleted":false,"geo_id":"g1","geo_type":"city","name":"Seattle","state":"WA","lat":0,"lon":0}}]},"aggregations":{"permits":{"value":0}},"status":200}`
)

// readerCalls is every Reader method, with arguments that reach the
// cluster.
var readerCalls = map[string]func(context.Context, *Store) error{
	"Location": func(ctx context.Context, s *Store) error {
		_, err := s.Location(ctx, readmodel.ParseGeoRef("g1"))
		return err
	},
	"Location of a property": func(ctx context.Context, s *Store) error {
		_, err := s.Location(ctx, readmodel.ParseGeoRef(prop))
		return err
	},
	"ResolveCandidates": func(ctx context.Context, s *Store) error {
		_, err := s.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "Seattle", Limit: 5})
		return err
	},
	"ResolveCandidates of an address": func(ctx context.Context, s *Store) error {
		_, err := s.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "600 University St, Seattle, WA", Limit: 5})
		return err
	},
	"SearchPermits": func(ctx context.Context, s *Store) error {
		_, err := s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("g1"), Desc: true, Limit: 10})
		return err
	},
	"SearchProperties": func(ctx context.Context, s *Store) error {
		_, err := s.SearchProperties(ctx, readmodel.PropertyQuery{Address: "600 University St, Seattle, WA", Limit: 5})
		return err
	},
	"GeoSignalsForLocation": func(ctx context.Context, s *Store) error {
		_, err := s.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef("g1"), nil)
		return err
	},
	"SearchGeoSignals": func(ctx context.Context, s *Store) error {
		_, err := s.SearchGeoSignals(ctx, readmodel.GeoSignalQuery{State: "WA", Limit: 10})
		return err
	},
	"Catalog": func(ctx context.Context, s *Store) error {
		_, err := s.Catalog(ctx, readmodel.CatalogQuery{State: "WA"})
		return err
	},
	"PermitLeads": func(ctx context.Context, s *Store) error {
		_, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("g1")}, Sort: readmodel.SortEventDateDesc, Limit: 10})
		return err
	},
	"PermitStats": func(ctx context.Context, s *Store) error {
		_, err := s.PermitStats(ctx, readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("g1")}, Today: "2026-11-22", TopN: 5})
		return err
	},
	"PermitMonthly": func(ctx context.Context, s *Store) error {
		_, err := s.PermitMonthly(ctx, readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef("g1"), FromDate: "2024-01-01", ToDate: "2024-12-31"})
		return err
	},
	"Health": func(ctx context.Context, s *Store) error { _, err := s.Health(ctx); return err },
}

// partialCluster answers every _search with bad, and every _msearch with
// good answers for all its searches but the last, which gets bad; status
// is the HTTP status of every answer. It records each request.
func partialCluster(t *testing.T, status int, bad string) (*Store, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	s := storeOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+"\n"+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !strings.HasSuffix(r.URL.Path, "/_msearch") || status != http.StatusOK {
			if strings.HasPrefix(bad, `{"error"`) {
				status = http.StatusTooManyRequests // a _search is rejected as a whole
			}
			w.WriteHeader(status)
			_, _ = io.WriteString(w, bad)
			return
		}
		n := strings.Count(strings.TrimSpace(string(b)), "\n")/2 + 1
		answers := make([]string, n)
		for i := range answers {
			answers[i] = goodAnswer
		}
		answers[n-1] = bad
		_, _ = io.WriteString(w, `{"took":3,"responses":[`+strings.Join(answers, ",")+`]}`)
	}))
	return s, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// TestReadsFailClosed: for every Reader method, an answer that lost a
// shard, timed out on the server or was rejected with 429 is
// readmodel.ErrUnavailable, never a short answer, a 404 or a cursor.
func TestReadsFailClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		bad    string
		want   string
	}{
		{"shard failed", http.StatusOK, shardFailedAnswer, "1 of 3 shards failed"},
		{"timed out", http.StatusOK, timedOutAnswer, "timed out after 10s"},
		{"429 of one search", http.StatusOK, rejectedItem, "429"},
		{"429 of the request", http.StatusTooManyRequests, rejectedItem, "429"},
	} {
		for name, call := range readerCalls {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				s, seen := partialCluster(t, tc.status, tc.bad)
				err := call(context.Background(), s)
				require.ErrorIs(t, err, readmodel.ErrUnavailable)
				require.NotErrorIs(t, err, readmodel.ErrNotFound)
				require.ErrorContains(t, err, tc.want)
				reqs := seen()
				require.NotEmpty(t, reqs)
				for _, req := range reqs {
					requireFailClosed(t, req)
				}
			})
		}
	}
}

// requireFailClosed checks one recorded search request refuses partial
// results and carries the server-side timeout.
func requireFailClosed(t *testing.T, req string) {
	t.Helper()
	head, body, _ := strings.Cut(req, "\n")
	lines := strings.Split(strings.TrimSpace(body), "\n")
	switch {
	case strings.Contains(head, "/_search/point_in_time"):
		// opening or closing a point in time: not a search
	case strings.HasPrefix(head, "POST /_msearch"):
		require.Zero(t, len(lines)%2, "header and body lines")
		for i := 0; i < len(lines); i += 2 {
			var h, b map[string]any
			require.NoError(t, json.Unmarshal([]byte(lines[i]), &h))
			require.NoError(t, json.Unmarshal([]byte(lines[i+1]), &b))
			require.Equal(t, false, h["allow_partial_search_results"], lines[i])
			require.Equal(t, searchTimeout, b["timeout"], lines[i+1])
		}
	case strings.Contains(head, "/_search"):
		require.Contains(t, head, "allow_partial_search_results=false")
		var b map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &b))
		require.Equal(t, searchTimeout, b["timeout"])
	default:
		t.Fatalf("not a search: %s", head)
	}
}

// TestWholeAnswersPass: the same reads on complete answers do not fail
// for being partial (the check looks at failed shards and timed_out, not
// at successful < total, which skipped shards make normal).
func TestWholeAnswersPass(t *testing.T) {
	skipped := strings.Replace(goodAnswer, `"total":1,"successful":1,"skipped":0`, `"total":3,"successful":3,"skipped":2`, 1)
	s, _ := partialCluster(t, http.StatusOK, skipped)
	_, err := s.Location(context.Background(), readmodel.ParseGeoRef("g1"))
	require.NoError(t, err)
	_, err = s.Catalog(context.Background(), readmodel.CatalogQuery{State: "WA"})
	require.NoError(t, err)
}

// TestCountsSubtractTombstones: Counts is every document (match_all)
// minus the tombstones, per kind.
func TestCountsSubtractTombstones(t *testing.T) {
	var answers []string
	for i := range readmodel.Kinds {
		answers = append(answers, hits(100*(i+1)), hits(i))
	}
	s, seen := fakeAnswers(t, `{"responses":[`+strings.Join(answers, ",")+`]}`)
	got, err := s.Counts(context.Background())
	require.NoError(t, err)
	for i, k := range readmodel.Kinds {
		require.Equal(t, int64(100*(i+1)-i), got[k], k)
	}
	require.Len(t, *seen, 1)
	require.Contains(t, (*seen)[0], `"match_all":{}`)
}

// TestStatsSpellTopLists: county and city top lists are named as their
// locations spell them, ordered by count then name before the cut, and
// only the entries that can make the cut are looked up.
func TestStatsSpellTopLists(t *testing.T) {
	agg := func(buckets string) string { return `{"sum_other_doc_count":0,"buckets":[` + buckets + `]}` }
	stats := `{"status":200,"hits":{"total":{"value":7,"relation":"eq"},"hits":[]},"aggregations":{` +
		`"by_signal":` + agg(`{"key":"k","doc_count":7}`) + `,` +
		`"top_counties":` + agg(`{"key":"king county","doc_count":6},{"key":"pierce county","doc_count":1}`) + `,` +
		`"top_cities":` + agg(`{"key":"b town","doc_count":3},{"key":"a ville","doc_count":3},{"key":"zeta","doc_count":1}`) + `,` +
		`"top_zips":` + agg(`{"key":"98101","doc_count":4},{"key":"98102","doc_count":3}`) + `,` +
		`"confidence":{"buckets":{"high":{"doc_count":7},"medium":{"doc_count":0}}},` +
		`"freshness":{"buckets":{"d0_7":{"doc_count":7},"d8_14":{"doc_count":0},"d15_30":{"doc_count":0}}}}}`
	named := func(key, name string) string {
		return `{"name":"` + name + `","name_key":"` + key + `"}`
	}
	s, seen := fakeAnswers(t,
		`{"responses":[`+hits(1, locSrc)+`,`+stats+`]}`,
		`{"responses":[`+hits(-1, named("king county", "King County"))+`,`+hits(-1, named("a ville", "Zz Ville"), named("b town", "Bee Town"))+`]}`)
	// A floor between the class bounds: the leads themselves are aggregated.
	st, err := s.PermitStats(context.Background(), readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("g1"), MinConfidence: ptr(0.6)}, Today: "2026-11-22", TopN: 1})
	require.NoError(t, err)
	require.Equal(t, []readmodel.ValueCount{{Value: "King County", Count: 6}}, st.TopCounties)
	require.Equal(t, []readmodel.ValueCount{{Value: "Bee Town", Count: 3}}, st.TopCities, "ties ordered by the names shown, then cut")
	require.Equal(t, []readmodel.ValueCount{{Value: "98101", Count: 4}}, st.TopZips)
	require.Len(t, *seen, 2)
	lines := strings.Split(strings.TrimSpace((*seen)[1][strings.IndexByte((*seen)[1], '\n')+1:]), "\n")
	require.Len(t, lines, 4, "counties and cities in one _msearch")
	require.Contains(t, lines[1], `{"terms":{"name_key":["king county"]}}`, "pierce county cannot make the cut")
	require.Contains(t, lines[3], `{"terms":{"name_key":["a ville","b town"]}}`, "the tie at the cut is looked up whole")
}

// TestNameKeyIsTheLeadsNorm: a location's name_key is the form the
// projection counts leads under.
func TestNameKeyIsTheLeadsNorm(t *testing.T) {
	for _, name := range []string{"King County", "Seattle", "St. Louis", "Coeur d'Alene", "Winston-Salem", "  DeKalb  County ", "Española", "O'Fallon"} {
		require.Equal(t, readmodel.NormName(name), nameKey(readmodel.Location{GeoType: readmodel.GeoCity, Name: name}), name)
	}
	require.Empty(t, nameKey(readmodel.Location{GeoType: readmodel.GeoZip, Name: "98101"}))
}
