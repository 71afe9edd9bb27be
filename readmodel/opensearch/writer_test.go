package opensearch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// fakeCluster answers one path with a canned body and records requests.
func fakeCluster(t *testing.T, status int, body string) (*Store, *[]string) {
	t.Helper()
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+"\n"+string(b))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	s, err := New(Config{Addresses: []string{srv.URL}})
	require.NoError(t, err)
	return s, &seen
}

func TestApplyCountsStaleAndFailsOnItemErrors(t *testing.T) {
	b := readmodel.Batch{
		Locations: []readmodel.Location{{GeoID: "g1", GeoType: readmodel.GeoCity, Name: "A", Version: 2}},
		Deletes:   []readmodel.Delete{{Kind: readmodel.KindLocation, ID: "g2", Version: 3}},
	}
	for _, tc := range []struct {
		name    string
		items   string
		want    readmodel.ApplyResult
		wantErr string
	}{
		{"applied and stale", `[{"index":{"_id":"g1","status":201}},{"index":{"_id":"g2","status":409,"error":{"type":"version_conflict_engine_exception"}}}]`,
			readmodel.ApplyResult{Applied: 1, Stale: 1}, ""},
		{"item error", `[{"index":{"_id":"g1","status":200}},{"index":{"_id":"g2","status":400,"error":{"type":"strict_dynamic_mapping_exception","reason":"field [x] not allowed"}}}]`,
			readmodel.ApplyResult{Applied: 1}, "strict_dynamic_mapping_exception"},
		{"short answer", `[{"index":{"_id":"g1","status":201}}]`, readmodel.ApplyResult{}, "bulk answered 1 items for 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, seen := fakeCluster(t, 200, `{"errors":true,"items":`+tc.items+`}`)
			res, err := s.Apply(context.Background(), b)
			require.Equal(t, tc.want, res)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
			}
			require.Len(t, *seen, 1)
			req := (*seen)[0]
			require.True(t, strings.HasPrefix(req, "POST /_bulk?refresh=wait_for\n"), req)
			require.Contains(t, req, `"version_type":"external"`)
			require.Contains(t, req, `{"doc_id":"g2","version":3,"deleted":true}`, "deletes are versioned tombstones")
		})
	}
}

func TestUnavailableOn5xx(t *testing.T) {
	s, _ := fakeCluster(t, 503, `{"error":{"type":"cluster_block_exception","reason":"red"}}`)
	_, err := s.Catalog(context.Background(), readmodel.CatalogQuery{State: "WA"})
	require.ErrorIs(t, err, readmodel.ErrUnavailable)
}

func TestLocationReadsOneMsearch(t *testing.T) {
	s, seen := fakeCluster(t, 200, `{"responses":[
	 {"status":200,"hits":{"hits":[{"_id":"g1","_source":{"doc_id":"g1","version":4,"deleted":false,"geo_id":"g1","geo_type":"city","name":"Seattle","lat":47.6,"lon":-122.3}}]}},
	 {"status":200,"hits":{"total":{"value":12},"hits":[]},"aggregations":{"latest":{"value":1719705600000,"value_as_string":"2024-06-30"}}}]}`)
	l, err := s.Location(context.Background(), "g1")
	require.NoError(t, err)
	require.Equal(t, readmodel.Location{GeoID: "g1", GeoType: readmodel.GeoCity, Name: "Seattle", Lat: 47.6, Lon: -122.3, Version: 4,
		PermitCount: 12, LatestPermitDate: "2024-06-30"}, l)
	require.Len(t, *seen, 1, "one request per read")
	require.True(t, strings.HasPrefix((*seen)[0], "POST /_msearch\n"))
}

func TestPermitPageNextKey(t *testing.T) {
	src := func(id, date string, undated int) string {
		d := ""
		if date != "" {
			d = `"issue_date":"` + date + `",`
		}
		return `{"_id":"` + id + `","_source":{"doc_id":"` + id + `","version":1,"deleted":false,"permit_id":"` + id + `",` + d +
			`"undated":` + string(rune('0'+undated)) + `,"issue_day":0,"geo_links":[{"geo_id":"g1","geo_type":"zip","confidence":1,"method":"source_zip"}]}}`
	}
	s, _ := fakeCluster(t, 200, `{"responses":[{"status":200,"hits":{"hits":[{"_id":"g1","_source":{"doc_id":"g1","version":1,"deleted":false}}]}},
	 {"status":200,"hits":{"hits":[`+src("a", "2024-01-02", 0)+`,`+src("b", "", 1)+`,`+src("c", "", 1)+`]}}]}`)
	page, err := s.SearchPermits(context.Background(), readmodel.PermitQuery{GeoID: "g1", Desc: true, Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Permits, 2)
	require.Equal(t, &readmodel.PermitKey{IssueDate: "", PermitID: "b"}, page.Next)
	require.Equal(t, "g1", page.Permits[0].Match.GeoID)
}
