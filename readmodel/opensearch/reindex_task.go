// The reindex copy task: its request body, submitting it, and polling its status until done.

package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// startCopy creates to (shards, {from} in _meta), submits the copy task
// and records its id and start in to's _meta.
func (s *Store) startCopy(ctx context.Context, from, to string, shards int, started int64) (string, error) {
	body, err := reindexTargetBody(from, shards)
	if err != nil {
		return "", err
	}
	if err := s.do(ctx, http.MethodPut, "/"+to, body, "", nil); err != nil {
		return "", fmt.Errorf("opensearch: creating %s: %w", to, err)
	}
	task, err := s.submitCopy(ctx, from, to, nil)
	if err != nil {
		return "", err
	}
	meta, _ := json.Marshal(obj{"_meta": obj{metaKey: reindexMeta{From: from, Task: task, Started: started}}})
	if err := s.do(ctx, http.MethodPut, "/"+to+"/_mapping", meta, "", nil); err != nil {
		return "", fmt.Errorf("opensearch: recording task %s in %s: %w", task, to, err)
	}
	return task, nil
}

// reindexTargetBody is the body of PUT <new index>: the template gives
// settings and mappings; the body adds the shard count and the reindex
// state in _meta (golden: reindex_target.index.json).
func reindexTargetBody(from string, shards int) ([]byte, error) {
	return json.MarshalIndent(obj{
		"settings": obj{"index": obj{"number_of_shards": shards}},
		"mappings": obj{"_meta": obj{metaKey: reindexMeta{From: from}}},
	}, "", "  ")
}

// reindexBody copies from into to under external versions, equal ones
// included (external_gte): a document whose newer version the
// destination holds is a conflict, counted and skipped; one at the same
// version is copied again, so a catch-up carries a permit the Writer
// rewrote at its version without its cells_pending (cells.go, stamped
// anew) instead of leaving the pending copy, which the next batch of
// that permit would count twice; tombstones are copied as they are.
// query (nil: every document) selects what a catch-up copies.
func reindexBody(from, to string, query obj) obj {
	source := obj{"index": from, "size": 2000}
	if query != nil {
		source["query"] = query
	}
	return obj{
		"conflicts": "proceed",
		"source":    source,
		"dest":      obj{"index": to, "version_type": "external_gte"},
	}
}

// submitCopy starts a server-side reindex task and returns its id.
func (s *Store) submitCopy(ctx context.Context, from, to string, query obj) (string, error) {
	raw, err := json.Marshal(reindexBody(from, to, query))
	if err != nil {
		return "", err
	}
	var out struct {
		Task string `json:"task"`
	}
	if err := s.do(ctx, http.MethodPost, "/_reindex?wait_for_completion=false&slices=auto", raw, "", &out); err != nil {
		return "", fmt.Errorf("opensearch: reindex %s -> %s: %w", from, to, err)
	}
	if out.Task == "" {
		return "", fmt.Errorf("opensearch: reindex %s -> %s: no task id in the answer", from, to)
	}
	return out.Task, nil
}

// taskState is GET _tasks/<id> of a reindex task.
type taskState struct {
	Completed bool `json:"completed"`
	Task      struct {
		Status reindexCounts `json:"status"`
	} `json:"task"`
	Response *struct {
		reindexCounts
		Failures []json.RawMessage `json:"failures"`
		Canceled string            `json:"canceled"`
	} `json:"response"`
	Error json.RawMessage `json:"error"`
}

type reindexCounts struct {
	Total            int64 `json:"total"`
	Created          int64 `json:"created"`
	Updated          int64 `json:"updated"`
	VersionConflicts int64 `json:"version_conflicts"`
}

// failed explains why a completed task did not copy everything; nil when
// it did.
func (t *taskState) failed() error {
	switch {
	case len(t.Error) > 0 && string(t.Error) != "null":
		return fmt.Errorf("task failed: %s", t.Error)
	case t.Response == nil:
		return errors.New("task completed without a response")
	case t.Response.Canceled != "":
		return fmt.Errorf("task cancelled: %s", t.Response.Canceled)
	case len(t.Response.Failures) > 0:
		return fmt.Errorf("%d failures, first %s", len(t.Response.Failures), t.Response.Failures[0])
	}
	return nil
}

func (s *Store) taskStatus(ctx context.Context, task string) (*taskState, error) {
	var st taskState
	if err := s.do(ctx, http.MethodGet, "/_tasks/"+task, nil, "", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// waitTask polls a reindex task until it completes, reporting progress;
// ctx ending stops the polling, not the task (the next run resumes it).
func (s *Store) waitTask(ctx context.Context, k readmodel.Kind, phase, task string, o ReindexOptions) (ReindexProgress, error) {
	p := ReindexProgress{Kind: k, Phase: phase, Task: task}
	for {
		st, err := s.taskStatus(ctx, task)
		if err != nil {
			return p, err
		}
		c := st.Task.Status
		if st.Completed && st.Response != nil {
			c = st.Response.reindexCounts
		}
		p.Total, p.Created, p.Updated, p.Stale, p.Complete = c.Total, c.Created, c.Updated, c.VersionConflicts, st.Completed
		if o.Progress != nil {
			o.Progress(p)
		}
		if st.Completed {
			return p, st.failed()
		}
		t := time.NewTimer(o.PollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return p, ctx.Err()
		case <-t.C:
		}
	}
}
