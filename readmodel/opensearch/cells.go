package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// Permit count cells: the pre-aggregates Location reads.
//
// A cell is (anchor, issue day): its document (mappings.KindPermitCell,
// id cellID) holds the number of live permits under the anchor issued
// that day (day absent: undated). A permit's anchors are its geo_ids
// that are not property ids, and its property_id: exactly the permits
// Location counted before, with terms on geo_ids or property_id (the two
// id spaces are disjoint, readmodel.IsPropertyID). Location sums the
// anchor's cells and takes the newest day with a positive count: a
// bounded read (one document per issue day) instead of a count over
// every permit of the anchor (12M for California).
//
// Exactness. Apply keeps the cells equal to what the stored permit
// documents hold, through crashes, replays with other batch boundaries,
// transport retries and refused documents, with no scripted += (a bulk is
// not atomic, so a plain counter cannot tell which increments of a
// crashed batch landed). The permit document itself records what its
// write owes the cells:
//
//  1. Plan: one realtime _mget reads the batch's stored permits (the
//     state the cells count). Each version v of permit id the batch
//     writes carries cells_pending: the cells the permit leaves and
//     enters going from that stored state to v, tagged "id@e" (none
//     when only other fields change). Versions are compared, and e is,
//     the external version (writer.go: 2v for an unlinked write, 2v+1 for
//     a linked one or a tombstone), so a re-link at the same entity
//     version is a transition of its own (it enters the ZIP's and city's
//     cells), an unlinked copy arriving after it is stale and moves
//     nothing, and the two writes of one version never share a tag.
//  2. The documents' bulk (every kind), external versions as always. A
//     refused or stale version is not stored, and neither is its
//     pending: it owes nothing.
//  3. Finish: a second realtime _mget reads what is stored now. For each
//     stored permit with cells_pending, the cells are read (_mget with
//     seq_no and primary_term) and written back (if_seq_no and
//     if_primary_term; a concurrent writer's 409 makes us read and redo)
//     with the deltas of the tags they do not hold yet, and the tags
//     added: one document write per cell, atomic. Then the permit is
//     rewritten at the same external version without cells_pending
//     (version_type external_gte; 2v stays 2v, so a later re-link still
//     takes), then the tags are removed from the cells.
//
// A crash anywhere leaves each permit either without a pending (its
// transition is wholly in the cells, or was never stored) or with one,
// which the next Apply of any batch holding that permit finishes first
// (its step 1 reads it; the cells that counted the tag skip it). A
// replay with other boundaries then reads the stored versions and makes
// no transition for what was written. A tag is never reused (a version
// is stored once; its rewrite carries no pending), so one that a crash
// between the rewrite and the clearing leaves in a cell is harmless.
//
// It relies on one writer per permit at a time (the permit topic is
// keyed by permit id; a consumer group gives a partition to one member).
// Cost: an _mget before and after the bulk, and for each permit whose
// cells change (every new permit) two cell writes per cell and one
// rewrite of its document; an update that keeps its geographies and
// issue day costs the two _mgets only.

// permitState is what a permit contributes to the cells.
type permitState struct {
	// version is the external version (writer.go, externalVersion): the
	// (version, linked) order of the Writer contract, so a re-link at
	// the same entity version (2v+1 over 2v) is a newer state that moves
	// the cells like any other; 0 for no document.
	version int64
	live    bool
	anchors []string // sorted, unique
	day     string   // issue day, "" when undated
}

// permitStateOf is the contribution of a permit document stored (or to
// be stored) under external version ext.
func permitStateOf(d *permitDoc, ext int64) permitState {
	st := permitState{version: ext, live: !d.Deleted, day: validDate(d.IssueDate)}
	if !st.live {
		st.day = ""
		return st
	}
	for _, g := range d.GeoIDs {
		if g != "" && !readmodel.IsPropertyID(g) {
			st.anchors = append(st.anchors, g)
		}
	}
	if d.PropertyID != "" {
		st.anchors = append(st.anchors, d.PropertyID)
	}
	slices.Sort(st.anchors)
	st.anchors = slices.Compact(st.anchors)
	return st
}

// cellID names the cell of an anchor and issue day.
func cellID(anchor, day string) string {
	if day == "" {
		day = "none"
	}
	return anchor + "|" + day
}

// cellDoc is one cell document.
type cellDoc struct {
	Anchor  string      `json:"anchor"`
	Day     string      `json:"day,omitempty"`
	Count   int64       `json:"count"`
	Pending cellPending `json:"pending"`
}

// cellPending lists the transitions a cell has counted whose documents
// may not be written yet, sorted.
type cellPending struct {
	Tags []string `json:"tags"`
}

func (p cellPending) has(tag string) bool {
	_, ok := slices.BinarySearch(p.Tags, tag)
	return ok
}

