package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// fakeCluster answers one path with a canned body and records requests.
func fakeCluster(t *testing.T, status int, body string) (*Store, *[]string) {
	t.Helper()
	var seen []string
	s := storeOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+"\n"+string(b))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	return s, &seen
}

func TestApplyClassifiesItems(t *testing.T) {
	b := readmodel.Batch{
		Locations: []readmodel.Location{{GeoID: "g1", GeoType: readmodel.GeoCity, Name: "A", Version: 2}},
		Deletes:   []readmodel.Delete{{Kind: readmodel.KindLocation, ID: "g2", Version: 3}},
	}
	const mapping = `{"type":"mapper_parsing_exception","reason":"failed to parse field [name] of type [text]"}`
	for _, tc := range []struct {
		name    string
		items   string
		want    readmodel.ApplyResult
		wantErr error // nil, readmodel.ErrUnavailable, or an *ItemErrors to match
	}{
		{"applied and stale", `[{"index":{"_id":"g1","status":201}},{"index":{"_id":"g2","status":409,"error":{"type":"version_conflict_engine_exception"}}}]`,
			readmodel.ApplyResult{Applied: 1, Stale: 1}, nil},
		{"permanent item error: the rest is applied, the item reported", `[{"index":{"_id":"g1","status":400,"error":` + mapping + `}},{"index":{"_id":"g2","status":200}}]`,
			readmodel.ApplyResult{Applied: 1}, &readmodel.ItemErrors{Items: []readmodel.ItemError{{Kind: readmodel.KindLocation, ID: "g1", Version: 2,
				Reason: "400 mapper_parsing_exception: failed to parse field [name] of type [text]"}}}},
		{"missing write alias is the cluster's state, not the document's", `[{"index":{"_id":"g1","status":404,"error":{"type":"index_not_found_exception","reason":"no such index [permitd-locations-write] and [require_alias] request flag is [true]"}}},{"index":{"_id":"g2","status":201}}]`,
			readmodel.ApplyResult{Applied: 1}, readmodel.ErrUnavailable},
		{"index block", `[{"index":{"_id":"g1","status":403,"error":{"type":"cluster_block_exception","reason":"index [permitd-locations-v1] blocked by: [FORBIDDEN/8/index write (api)]"}}},{"index":{"_id":"g2","status":201}}]`,
			readmodel.ApplyResult{Applied: 1}, readmodel.ErrUnavailable},
		{"short answer", `[{"index":{"_id":"g1","status":201}}]`, readmodel.ApplyResult{}, readmodel.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, seen := fakeCluster(t, 200, `{"errors":true,"items":`+tc.items+`}`)
			res, err := s.Apply(context.Background(), b)
			require.Equal(t, tc.want, res)
			var ie *readmodel.ItemErrors
			switch want := tc.wantErr.(type) {
			case nil:
				require.NoError(t, err)
			case *readmodel.ItemErrors:
				require.ErrorAs(t, err, &ie)
				require.Equal(t, want, ie)
				require.NotErrorIs(t, err, readmodel.ErrUnavailable)
			default:
				require.ErrorIs(t, err, want)
				require.False(t, errors.As(err, &ie), "nothing is dead-lettered for the cluster's state")
			}
			require.Len(t, *seen, 1)
			req := (*seen)[0]
			require.True(t, strings.HasPrefix(req, "POST /_bulk?require_alias=true\n"), "no refresh, require_alias: %s", req)
			require.Contains(t, req, `"version_type":"external"`)
			require.Regexp(t, `\{"doc_id":"g2","version":3,"deleted":true,"indexed_at":\d{13}\}`, req, "deletes are versioned, stamped tombstones")
		})
	}
}

// TestApplyRetriesRejectedItems: items answered 429 or 5xx are resent
// alone, with back-off, until they pass.
func TestApplyRetriesRejectedItems(t *testing.T) {
	b := readmodel.Batch{Locations: []readmodel.Location{
		{GeoID: "g1", GeoType: readmodel.GeoCity, Name: "A", Version: 2},
		{GeoID: "g2", GeoType: readmodel.GeoCity, Name: "B", Version: 2},
		{GeoID: "g3", GeoType: readmodel.GeoCity, Name: "C", Version: 2},
	}}
	const rejected = `"status":429,"error":{"type":"rejected_execution_exception","reason":"rejected execution of coordinating operation [shard_detail=[permitd-locations-v1][0][C]], shard_coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=108, max_coordinating_and_primary_bytes=107]"}`
	s, seen := fakeAnswers(t,
		`{"errors":true,"items":[{"index":{"_id":"g1","status":201}},{"index":{"_id":"g2",`+rejected+`}},{"index":{"_id":"g3","status":503,"error":{"type":"unavailable_shards_exception","reason":"primary shard is not active"}}}]}`,
		`{"errors":true,"items":[{"index":{"_id":"g2","status":201}},{"index":{"_id":"g3",`+rejected+`}}]}`,
		`{"errors":false,"items":[{"index":{"_id":"g3","status":409}}]}`)
	res, err := s.Apply(context.Background(), b)
	require.NoError(t, err)
	require.Equal(t, readmodel.ApplyResult{Applied: 2, Stale: 1}, res)
	require.Len(t, *seen, 3)
	require.Equal(t, 2, strings.Count((*seen)[1], `"_id":`), "only the rejected items are resent")
	require.Contains(t, (*seen)[1], `"_id":"g2"`)
	require.Contains(t, (*seen)[1], `"_id":"g3"`)
	require.Equal(t, 1, strings.Count((*seen)[2], `"_id":`))
	require.Contains(t, (*seen)[2], `"_id":"g3"`)
}

