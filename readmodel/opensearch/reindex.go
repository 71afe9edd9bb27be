package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// ReindexOptions configure one kind's reindex.
type ReindexOptions struct {
	// Settings render the template put before the copy (replicas,
	// refresh interval); Settings.Shards is ignored.
	Settings mappings.Settings
	// Shards is number_of_shards of the new index; 0 keeps the current
	// index's, so a mapping-only reindex never changes a kind's shards.
	Shards int
	// Progress, when set, is called after every poll of a copy task.
	Progress func(ReindexProgress)
	// PollEvery is the pause between two polls of the tasks API; 0 is 5s.
	PollEvery time.Duration
}

// ReindexProgress is one poll of a copy task.
type ReindexProgress struct {
	Kind     readmodel.Kind
	Phase    string // "copy" (writes go on) or "catch-up" (writes paused)
	Task     string
	Total    int64 // documents the task will read
	Created  int64
	Updated  int64
	Stale    int64 // version conflicts: the new index already holds that version or a newer one
	Complete bool
}

func (p ReindexProgress) String() string {
	done := p.Created + p.Updated + p.Stale
	pct := 100.0
	if p.Total > 0 {
		pct = 100 * float64(done) / float64(p.Total)
	}
	return fmt.Sprintf("%s %s: %d of %d documents (%.1f%%), %d created, %d updated, %d already current",
		mappings.Base(p.Kind), p.Phase, done, p.Total, pct, p.Created, p.Updated, p.Stale)
}

// ReindexResult reports one kind's reindex.
type ReindexResult struct {
	Kind     readmodel.Kind
	From, To string
	Shards   int
	Resumed  bool  // a killed run's copy task was picked up
	Rolled   bool  // a killed run's leftovers were removed first
	Copied   int64 // documents created by the copy and catch-up
	Stale    int64 // version conflicts (already current in the new index)
	Docs     int64 // documents (with tombstones) in both indices at the swap
}

// reindexMeta is the state of a reindex kept in the new index's mapping
// _meta, so a run that was killed can be resumed or rolled back by the
// next one.
type reindexMeta struct {
	From    string `json:"from"`
	Task    string `json:"task,omitempty"`
	Started int64  `json:"started,omitempty"` // epoch ms, before the copy task began
}

const metaKey = "permitd_reindex"

// catchUpMargin is subtracted from the time a copy began when selecting
// what a catch-up copies (indexed_at): it covers clock skew between the
// indexer hosts and the host running the reindex, the refresh interval
// (a document indexed just before the copy's snapshot but not yet
// visible to it) and a bulk's item retries (bounded by itemRetryBudget).
// Clocks must agree within it (NTP).
const catchUpMargin = 10 * time.Minute

