package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestResolvePropertyCandidates drives the property scope of
// ResolveCandidates against a fake cluster: one _msearch for the
// properties, one for their permit counts and linked locations.
func TestResolvePropertyCandidates(t *testing.T) {
	prop := func(id, city, cityGeo string) string {
		return `{"_id":"` + id + `","_source":{"doc_id":"` + id + `","version":1,"deleted":false,"property_id":"` + id +
			`","canonical_address":"600 UNIVERSITY ST, ` + city + `, WA","normalized_address":"600 UNIVERSITY ST","house_number":"600",` +
			`"city":"` + city + `","city_norm":"` + city + `","state":"WA","geo_links":[` +
			`{"geo_id":"` + cityGeo + `","geo_type":"city","confidence":1,"method":"zip_city"},` +
			`{"geo_id":"g_wa","geo_type":"state","confidence":1,"method":"state"}]}}`
	}
	loc := func(id, typ, name string) string {
		return `{"_id":"` + id + `","_source":{"doc_id":"` + id + `","version":1,"deleted":false,"geo_id":"` + id +
			`","geo_type":"` + typ + `","name":"` + name + `","state_name":"Washington"}}`
	}
	answers := []string{
		`{"responses":[{"status":200,"hits":{"hits":[` + prop("prop_a", "SEATTLE", "g_sea") + `,` + prop("prop_b", "SPOKANE", "g_spo") + `]}}]}`,
		`{"responses":[
		 {"status":200,"hits":{"hits":[]},"aggregations":{"by_property":{"buckets":[{"key":"prop_a","doc_count":3,"latest":{"value":1719705600000}}]}}},
		 {"status":200,"hits":{"hits":[` + loc("g_sea", "city", "Seattle") + `,` + loc("g_spo", "city", "Spokane") + `,` + loc("g_wa", "state", "Washington") + `]}}]}`,
	}
	var seen []string
	s := storeOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, string(b))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answers[min(len(seen), len(answers))-1])
	}))

	got, err := s.ResolveCandidates(context.Background(), readmodel.ResolveQuery{Text: "600 University St", GeoType: readmodel.GeoProperty, Limit: 5})
	require.NoError(t, err)
	require.Len(t, seen, 2)
	require.Equal(t, 1, strings.Count(seen[1], `"g_wa"`), "a location shared by the matches is fetched once")
	require.Len(t, got, 2)
	a, b := got[0], got[1]
	require.Equal(t, "prop_a", a.Location.GeoID)
	require.Equal(t, readmodel.GeoProperty, a.Location.GeoType)
	require.Equal(t, "address", a.MatchMethod)
	require.Equal(t, "review", a.Decision, "two equal matches are ambiguous")
	require.Equal(t, "Seattle", a.Location.City)
	require.Equal(t, "g_sea", a.Location.CityGeoID)
	require.Equal(t, "Washington", a.Location.StateName)
	require.Equal(t, int64(3), a.Location.PermitCount)
	require.Equal(t, "2024-06-30", a.Location.LatestPermitDate)
	require.Equal(t, "prop_b", b.Location.GeoID)
	require.Equal(t, "Spokane", b.Location.City)
	require.Equal(t, int64(0), b.Location.PermitCount)
}

// storeOn is a Store whose cluster is h (an httptest server closed at
// the end of the test).
func storeOn(t testing.TB, h http.Handler) *Store {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s, err := New(Params{Addresses: []string{srv.URL}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() }) // before srv.Close: no poll of its node stats reaches a later test's server
	return s
}

// fakeAnswers answers the i-th request with answers[i] (the last one
// again past the end) and records each as "METHOD URI\nbody".
func fakeAnswers(t *testing.T, answers ...string) (*Store, *[]string) {
	t.Helper()
	var seen []string
	s := storeOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+"\n"+string(b))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answers[min(len(seen), len(answers))-1])
	}))
	return s, &seen
}

