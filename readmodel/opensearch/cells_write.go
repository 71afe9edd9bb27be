// Permit count cells against the store: reading stored permits, rewriting documents, counting and bulk-updating cells.

package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// permitSourceFields are what the cells need of a stored permit.
const permitSourceFields = "doc_id,version,deleted,geo_ids,property_id,issue_date,cells_pending"

// mgetResponse is an _mget answer.
type mgetResponse struct {
	Docs []struct {
		ID          string          `json:"_id"`
		Found       bool            `json:"found"`
		Version     *int64          `json:"_version"`
		SeqNo       *int64          `json:"_seq_no"`
		PrimaryTerm *int64          `json:"_primary_term"`
		Source      json.RawMessage `json:"_source"`
		Error       json.RawMessage `json:"error"`
	} `json:"docs"`
}

// mget reads documents by id from index (realtime: what the last
// acknowledged write stored, refreshed or not), in ids order.
func (s *Store) mget(ctx context.Context, index, query string, ids []string) (*mgetResponse, error) {
	body, err := json.Marshal(mgetBody(ids))
	if err != nil {
		return nil, err
	}
	var out mgetResponse
	if err := s.do(ctx, http.MethodPost, "/"+index+"/_mget"+query, body, "", &out); err != nil {
		return nil, err
	}
	if len(out.Docs) != len(ids) {
		return nil, fmt.Errorf("%w: _mget of %s answered %d of %d documents", readmodel.ErrUnavailable, index, len(out.Docs), len(ids))
	}
	for i, d := range out.Docs {
		if len(d.Error) > 0 && string(d.Error) != "null" {
			return nil, fmt.Errorf("%w: _mget of %s %q: %s", readmodel.ErrUnavailable, index, ids[i], d.Error)
		}
		if d.ID != ids[i] {
			return nil, fmt.Errorf("%w: _mget of %s answered %q for %q", readmodel.ErrUnavailable, index, d.ID, ids[i])
		}
	}
	return &out, nil
}

// mgetBody is the body of an _mget by ids (golden: cells.mget.json).
func mgetBody(ids []string) obj { return obj{"ids": ids} }

// storedPermits reads stored permits (query: the _mget parameters):
// their state (a tombstone or no document: not live) and pending.
func (s *Store) storedPermits(ctx context.Context, ids []string, query string) (map[string]permitState, map[string]*cellsPending, error) {
	_, states, pending, err := s.storedPermitDocs(ctx, ids, query)
	return states, pending, err
}

// storedPermitDocs is storedPermits with the decoded documents.
func (s *Store) storedPermitDocs(ctx context.Context, ids []string, query string) (map[string]*permitDoc, map[string]permitState, map[string]*cellsPending, error) {
	return storedDocs(ctx, s, readmodel.KindPermit, ids, query, permitStateOf, func(src []byte) (*permitDoc, *cellsPending, error) {
		var doc struct {
			permitDoc
			CellsPending *cellsPending `json:"cells_pending"`
		}
		err := json.Unmarshal(src, &doc)
		return &doc.permitDoc, doc.CellsPending, err
	})
}

// storedDocs reads the stored documents of kind (query: the _mget
// parameters) with decode, and returns the found ones by id, their state
// (stateOf at their _version) and the pending they carry.
func storedDocs[D, S, P any](ctx context.Context, s *Store, kind readmodel.Kind, ids []string, query string,
	stateOf func(*D, int64) S, decode func([]byte) (*D, *P, error)) (map[string]*D, map[string]S, map[string]*P, error) {
	r, err := s.mget(ctx, s.write(kind), query, ids)
	if err != nil {
		return nil, nil, nil, err
	}
	docs := make(map[string]*D, len(ids))
	states := make(map[string]S, len(ids))
	pending := map[string]*P{}
	for i, d := range r.Docs {
		if !d.Found {
			continue
		}
		if d.Version == nil {
			return nil, nil, nil, fmt.Errorf("%w: stored %s %q read without _version", readmodel.ErrUnavailable, kind, ids[i])
		}
		doc, p, err := decode(d.Source)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("opensearch: stored %s %q: %w", kind, ids[i], err)
		}
		docs[ids[i]] = doc
		states[ids[i]] = stateOf(doc, *d.Version)
		if p != nil {
			pending[ids[i]] = p
		}
	}
	return docs, states, pending, nil
}

// finishPermitCells is step 3 for the permits ids: every stored pending
// is counted in the cells, dropped from its document (stamped anew, so a
// reindex's catch-up copies the rewrite), and its tags cleared from the
// cells.
func (s *Store) finishPermitCells(ctx context.Context, ids []string) error {
	var plan cellPlan
	return finishCells(ctx, s, readmodel.KindPermit, ids, s.storedPermitDocs,
		func(st permitState) int64 { return st.version }, plan.addPending,
		func(ctx context.Context) error { return s.countCells(ctx, &plan) },
		func(ctx context.Context) error { return s.clearTags(ctx, &plan) })
}