// Reindex rebuilds kind k into the next index version with the current
// template and swaps the aliases once the new index holds everything the
// old one does:
//
//  1. put the template; create <base>-v<N+1> without aliases, with the
//     current index's shard count unless o.Shards says otherwise, and
//     {from: v<N>} in its _meta;
//  2. copy v<N> into it as a server-side task (_reindex with
//     wait_for_completion=false, slices=auto, version_type external_gte,
//     conflicts proceed), its id recorded in the _meta, polling the tasks
//     API with a progress report; writes go on into v<N> meanwhile;
//  3. catch up: copy again what was indexed since the copy began
//     (indexed_at, stamped by the Writer, minus catchUpMargin), writes
//     still going on; then block writes to v<N> (index.blocks.write: the
//     indexer's bulk items answer 403, which the Writer reports as
//     unavailable, so the indexer backs off and retries, losing nothing)
//     and copy what was indexed since the first catch-up began. A source
//     without indexed_at in its mapping is copied whole instead;
//  4. refresh both and compare their document counts (tombstones
//     included); unequal counts lift the block and fail;
//  5. move the read and the write alias to v<N+1> in one atomic _aliases
//     call, then lift the block on v<N>.
//
// Writes pause only for the last catch-up, the counts and the swap: the
// documents indexed during the first catch-up, usually seconds of
// traffic. Reads never pause and see v<N> until the swap. v<N> is kept:
// delete it once satisfied.
//
// Run again after a kill, Reindex finds v<N+1> and its _meta: a copy task
// still running is polled again, one that completed without failures
// goes on with the catch-up, and anything else (no task recorded, the
// task failed, cancelled or unknown, an index it did not make) is rolled
// back: reindex tasks writing into v<N+1> are cancelled, v<N+1> is
// deleted, the block on v<N> is lifted, and the reindex starts over.
func (s *Store) Reindex(ctx context.Context, k readmodel.Kind, o ReindexOptions) (ReindexResult, error) {
	if o.PollEvery <= 0 {
		o.PollEvery = 5 * time.Second
	}
	set := o.Settings
	set.Prefix = s.prefix
	res := ReindexResult{Kind: k}
	n := mappings.NamesOf(s.prefix, k)
	from, err := s.aliasIndex(ctx, n.ReadAlias)
	if err != nil {
		return res, err
	}
	v, ok := mappings.VersionOf(s.prefix, k, from)
	if !ok {
		return res, fmt.Errorf("opensearch: %s points to %s, not a versioned index", n.ReadAlias, from)
	}
	writeTo, err := s.aliasIndex(ctx, n.WriteAlias)
	if err != nil {
		return res, err
	}
	if writeTo != from {
		return res, fmt.Errorf("opensearch: %s points to %s but %s to %s: finish that move by hand (POST _aliases) before a reindex", n.ReadAlias, from, n.WriteAlias, writeTo)
	}
	res.From, res.To = from, mappings.IndexName(s.prefix, k, v+1)

	res.Shards = o.Shards
	if res.Shards == 0 {
		if res.Shards, err = s.shardsOf(ctx, from); err != nil {
			return res, err
		}
	}
	set.Shards = res.Shards
	if err := s.putTemplate(ctx, k, set); err != nil {
		return res, err
	}

	task, started, err := s.resumable(ctx, from, res.To)
	if err != nil {
		return res, err
	}
	switch {
	case task != "":
		// A run killed during its final catch-up left writes blocked:
		// they go on again until this run's own final catch-up.
		res.Resumed = true
		if err := s.blockWrites(ctx, from, false); err != nil {
			return res, err
		}
	default:
		rolled, err := s.rollback(ctx, from, res.To)
		if err != nil {
			return res, err
		}
		res.Rolled = rolled
		started = s.indexedAt()
		if task, err = s.startCopy(ctx, from, res.To, res.Shards, started); err != nil {
			return res, err
		}
	}
	copied, err := s.waitTask(ctx, k, "copy", task, o)
	res.Copied, res.Stale = copied.Created, copied.Stale
	if err != nil {
		return res, fmt.Errorf("opensearch: copy %s -> %s (task %s): %w; run the reindex again to roll back and start over", from, res.To, task, err)
	}

	stamped, err := s.hasField(ctx, from, "indexed_at")
	if err != nil {
		return res, err
	}
	catchUp := func(phase string, since int64) error {
		var query obj
		if stamped {
			query = obj{"range": obj{"indexed_at": obj{"gte": since - catchUpMargin.Milliseconds()}}}
		}
		task, err := s.submitCopy(ctx, from, res.To, query)
		if err != nil {
			return err
		}
		p, err := s.waitTask(ctx, k, phase, task, o)
		res.Copied += p.Created + p.Updated
		res.Stale += p.Stale
		if err != nil {
			return fmt.Errorf("opensearch: %s %s -> %s (task %s): %w", phase, from, res.To, task, err)
		}
		return nil
	}
	// Writes go on while the copy's window is caught up; then they pause
	// while the (short) window of that catch-up is copied, the counts
	// compared and the aliases moved.
	second := s.indexedAt()
	if err := catchUp("catch-up", started); err != nil {
		return res, err
	}
	if err := s.blockWrites(ctx, from, true); err != nil {
		return res, err
	}
	swapped := false
	defer func() {
		if !swapped {
			_ = s.blockWrites(context.WithoutCancel(ctx), from, false)
		}
	}()
	if err := catchUp("final catch-up (writes paused)", second); err != nil {
		return res, err
	}
	if err := s.do(ctx, http.MethodPost, "/"+from+","+res.To+"/_refresh", nil, "", nil); err != nil {
		return res, err
	}
	nFrom, err := s.count(ctx, from)
	if err != nil {
		return res, err
	}
	nTo, err := s.count(ctx, res.To)
	if err != nil {
		return res, err
	}
	if nFrom != nTo {
		return res, fmt.Errorf("opensearch: %s holds %d documents, %s %d after the catch-up: aliases not moved; run the reindex again", from, nFrom, res.To, nTo)
	}
	res.Docs = nTo
	swap, err := json.Marshal(obj{"actions": []obj{
		{"remove": obj{"index": from, "alias": n.ReadAlias}},
		{"remove": obj{"index": from, "alias": n.WriteAlias}},
		{"add": obj{"index": res.To, "alias": n.ReadAlias}},
		{"add": obj{"index": res.To, "alias": n.WriteAlias, "is_write_index": true}},
	}})
	if err != nil {
		return res, err
	}
	if err := s.do(ctx, http.MethodPost, "/_aliases", swap, "", nil); err != nil {
		return res, fmt.Errorf("opensearch: moving %s and %s to %s: %w", n.ReadAlias, n.WriteAlias, res.To, err)
	}
	swapped = true
	if err := s.blockWrites(ctx, from, false); err != nil {
		return res, fmt.Errorf("opensearch: aliases moved to %s; lifting the write block on %s (no longer written): %w", res.To, from, err)
	}
	return res, nil
}