// TestApplyRetryEndsWithContext: items rejected until ctx ends make Apply
// return ErrUnavailable (the caller retries the batch), not hang.
func TestApplyRetryEndsWithContext(t *testing.T) {
	b := readmodel.Batch{Locations: []readmodel.Location{{GeoID: "g1", GeoType: readmodel.GeoCity, Name: "A", Version: 2}}}
	s, seen := fakeAnswers(t, `{"errors":true,"items":[{"index":{"_id":"g1","status":429,"error":{"type":"rejected_execution_exception","reason":"queue full"}}}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 350*time.Millisecond)
	defer cancel()
	_, err := s.Apply(ctx, b)
	require.ErrorIs(t, err, readmodel.ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.GreaterOrEqual(t, len(*seen), 2, "retried before the context ended")
}

func TestApplyWholeRequestRejected(t *testing.T) {
	s, _ := fakeCluster(t, 429, `{"error":{"type":"rejected_execution_exception","reason":"rejected execution of bulk"},"status":429}`)
	_, err := s.Apply(context.Background(), readmodel.Batch{Locations: []readmodel.Location{{GeoID: "g1", Version: 1}}})
	require.ErrorIs(t, err, readmodel.ErrUnavailable)
}

func TestUnavailableOn5xx(t *testing.T) {
	s, _ := fakeCluster(t, 503, `{"error":{"type":"cluster_block_exception","reason":"red"}}`)
	_, err := s.Catalog(context.Background(), readmodel.CatalogQuery{State: "WA"})
	require.ErrorIs(t, err, readmodel.ErrUnavailable)
}

func TestLocationReadsOneMsearch(t *testing.T) {
	s, seen := fakeCluster(t, 200, `{"responses":[
	 {"status":200,"hits":{"hits":[{"_id":"g1","_source":{"doc_id":"g1","version":4,"deleted":false,"geo_id":"g1","geo_type":"city","name":"Seattle","lat":47.6,"lon":-122.3}}]}},
	 {"status":200,"hits":{"hits":[]},"aggregations":{"permits":{"value":12.0},"latest":{"value":1719705600000,"value_as_string":"2024-06-30"}}}]}`)
	l, err := s.Location(context.Background(), readmodel.ParseGeoRef("g1"))
	require.NoError(t, err)
	require.Equal(t, readmodel.Location{GeoID: "g1", GeoType: readmodel.GeoCity, Name: "Seattle", Lat: 47.6, Lon: -122.3, Version: 4,
		PermitCount: 12, LatestPermitDate: "2024-06-30"}, l)
	require.Len(t, *seen, 1, "one request per read")
	require.True(t, strings.HasPrefix((*seen)[0], "POST /_msearch\n"))
	require.Contains(t, (*seen)[0], `{"allow_partial_search_results":false,"index":"permitd-permit_cells"}`, "counted from the cells, not the permits")
}

func TestPermitPageNextKey(t *testing.T) {
	src := func(id, date string, _ int) string {
		raw, err := json.Marshal(permitDocOf(readmodel.Permit{PermitID: id, IssueDate: date, Version: 1,
			GeoLinks: []readmodel.GeoLink{{GeoID: "g1", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}}}))
		require.NoError(t, err)
		return `{"_id":"` + id + `","_source":` + string(raw) + `}`
	}
	s, _ := fakeCluster(t, 200, `{"responses":[{"status":200,"hits":{"hits":[{"_id":"g1","_source":{"doc_id":"g1","version":1,"deleted":false}}]}},
	 {"status":200,"hits":{"hits":[`+src("a", "2024-01-02", 0)+`,`+src("b", "", 1)+`,`+src("c", "", 1)+`]}}]}`)
	page, err := s.SearchPermits(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("g1"), Desc: true, Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Permits, 2)
	require.Equal(t, &readmodel.PermitKey{IssueDate: "", PermitID: "b"}, page.Next)
	require.Equal(t, "g1", page.Permits[0].Match.GeoID)
}