// finishCells is step 3 for the ids of kind, in the order that leaves
// every crash recoverable: read the stored documents (stored), hand each
// pending to add, count the pendings in the cells (count; a tag already
// in a cell is not counted again), rewrite the documents without them,
// then clear their tags from the cells (clear). version is a stored
// state's external version. No pending: no write.
func finishCells[D any, PD interface {
	*D
	docMeta() *meta
}, S, P any](ctx context.Context, s *Store, kind readmodel.Kind, ids []string,
	stored func(context.Context, []string, string) (map[string]*D, map[string]S, map[string]*P, error),
	version func(S) int64, add func(*P), count, clear func(context.Context) error) error {
	docs, states, pending, err := stored(ctx, ids, "")
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		return nil
	}
	rewrite := rewrites[D, PD](s, kind, ids, docs, pending, func(id string) int64 { return version(states[id]) }, add)
	if err := count(ctx); err != nil {
		return err
	}
	if err := s.rewriteDocs(ctx, rewrite); err != nil {
		return err
	}
	return clear(ctx)
}

// rewrites lists, for each of ids stored with a pending (handed to
// add), the rewrite of its document without it, stamped anew; ext is
// the stored document's external version.
func rewrites[D any, PD interface {
	*D
	docMeta() *meta
}, P any](s *Store, kind readmodel.Kind, ids []string, docs map[string]*D, pending map[string]*P, ext func(id string) int64, add func(*P)) []bulkItem {
	var out []bulkItem
	for _, id := range ids {
		p := pending[id]
		if p == nil {
			continue
		}
		add(p)
		d := docs[id]
		m := PD(d).docMeta()
		m.IndexedAt = s.indexedAt()
		var doc any = *d
		if m.Deleted {
			doc = *m
		}
		out = append(out, rewriteItem(kind, id, m.Version, ext(id), doc))
	}
	return out
}

// rewriteItem is the rewrite of a stored document of entity version v
// under external version ext (its _version), at its own rank: an
// unlinked document (3v) stays unlinked, so its later re-link (3v+1) and
// delete (3v+2) still take, a linked one (3v+1) stays above an unlinked
// copy of v, and a tombstone (3v+2) above both.
func rewriteItem(kind readmodel.Kind, id string, v, ext int64, doc any) bulkItem {
	return bulkItem{kind: kind, id: id, version: v, doc: doc, rank: rankOf(v, ext)}
}

// rewriteDocs writes stored documents (permits, leads) again at their
// own external version (version_type external_gte; see rewriteItem)
// without their pending. A 409 means a newer version is stored (it
// carries its own pending): nothing to do.
func (s *Store) rewriteDocs(ctx context.Context, its []bulkItem) error {
	lines := make([][]byte, len(its))
	for i, it := range its {
		action := obj{"index": obj{"_index": s.write(it.kind), "_id": it.id, "version": externalVersion(it), "version_type": "external_gte"}}
		var buf bytes.Buffer
		if err := appendNDJSON(&buf, action, it.doc); err != nil {
			return err
		}
		lines[i] = buf.Bytes()
	}
	var res readmodel.ApplyResult
	refused, err := s.bulkItems(ctx, its, lines, &res)
	if err != nil {
		return err
	}
	if len(refused) > 0 {
		return fmt.Errorf("%w: %s %q stored but refused without its cells_pending: %s", readmodel.ErrUnavailable, refused[0].Kind, refused[0].ID, refused[0].Reason)
	}
	return nil
}

// countCells adds the plan's deltas to the cells (step 3 above).
func (s *Store) countCells(ctx context.Context, plan *cellPlan) error {
	if len(plan.deltas) == 0 {
		return nil
	}
	return s.updateCells(ctx, plan.ids(), func(id string, cur *cellDoc) (cellDoc, bool) {
		d := plan.deltas[id]
		next := cellDoc{Anchor: d.anchor, Day: d.day}
		if cur != nil {
			next = *cur
			next.Pending.Tags = slices.Clone(cur.Pending.Tags)
		}
		changed := false
		for i, tag := range d.tags {
			if next.Pending.has(tag) {
				continue // counted by an earlier attempt
			}
			next.Count += d.n[i]
			next.Pending.Tags = append(next.Pending.Tags, tag)
			slices.Sort(next.Pending.Tags)
			changed = true
		}
		return next, changed
	})
}

// clearTags removes the plan's tags from its cells (step 3 above).
func (s *Store) clearTags(ctx context.Context, plan *cellPlan) error {
	if len(plan.deltas) == 0 {
		return nil
	}
	return s.updateCells(ctx, plan.ids(), func(id string, cur *cellDoc) (cellDoc, bool) {
		if cur == nil {
			return cellDoc{}, false
		}
		d := plan.deltas[id]
		next := *cur
		next.Pending.Tags = slices.DeleteFunc(slices.Clone(cur.Pending.Tags), func(t string) bool { return slices.Contains(d.tags, t) })
		return next, len(next.Pending.Tags) != len(cur.Pending.Tags)
	})
}

