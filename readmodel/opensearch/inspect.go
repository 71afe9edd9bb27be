package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/permitd/permitd/readmodel"
)

// Health implements readmodel.Reader: live documents per kind, one
// _msearch of twelve cheap counts: every document (match_all, answered
// from segment statistics) minus the tombstones.
func (s *Store) Health(ctx context.Context) (readmodel.Health, error) {
	counts, err := s.counts(ctx)
	return readmodel.Health{Backend: "opensearch", Counts: counts}, err
}

// Counts is Health's Counts, a shorthand for tests and tools that hold a
// *Store.
func (s *Store) Counts(ctx context.Context) (map[readmodel.Kind]int64, error) { return s.counts(ctx) }

func (s *Store) counts(ctx context.Context) (map[readmodel.Kind]int64, error) {
	reqs := make([]msearchReq, 0, 2*len(readmodel.Kinds))
	for _, k := range readmodel.Kinds {
		reqs = append(reqs, msearchReq{index: s.read(k), body: countBody()}, msearchReq{index: s.read(k), body: countDeletedBody()})
	}
	rs, err := s.msearch(ctx, reqs...)
	if err != nil {
		return nil, err
	}
	out := make(map[readmodel.Kind]int64, len(readmodel.Kinds))
	for i, k := range readmodel.Kinds {
		out[k] = rs[2*i].total() - rs[2*i+1].total()
	}
	return out, nil
}

// Digest implements readmodel.Inspector (readmodel.Digest over every live
// document).
// Each kind is scanned by doc_id with search_after inside a point in time,
// so the scan is one snapshot; when the point in time cannot be opened or
// has expired, the scan continues from the last doc_id without one.
func (s *Store) Digest(ctx context.Context) (string, error) {
	var d readmodel.Digest
	for _, k := range readmodel.Kinds {
		err := s.scan(ctx, k, func(id string, v int64) { d.Add(k, id, v) })
		if err != nil {
			return "", err
		}
	}
	return d.Sum(), nil
}

// scan calls fn for every live document of kind k (scanPages of
// scanBody).
func (s *Store) scan(ctx context.Context, k readmodel.Kind, fn func(id string, version int64)) error {
	return scanPages(ctx, s, k, scanPageSize, scanBody, func(m *meta) string { return m.DocID }, func(docs []meta) error {
		for _, d := range docs {
			fn(d.DocID, d.Version)
		}
		return nil
	})
}

// isExpired: the point in time is gone (404 search_context_missing, or a
// 400 naming it).
func isExpired(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Type == "search_context_missing_exception" ||
		ae.Status == http.StatusBadRequest && ae.Type == "illegal_argument_exception")
}

// openPIT opens a point in time on kind k; "" when the cluster cannot
// (OpenSearch before 2.4, or no permission): the scan then runs without.
func (s *Store) openPIT(ctx context.Context, k readmodel.Kind) string {
	var out struct {
		PitID string `json:"pit_id"`
	}
	if err := s.do(ctx, http.MethodPost, "/"+s.read(k)+"/_search/point_in_time?keep_alive="+pitKeepAlive, nil, "", &out); err != nil {
		return ""
	}
	return out.PitID
}

// closePIT deletes a point in time, on a best-effort basis (the engine
// frees it after its keep-alive anyway).
func (s *Store) closePIT(ctx context.Context, pit string) {
	if pit == "" {
		return
	}
	_ = s.deletePIT(ctx, pit)
}

func (s *Store) deletePIT(ctx context.Context, pit string) error {
	raw, _ := json.Marshal(map[string]any{"pit_id": []string{pit}})
	return s.do(ctx, http.MethodDelete, "/_search/point_in_time", raw, "", nil)
}

// errNoIndex reports a missing alias with the fix.
func errNoIndex(alias string) error {
	return fmt.Errorf("opensearch: %s does not exist: run permitd opensearch init", alias)
}