// cellDelta is what one batch adds to one cell, per transition tag.
type cellDelta struct {
	anchor, day string
	tags        []string
	n           []int64
}

// cellPlan gathers the deltas of a batch by cell id.
type cellPlan struct {
	deltas map[string]*cellDelta
}

func (p *cellPlan) add(anchor, day, tag string, n int64) {
	if p.deltas == nil {
		p.deltas = map[string]*cellDelta{}
	}
	id := cellID(anchor, day)
	d := p.deltas[id]
	if d == nil {
		d = &cellDelta{anchor: anchor, day: day}
		p.deltas[id] = d
	}
	d.tags = append(d.tags, tag)
	d.n = append(d.n, n)
}

// transition adds the deltas of moving a permit from one state to
// another under tag: nothing when the cells are the same.
func (p *cellPlan) transition(from, to permitState, tag string) {
	if from.live && to.live && from.day == to.day && slices.Equal(from.anchors, to.anchors) {
		return
	}
	if from.live {
		for _, a := range from.anchors {
			if !to.live || to.day != from.day || !slices.Contains(to.anchors, a) {
				p.add(a, from.day, tag, -1)
			}
		}
	}
	if to.live {
		for _, a := range to.anchors {
			if !from.live || to.day != from.day || !slices.Contains(from.anchors, a) {
				p.add(a, to.day, tag, +1)
			}
		}
	}
}