// cellWrite is one cell write of a bulk: create when the cell did not
// exist, else index under its sequence number.
type cellWrite struct {
	id          string
	seqNo, term *int64
	doc         any
}

// cellBulkBody renders cell writes as _bulk NDJSON into index, a cells'
// write alias (goldens: cells_*.bulk.ndjson).
func cellBulkBody(index string, ws []cellWrite) ([]byte, error) {
	var buf bytes.Buffer
	for _, w := range ws {
		var action obj
		if w.seqNo == nil || w.term == nil {
			action = obj{"create": obj{"_index": index, "_id": w.id}}
		} else {
			action = obj{"index": obj{"_index": index, "_id": w.id, "if_seq_no": *w.seqNo, "if_primary_term": *w.term}}
		}
		if err := appendNDJSON(&buf, action, w.doc); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// updateCells reads cells and writes what next makes of each (write
// false: leave it), under optimistic concurrency: a cell another writer
// changed or created meanwhile (409) is read and redone at once; 429 and
// 5xx are redone with back-off for at most itemRetryBudget. Any other
// item error fails the call: a cell that cannot be written stops the
// batch (and so the partition), because skipping it would make every
// later answer of that cell wrong.
func (s *Store) updateCells(ctx context.Context, ids []string, next func(id string, cur *cellDoc) (cellDoc, bool)) error {
	return updateCellsIn(ctx, s, s.write(mappings.KindPermitCell), ids, func(id string, cur *cellDoc) (cellDoc, bool) {
		d, ok := next(id, cur)
		if d.Pending.Tags == nil {
			d.Pending.Tags = []string{}
		}
		return d, ok
	})
}

// updateCellsIn is updateCells for the cells of index (a write alias)
// whose documents are Ds.
func updateCellsIn[D any](ctx context.Context, s *Store, index string, ids []string, next func(id string, cur *D) (D, bool)) error {
	pending := ids
	delay := itemBackoffMin
	giveUp := time.Now().Add(itemRetryBudget)
	for len(pending) > 0 {
		r, err := s.mget(ctx, index, "", pending)
		if err != nil {
			return err
		}
		var ws []cellWrite
		for i, d := range r.Docs {
			var cur *D
			if d.Found {
				cur = new(D)
				if err := json.Unmarshal(d.Source, cur); err != nil {
					return fmt.Errorf("opensearch: cell %q: %w", pending[i], err)
				}
				if d.SeqNo == nil || d.PrimaryTerm == nil {
					return fmt.Errorf("%w: cell %q read without _seq_no", readmodel.ErrUnavailable, pending[i])
				}
			}
			doc, write := next(pending[i], cur)
			if !write {
				continue
			}
			w := cellWrite{id: pending[i], doc: doc}
			if d.Found {
				w.seqNo, w.term = d.SeqNo, d.PrimaryTerm
			}
			ws = append(ws, w)
		}
		if len(ws) == 0 {
			return nil
		}
		body, err := cellBulkBody(index, ws)
		if err != nil {
			return err
		}
		var out bulkResponse
		if err := s.do(ctx, http.MethodPost, bulkPath, body, "application/x-ndjson", &out); err != nil {
			return err
		}
		if len(out.Items) != len(ws) {
			return fmt.Errorf("%w: cell bulk answered %d items for %d", readmodel.ErrUnavailable, len(out.Items), len(ws))
		}
		var redo []string
		backOff := false
		for n, item := range out.Items {
			var status int
			var reason string
			for _, r := range item { // one action per item: index or create
				status = r.Status
				if r.Error != nil {
					reason = r.Error.Type + ": " + r.Error.Reason
				}
			}
			switch classify(status) {
			case itemApplied:
			case itemStale: // 409: changed or created by another writer
				redo = append(redo, ws[n].id)
			case itemRetry:
				redo = append(redo, ws[n].id)
				backOff = true
			default:
				return fmt.Errorf("%w: cell %q: %d %s", readmodel.ErrUnavailable, ws[n].id, status, reason)
			}
		}
		if len(redo) == 0 {
			return nil
		}
		if time.Now().Add(delay).After(giveUp) {
			return fmt.Errorf("%w: %d cells still not written after %s (first %q)", readmodel.ErrUnavailable, len(redo), itemRetryBudget, redo[0])
		}
		if backOff {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("%w: %d cells not written when the context ended: %w", readmodel.ErrUnavailable, len(redo), ctx.Err())
			case <-t.C:
			}
			delay = min(2*delay, itemBackoffMax)
		}
		sort.Strings(redo)
		pending = redo
	}
	return nil
}
