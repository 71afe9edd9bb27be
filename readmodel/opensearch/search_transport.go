// Search transport: single and multi searches against OpenSearch, their timeouts and the partial-result guard.

package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/permitd/permitd/readmodel"
)

// searchResult is one _search answer (or one _msearch response).
type searchResult struct {
	Hits struct {
		Total *struct {
			Value int64 `json:"value"`
		} `json:"total"`
		Hits []searchHit `json:"hits"`
	} `json:"hits"`
	Aggregations map[string]json.RawMessage `json:"aggregations"`
	PitID        string                     `json:"pit_id"`
	Status       int                        `json:"status"`
	Error        json.RawMessage            `json:"error"`
	TimedOut     bool                       `json:"timed_out"`
	Shards       *struct {
		Total    int               `json:"total"`
		Failed   int               `json:"failed"`
		Failures []json.RawMessage `json:"failures"`
	} `json:"_shards"`
}

// partial fails an answer that does not cover every shard: a shard
// failed (allow_partial_search_results=false makes the engine refuse
// most of these itself, but a failure in the fetch phase or an older
// node still answers 200) or the server-side timeout cut the search
// short (timed_out: the engine then returns what it had, whatever
// allow_partial_search_results says). Either is readmodel.ErrUnavailable:
// a retry may get the whole answer, and a partial one would turn an
// existing geography into a 404, count low or hand out a cursor that
// skips items for good.
func (r *searchResult) partial(what string) error {
	if r.TimedOut {
		return fmt.Errorf("%w: %s timed out after %s on the server", readmodel.ErrUnavailable, what, searchTimeout)
	}
	if r.Shards != nil && r.Shards.Failed > 0 {
		first := ""
		if len(r.Shards.Failures) > 0 {
			first = ", first: " + string(r.Shards.Failures[0])
		}
		return fmt.Errorf("%w: %s: %d of %d shards failed%s", readmodel.ErrUnavailable, what, r.Shards.Failed, r.Shards.Total, first)
	}
	return nil
}

// searchTimeout is the server-side timeout of every search (the "timeout"
// of the body): a shard that has not answered by then makes the search
// answer timed_out, which fails the read (partial). It is below the
// client's per-attempt timeout (30s by default) so the engine, not the
// connection, gives up first and frees the shard's search thread.
const searchTimeout = "10s"

// guarded is body as it is sent: with the server-side timeout. The map
// is copied, so a builder's golden rendering stays what it returns.
func guarded(body obj) obj {
	out := make(obj, len(body)+1)
	for k, v := range body {
		out[k] = v
	}
	out["timeout"] = searchTimeout
	return out
}

// searchHit is one hit of a searchResult.
type searchHit struct {
	ID      string          `json:"_id"`
	Version *int64          `json:"_version"` // with "version": true
	Source  json.RawMessage `json:"_source"`
	Sort    []any           `json:"sort"`
}

func (r *searchResult) total() int64 {
	if r.Hits.Total == nil {
		return 0
	}
	return r.Hits.Total.Value
}

// decode unmarshals every hit's _source into a T.
func decodeHits[T any](r *searchResult) ([]T, error) {
	out := make([]T, 0, len(r.Hits.Hits))
	for _, h := range r.Hits.Hits {
		var d T
		if err := json.Unmarshal(h.Source, &d); err != nil {
			return nil, fmt.Errorf("opensearch: hit %s: %w", h.ID, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// search is one _search on index, failing closed: partial results are
// refused (allow_partial_search_results=false), the body carries the
// server-side timeout, and an answer that still misses shards or timed
// out is readmodel.ErrUnavailable (see partial).
func (s *Store) search(ctx context.Context, index string, body obj) (*searchResult, error) {
	return s.searchPath(ctx, "/"+index+"/_search", body)
}

// searchPath is search on a path ("/_search" for a point in time, which
// names its indices itself).
func (s *Store) searchPath(ctx context.Context, path string, body obj) (*searchResult, error) {
	raw, err := json.Marshal(guarded(body))
	if err != nil {
		return nil, err
	}
	var out searchResult
	if err := s.do(ctx, http.MethodPost, path+"?allow_partial_search_results=false", raw, "", &out); err != nil {
		return nil, err
	}
	if err := out.partial("search " + path); err != nil {
		return nil, err
	}
	return &out, nil
}

// msearchReq is one search of an _msearch.
type msearchReq struct {
	index string
	body  obj
	// dfs: score with the index's term statistics (search_type
	// dfs_query_then_fetch), not each shard's, where relevance picks a
	// pool (resolve). The engine skips the extra phase on a one-shard
	// index.
	dfs bool
}

// msearch sends the searches in one _msearch request, each failing closed
// as search does (allow_partial_search_results=false in its header, the
// server-side timeout in its body); a failed, partial or timed-out search
// fails the read.
func (s *Store) msearch(ctx context.Context, reqs ...msearchReq) ([]*searchResult, error) {
	var buf bytes.Buffer
	for _, r := range reqs {
		head := msearchHeader(r.index)
		if r.dfs {
			head["search_type"] = "dfs_query_then_fetch"
		}
		if err := appendNDJSON(&buf, head, guarded(r.body)); err != nil {
			return nil, err
		}
	}
	var out struct {
		Responses []*searchResult `json:"responses"`
	}
	if err := s.do(ctx, http.MethodPost, "/_msearch", buf.Bytes(), "application/x-ndjson", &out); err != nil {
		return nil, err
	}
	if len(out.Responses) != len(reqs) {
		return nil, fmt.Errorf("%w: msearch answered %d of %d searches", readmodel.ErrUnavailable, len(out.Responses), len(reqs))
	}
	for i, r := range out.Responses {
		if r == nil {
			return nil, fmt.Errorf("%w: msearch %s: no response", readmodel.ErrUnavailable, reqs[i].index)
		}
		if len(r.Error) > 0 && string(r.Error) != "null" {
			err := fmt.Errorf("opensearch: msearch %s: %d %s", reqs[i].index, r.Status, r.Error)
			if retryable(r.Status) || r.Status == 0 {
				err = fmt.Errorf("%w: %v", readmodel.ErrUnavailable, err)
			}
			return nil, err
		}
		if err := r.partial("msearch " + reqs[i].index); err != nil {
			return nil, err
		}
	}
	return out.Responses, nil
}

// msearchHeader is the header line of one search of an _msearch; index
// "" for a search of a point in time (its body names the indices).
func msearchHeader(index string) obj {
	if index == "" {
		return obj{"allow_partial_search_results": false}
	}
	return obj{"index": index, "allow_partial_search_results": false}
}