// shardsOf reads number_of_shards of an index.
func (s *Store) shardsOf(ctx context.Context, index string) (int, error) {
	var out map[string]struct {
		Settings struct {
			Index struct {
				Shards string `json:"number_of_shards"`
			} `json:"index"`
		} `json:"settings"`
	}
	if err := s.do(ctx, http.MethodGet, "/"+index+"/_settings/index.number_of_shards", nil, "", &out); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(out[index].Settings.Index.Shards)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("opensearch: %s: number_of_shards %q", index, out[index].Settings.Index.Shards)
	}
	return n, nil
}

// resumable is the copy task of a killed run that the next one can
// follow, and when that copy began: to exists, was made from from, and
// its recorded task is running or completed without failures. "" otherwise.
func (s *Store) resumable(ctx context.Context, from, to string) (string, int64, error) {
	meta, exists, err := s.metaOf(ctx, to)
	if err != nil || !exists || meta.From != from || meta.Task == "" || meta.Started == 0 {
		return "", 0, err
	}
	st, err := s.taskStatus(ctx, meta.Task)
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return "", 0, nil
		}
		return "", 0, err
	}
	if st.Completed && st.failed() != nil {
		return "", 0, nil
	}
	return meta.Task, meta.Started, nil
}

// hasField reports whether index maps field.
func (s *Store) hasField(ctx context.Context, index, field string) (bool, error) {
	var out map[string]struct {
		Mappings map[string]json.RawMessage `json:"mappings"`
	}
	if err := s.do(ctx, http.MethodGet, "/"+index+"/_mapping/field/"+field, nil, "", &out); err != nil {
		return false, err
	}
	_, ok := out[index].Mappings[field]
	return ok, nil
}

// metaOf reads the reindex state in index's _meta; exists is false when
// the index does not exist.
func (s *Store) metaOf(ctx context.Context, index string) (meta reindexMeta, exists bool, err error) {
	var out map[string]struct {
		Mappings struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"mappings"`
	}
	if err := s.do(ctx, http.MethodGet, "/"+index+"/_mapping", nil, "", &out); err != nil {
		if isStatus(err, http.StatusNotFound) {
			return meta, false, nil
		}
		return meta, false, err
	}
	if raw, ok := out[index].Mappings.Meta[metaKey]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	return meta, true, nil
}

// rollback removes what a killed run left: reindex tasks writing into
// to are cancelled, to is deleted (it is behind no alias: Reindex checked
// both point to from), the write block on from is lifted. It reports
// whether there was anything to remove.
func (s *Store) rollback(ctx context.Context, from, to string) (bool, error) {
	var tasks struct {
		Nodes map[string]struct {
			Tasks map[string]struct {
				Description string `json:"description"`
			} `json:"tasks"`
		} `json:"nodes"`
	}
	if err := s.do(ctx, http.MethodGet, "/_tasks?detailed=true&actions="+url.QueryEscape("indices:data/write/reindex"), nil, "", &tasks); err != nil {
		return false, err
	}
	did := false
	for _, node := range tasks.Nodes {
		for id, t := range node.Tasks {
			if strings.Contains(t.Description, "["+to+"]") {
				if err := s.do(ctx, http.MethodPost, "/_tasks/"+id+"/_cancel", nil, "", nil); err != nil && !isStatus(err, http.StatusNotFound) {
					return did, fmt.Errorf("opensearch: cancelling reindex task %s into %s: %w", id, to, err)
				}
				did = true
			}
		}
	}
	if err := s.do(ctx, http.MethodDelete, "/"+to, nil, "", nil); err == nil {
		did = true
	} else if !isStatus(err, http.StatusNotFound) {
		return did, fmt.Errorf("opensearch: deleting %s left by an earlier reindex: %w", to, err)
	}
	if err := s.blockWrites(ctx, from, false); err != nil {
		return did, err
	}
	return did, nil
}

// blockWrites sets or lifts index.blocks.write on index.
func (s *Store) blockWrites(ctx context.Context, index string, on bool) error {
	body, _ := json.Marshal(obj{"index": obj{"blocks": obj{"write": on}}})
	if err := s.do(ctx, http.MethodPut, "/"+index+"/_settings", body, "", nil); err != nil {
		return fmt.Errorf("opensearch: index.blocks.write=%t on %s: %w", on, index, err)
	}
	return nil
}

// count is the number of documents of index, tombstones included.
func (s *Store) count(ctx context.Context, index string) (int64, error) {
	var out struct {
		Count  *int64 `json:"count"`
		Shards struct {
			Total  int `json:"total"`
			Failed int `json:"failed"`
		} `json:"_shards"`
	}
	if err := s.do(ctx, http.MethodGet, "/"+index+"/_count", nil, "", &out); err != nil {
		return 0, err
	}
	if out.Shards.Failed > 0 {
		return 0, fmt.Errorf("%w: %s/_count: %d of %d shards failed", readmodel.ErrUnavailable, index, out.Shards.Failed, out.Shards.Total)
	}
	if out.Count == nil {
		return 0, fmt.Errorf("opensearch: %s/_count answered no count", index)
	}
	return *out.Count, nil
}