// ids lists the plan's cells in order.
func (p *cellPlan) ids() []string {
	out := make([]string, 0, len(p.deltas))
	for id := range p.deltas {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// cellsPending is what a stored permit version owes the cells: the
// cells it leaves (-1) and enters (+1), under its tag. Stored in the
// permit document (cells_pending, not indexed) until the cells hold it.
type cellsPending struct {
	Tag   string   `json:"tag"`
	Leave []string `json:"leave,omitempty"`
	Enter []string `json:"enter,omitempty"`
}

// pendingOf is the move between two states, nil when no cell changes.
func pendingOf(from, to permitState, tag string) *cellsPending {
	var p cellPlan
	p.transition(from, to, tag)
	if len(p.deltas) == 0 {
		return nil
	}
	out := &cellsPending{Tag: tag}
	for _, id := range p.ids() {
		if p.deltas[id].n[0] < 0 {
			out.Leave = append(out.Leave, id)
		} else {
			out.Enter = append(out.Enter, id)
		}
	}
	return out
}

// addPending adds a stored pending to a plan.
func (p *cellPlan) addPending(c *cellsPending) {
	for _, ids := range []struct {
		ids []string
		n   int64
	}{{c.Leave, -1}, {c.Enter, +1}} {
		for _, id := range ids.ids {
			anchor, day := splitCellID(id)
			p.add(anchor, day, c.Tag, ids.n)
		}
	}
}

// splitCellID is cellID's inverse.
func splitCellID(id string) (anchor, day string) {
	i := strings.LastIndexByte(id, '|')
	anchor, day = id[:i], id[i+1:]
	if day == "none" {
		day = ""
	}
	return anchor, day
}

// transitionTag names the transition to the version of id stored under
// external version ext: the unlinked (2v) and linked (2v+1) writes of one
// entity version are two transitions, each stored once.
func transitionTag(id string, ext int64) string { return id + "@" + strconv.FormatInt(ext, 10) }

// batchExternal is the external version an item of the batch is written
// under, 0 when Apply refuses its version (above maxEntityVersion: never
// stored, owes nothing).
func batchExternal(kind readmodel.Kind, id string, version int64, unlinked bool) int64 {
	if version > maxEntityVersion || version < 1 {
		return 0
	}
	return externalVersion(bulkItem{kind: kind, id: id, version: version, unlinked: unlinked})
}

// permitTombstone is a permit delete's document: the tombstone and what
// the delete owes the cells.
type permitTombstone struct {
	meta
	CellsPending *cellsPending `json:"cells_pending,omitempty"`
}

// permitCells is the cell work of one batch.
type permitCells struct {
	ids     []string                 // the batch's permits
	pending map[string]*cellsPending // by tag: what each version written owes
	recover []string                 // permits stored with a pending: an earlier Apply did not finish
}

// planPermitCells reads the stored state of the batch's permits (one
// realtime _mget) and works out what each version written owes the
// cells (step 1). nil when the batch holds no permit.
func (s *Store) planPermitCells(ctx context.Context, b readmodel.Batch) (*permitCells, error) {
	states := map[string][]permitState{}
	var ids []string
	note := func(id string, st permitState) {
		if _, ok := states[id]; !ok {
			ids = append(ids, id)
		}
		states[id] = append(states[id], st)
	}
	for i := range b.Permits {
		p := &b.Permits[i]
		d := permitDocOf(*p)
		note(p.PermitID, permitStateOf(&d, batchExternal(readmodel.KindPermit, p.PermitID, p.Version, !p.Linked())))
	}
	for _, d := range b.Deletes {
		if d.Kind == readmodel.KindPermit {
			note(d.ID, permitState{version: batchExternal(d.Kind, d.ID, d.Version, false)})
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	stored, pending, err := s.storedPermits(ctx, ids, "?_source_includes="+permitSourceFields)
	if err != nil {
		return nil, err
	}
	pc := &permitCells{ids: ids, pending: map[string]*cellsPending{}}
	for _, id := range ids {
		if pending[id] != nil {
			pc.recover = append(pc.recover, id)
		}
		from := stored[id]
		for _, st := range states[id] {
			if st.version <= from.version {
				continue // stale (an equal or newer (version, linked) stored) or refused: not stored, owes nothing
			}
			tag := transitionTag(id, st.version)
			if _, seen := pc.pending[tag]; !seen { // at equal versions the first is the one stored
				pc.pending[tag] = pendingOf(from, st, tag)
			}
		}
	}
	return pc, nil
}

// pendingOf is what item owes the cells, nil for none (and for a batch
// without permits).
func (pc *permitCells) pendingOf(it bulkItem) *cellsPending {
	if pc == nil || it.kind != readmodel.KindPermit {
		return nil
	}
	if it.version > maxEntityVersion {
		return nil
	}
	return pc.pending[transitionTag(it.id, externalVersion(it))]
}

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
	r, err := s.mget(ctx, s.write(readmodel.KindPermit), query, ids)
	if err != nil {
		return nil, nil, nil, err
	}
	docs := make(map[string]*permitDoc, len(ids))
	states := make(map[string]permitState, len(ids))
	pending := map[string]*cellsPending{}
	for i, d := range r.Docs {
		if !d.Found {
			continue
		}
		if d.Version == nil {
			return nil, nil, nil, fmt.Errorf("%w: stored permit %q read without _version", readmodel.ErrUnavailable, ids[i])
		}
		var doc struct {
			permitDoc
			CellsPending *cellsPending `json:"cells_pending"`
		}
		if err := json.Unmarshal(d.Source, &doc); err != nil {
			return nil, nil, nil, fmt.Errorf("opensearch: stored permit %q: %w", ids[i], err)
		}
		docs[ids[i]] = &doc.permitDoc
		states[ids[i]] = permitStateOf(&doc.permitDoc, *d.Version)
		if doc.CellsPending != nil {
			pending[ids[i]] = doc.CellsPending
		}
	}
	return docs, states, pending, nil
}

// finishPermitCells is step 3 for the permits ids: every stored pending
// is counted in the cells, dropped from its document (stamped anew, so a
// reindex's catch-up copies the rewrite), and its tags cleared from the
// cells.
func (s *Store) finishPermitCells(ctx context.Context, ids []string) error {
	docs, states, pending, err := s.storedPermitDocs(ctx, ids, "")
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		return nil
	}
	var plan cellPlan
	var rewrite []bulkItem
	for _, id := range ids {
		p := pending[id]
		if p == nil {
			continue
		}
		plan.addPending(p)
		d := docs[id]
		d.IndexedAt = s.indexedAt()
		var doc any = *d
		if d.Deleted {
			doc = d.meta
		}
		rewrite = append(rewrite, rewriteItem(readmodel.KindPermit, id, d.Version, states[id].version, doc))
	}
	if err := s.countCells(ctx, &plan); err != nil {
		return err
	}
	if err := s.rewriteDocs(ctx, rewrite); err != nil {
		return err
	}
	return s.clearTags(ctx, &plan)
}

// rewriteItem is the rewrite of a stored document of entity version v
// under external version ext (its _version): an unlinked document (ext
// 2v) stays unlinked, so its later re-link (2v+1) still takes, and a
// linked one or a tombstone (2v+1) stays above an unlinked copy of v.
func rewriteItem(kind readmodel.Kind, id string, v, ext int64, doc any) bulkItem {
	return bulkItem{kind: kind, id: id, version: v, doc: doc, unlinked: ext == 2*v}
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
		for _, v := range []any{action, it.doc} {
			line, err := json.Marshal(v)
			if err != nil {
				return err
			}
			buf.Write(line)
			buf.WriteByte('\n')
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

// cellBulkResponse is a _bulk answer about cells.
type cellBulkResponse struct {
	Items []map[string]struct {
		ID     string `json:"_id"`
		Status int    `json:"status"`
		Error  *struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
	} `json:"items"`
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
		for _, v := range []any{action, w.doc} {
			line, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			buf.Write(line)
			buf.WriteByte('\n')
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
		var out cellBulkResponse
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