// hits renders a search answer: total is hits.total.value (-1 for none).
func hits(total int, sources ...string) string {
	var b strings.Builder
	b.WriteString(`{"status":200,"hits":{`)
	if total >= 0 {
		fmt.Fprintf(&b, `"total":{"value":%d,"relation":"eq"},`, total)
	}
	b.WriteString(`"hits":[`)
	for i, src := range sources {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"_id":"%d","_source":%s}`, i, src)
	}
	b.WriteString(`]}}`)
	return b.String()
}

func entrySrc(state, key, status string) string {
	return `{"state":"` + state + `","signal_key":"` + key + `","status":"` + status + `"}`
}

func rowSrc(geoID, state, key string, score float64) string {
	return fmt.Sprintf(`{"doc_id":"%s|%s","version":1,"deleted":false,"geo_id":"%s","geo_type":"city","state":"%s","signal_key":"%s","score":%g,"confidence":0.5,"reasons":[]}`,
		geoID, key, geoID, state, key, score)
}

var locSrc = `{"doc_id":"g1","version":1,"deleted":false,"geo_id":"g1","geo_type":"city","name":"Seattle","lat":0,"lon":0}`

// TestKeepActive: a row is served only when its own state lists its key
// with status exactly "active".
func TestKeepActive(t *testing.T) {
	row := func(state, key string) geoSignalDoc {
		return geoSignalDoc{GeoID: "g1", State: state, SignalKey: key}
	}
	active := activeSet([]catalogDoc{
		{State: "WA", SignalKey: "a_active", Status: "active"},
		{State: "WA", SignalKey: "b_retired", Status: "retired"},
		{State: "WA", SignalKey: "c_case", Status: "Active"},
		{State: "OR", SignalKey: "d_other_state", Status: "active"},
		{State: "WA", SignalKey: "f_active", Status: "active"},
	})
	got := keepActive([]geoSignalDoc{
		row("WA", "a_active"),
		row("WA", "b_retired"),
		row("WA", "c_case"),
		row("WA", "d_other_state"),
		row("WA", "e_no_entry"),
		row("WA", "f_active"),
		row("", "a_active"),
	}, active)
	keys := make([]string, len(got))
	for i, g := range got {
		keys[i] = g.State + "/" + g.SignalKey
	}
	require.Equal(t, []string{"WA/a_active", "WA/f_active"}, keys, "active rows kept in order; inactive, other-state, missing entries dropped")
	require.NotNil(t, keepActive(nil, active), "no rows: an empty slice, not nil")
}

func TestGeoSignalsForLocationServesActiveRows(t *testing.T) {
	s, seen := fakeAnswers(t, `{"responses":[`+
		hits(1, locSrc)+`,`+
		hits(3, entrySrc("OR", "momentum", "active"), entrySrc("WA", "velocity", "active"), entrySrc("WA", "zeta", "active"))+`,`+
		hits(3, rowSrc("g1", "WA", "momentum", 0.9), rowSrc("g1", "WA", "velocity", 0.5), rowSrc("g1", "WA", "zeta", 0.1))+`]}`)
	got, err := s.GeoSignalsForLocation(context.Background(), readmodel.ParseGeoRef("g1"), []string{"momentum", "velocity", "zeta"})
	require.NoError(t, err)
	require.Equal(t, readmodel.GeoCity, got.GeoType, "the geo's type comes with its rows")
	rows := got.Signals
	require.Len(t, rows, 2, "momentum is active in OR only")
	require.Equal(t, "velocity", rows[0].SignalKey)
	require.Equal(t, "zeta", rows[1].SignalKey)

	require.Len(t, *seen, 1, "one round trip")
	req := (*seen)[0]
	require.True(t, strings.HasPrefix(req, "POST /_msearch\n"), req)
	lines := strings.Split(strings.TrimSpace(req[strings.IndexByte(req, '\n')+1:]), "\n")
	require.Len(t, lines, 6, "three searches")
	require.Equal(t, `{"allow_partial_search_results":false,"index":"`+s.read(readmodel.KindCatalog)+`"}`, lines[2])
	want, err := json.Marshal(guarded(activeCatalogBody("", []string{"momentum", "velocity", "zeta"}, maxActiveEntries)))
	require.NoError(t, err)
	require.JSONEq(t, string(want), lines[3], "the active catalog of every state, restricted to the keys")
	require.Contains(t, lines[5], `"track_total_hits":true`)
}

func TestGeoSignalsForLocationUnknownGeo(t *testing.T) {
	s, _ := fakeAnswers(t, `{"responses":[`+hits(0)+`,`+hits(1, entrySrc("WA", "velocity", "active"))+`,`+hits(0)+`]}`)
	_, err := s.GeoSignalsForLocation(context.Background(), readmodel.ParseGeoRef("g404"), nil)
	require.ErrorIs(t, err, readmodel.ErrNotFound)
}

// TestBoundedReadsFailOnOverflow: a bounded read whose total exceeds the
// hits returned is an error naming what overflowed, never a shorter answer.
func TestBoundedReadsFailOnOverflow(t *testing.T) {
	ctx := context.Background()
	geoRows := func(s *Store) (int, error) {
		rows, err := s.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef("g1"), nil)
		return len(rows.Signals), err
	}
	for _, tc := range []struct {
		name    string
		answer  string
		read    func(s *Store) (int, error) // the items answered
		wantErr string
	}{
		{"active catalog of every state",
			`{"responses":[` + hits(1, locSrc) + `,` + hits(maxActiveEntries+1, entrySrc("WA", "velocity", "active")) + `,` + hits(1, rowSrc("g1", "WA", "velocity", 1)) + `]}`,
			geoRows,
			"active catalog entries overflow maxActiveEntries: 10001 match, 1 returned"},
		{"rows of one geography",
			`{"responses":[` + hits(1, locSrc) + `,` + hits(1, entrySrc("WA", "velocity", "active")) + `,` + hits(maxRowsPerGeo+5, rowSrc("g1", "WA", "velocity", 1)) + `]}`,
			geoRows,
			"geo signal rows of g1 overflow maxRowsPerGeo: 1005 match, 1 returned"},
		{"rows without a total",
			`{"responses":[` + hits(1, locSrc) + `,` + hits(1, entrySrc("WA", "velocity", "active")) + `,` + hits(-1, rowSrc("g1", "WA", "velocity", 1)) + `]}`,
			geoRows,
			"geo signal rows of g1: the answer has no hits.total, so it may be truncated at maxRowsPerGeo=1000"},
		{"active keys of a state",
			hits(maxCatalog+1, entrySrc("WA", "velocity", "active")),
			func(s *Store) (int, error) {
				page, err := s.SearchGeoSignals(ctx, readmodel.GeoSignalQuery{State: "WA", Limit: 10})
				return len(page.Signals), err
			},
			"active catalog entries of WA overflow maxCatalog: 1001 match, 1 returned"},
		{"catalog of a state",
			hits(maxCatalog+1, entrySrc("WA", "velocity", "active")),
			func(s *Store) (int, error) {
				entries, err := s.Catalog(ctx, readmodel.CatalogQuery{State: "WA"})
				return len(entries), err
			},
			"catalog entries of WA overflow maxCatalog: 1001 match, 1 returned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, seen := fakeAnswers(t, tc.answer)
			n, err := tc.read(s)
			require.EqualError(t, err, "opensearch: "+tc.wantErr)
			require.NotErrorIs(t, err, readmodel.ErrUnavailable, "a retry cannot help")
			require.Len(t, *seen, 1, "nothing is read after the overflow")
			require.Zero(t, n, "no partial answer")
		})
	}
}

func TestSearchGeoSignalsActiveKeys(t *testing.T) {
	ctx := context.Background()
	t.Run("page restricted to the active keys", func(t *testing.T) {
		s, seen := fakeAnswers(t,
			hits(2, entrySrc("WA", "velocity", "active"), entrySrc("WA", "momentum", "active")),
			hits(-1, rowSrc("g1", "WA", "velocity", 0.9), rowSrc("g2", "WA", "momentum", 0.8), rowSrc("g3", "WA", "velocity", 0.7)))
		page, err := s.SearchGeoSignals(ctx, readmodel.GeoSignalQuery{State: "WA", SignalKeys: []string{"velocity", "momentum", "retired"}, Limit: 2})
		require.NoError(t, err)
		require.Len(t, page.Signals, 2)
		require.Equal(t, &readmodel.GeoSignalKey{Score: 0.8, SignalKey: "momentum", GeoID: "g2"}, page.Next)

		require.Len(t, *seen, 2, "the active keys, then the page")
		require.True(t, strings.HasPrefix((*seen)[0], "POST /"+s.read(readmodel.KindCatalog)+"/_search?allow_partial_search_results=false\n"), (*seen)[0])
		want, err := json.Marshal(guarded(activeCatalogBody("WA", []string{"velocity", "momentum", "retired"}, maxCatalog)))
		require.NoError(t, err)
		require.JSONEq(t, string(want), (*seen)[0][strings.IndexByte((*seen)[0], '\n')+1:])
		require.True(t, strings.HasPrefix((*seen)[1], "POST /"+s.read(readmodel.KindGeoSignal)+"/_search?allow_partial_search_results=false\n"), (*seen)[1])
		require.Contains(t, (*seen)[1], `{"terms":{"signal_key":["momentum","velocity"]}}`, "the active keys, sorted; not the query's")
	})
	for _, tc := range []struct {
		name    string
		catalog string
		q       readmodel.GeoSignalQuery
	}{
		{"no active key", hits(0), readmodel.GeoSignalQuery{State: "WA", Limit: 5}},
		{"none of the keys active", hits(0), readmodel.GeoSignalQuery{State: "WA", SignalKeys: []string{"retired"}, Limit: 5}},
		{"answer with another status", hits(1, entrySrc("WA", "velocity", "retired")), readmodel.GeoSignalQuery{State: "WA", Limit: 5}},
		{"answer of another state", hits(1, entrySrc("OR", "velocity", "active")), readmodel.GeoSignalQuery{State: "WA", Limit: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, seen := fakeAnswers(t, tc.catalog, hits(-1, rowSrc("g1", "WA", "velocity", 0.9)))
			page, err := s.SearchGeoSignals(ctx, tc.q)
			require.NoError(t, err)
			require.Equal(t, readmodel.GeoSignalPage{Signals: []readmodel.GeoSignal{}}, page, "empty page, Next nil")
			require.Len(t, *seen, 1, "the rows are not searched")
		})
	}
}

// TestStatsFailOnTermsOverflow: a terms aggregation that could not hold
// every value (sum_other_doc_count > 0) makes PermitStats fail rather
// than answer a distribution or top list that is missing values.
func TestStatsFailOnTermsOverflow(t *testing.T) {
	agg := func(other int) string {
		return fmt.Sprintf(`{"sum_other_doc_count":%d,"buckets":[{"key":"98101","doc_count":4}]}`, other)
	}
	stats := func(otherZips int) string {
		return `{"status":200,"hits":{"total":{"value":4,"relation":"eq"},"hits":[]},"aggregations":{` +
			`"by_signal":` + agg(0) + `,"top_counties":` + agg(0) + `,"top_cities":` + agg(0) + `,"top_zips":` + agg(otherZips) + `,` +
			`"confidence":{"buckets":{"high":{"doc_count":4},"medium":{"doc_count":0}}},` +
			`"freshness":{"buckets":{"d0_7":{"doc_count":4},"d8_14":{"doc_count":0},"d15_30":{"doc_count":0}}}}}`
	}
	// A floor between the class bounds: the leads themselves are aggregated.
	q := readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("g1"), MinConfidence: ptr(0.6)}, Today: "2026-11-22", TopN: 5}
	s, _ := fakeAnswers(t, `{"responses":[`+hits(1, locSrc)+`,`+stats(0)+`]}`)
	st, err := s.PermitStats(context.Background(), q)
	require.NoError(t, err)
	require.Equal(t, []readmodel.ValueCount{{Value: "98101", Count: 4}}, st.TopZips)

	s, _ = fakeAnswers(t, `{"responses":[`+hits(1, locSrc)+`,`+stats(7)+`]}`)
	_, err = s.PermitStats(context.Background(), q)
	require.EqualError(t, err, "opensearch: stats top_zips overflow maxTerms: 7 leads hold values beyond the first 10000")
}

// TestCloseStopsTheNodeStatsPolls: the client polls its nodes' stats in
// the background (here every 20 ms, the interval set by opensearch-go's
// variable); after Close no request reaches the address any more, so a
// Store dropped by one test cannot answer into a later test's server.
func TestCloseStopsTheNodeStatsPolls(t *testing.T) {
	t.Setenv("OPENSEARCH_GO_NODE_STATS_INTERVAL", "20ms")
	var polls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_nodes/") {
			polls.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	s, err := New(Params{Addresses: []string{srv.URL}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return polls.Load() >= 2 }, 10*time.Second, 10*time.Millisecond, "the client polls")
	require.NoError(t, s.Close())
	time.Sleep(50 * time.Millisecond) // a poll under way ends
	after := polls.Load()
	time.Sleep(200 * time.Millisecond) // ten intervals
	require.Equal(t, after, polls.Load(), "no poll after Close")
}
