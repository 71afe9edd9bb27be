package opensearch

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

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
//     the external version (writer.go: 3v for an unlinked write, 3v+1 for
//     a linked one, 3v+2 for a tombstone), so a re-link at the same
//     entity version is a transition of its own (it enters the ZIP's and
//     city's cells), an unlinked copy arriving after it is stale and
//     moves nothing, a delete of the same version leaves the cells of
//     either, and the writes of one version never share a tag.
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
//     (version_type external_gte; 3v stays 3v, so a later re-link still
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
	// order of the Writer contract within an entity version, so a
	// re-link at the same entity version (3v+1 over 3v) or a delete of it
	// (3v+2) is a newer state that moves the cells like any other; 0 for
	// no document.
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
	return slices.Sorted(maps.Keys(p.deltas))
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
// external version ext: the unlinked (3v), linked (3v+1) and deleting
// (3v+2) writes of one entity version are transitions of their own, each
// stored once.
func transitionTag(id string, ext int64) string { return id + "@" + strconv.FormatInt(ext, 10) }

// batchExternal is the external version an item of the batch is written
// under, 0 when Apply refuses its version (above maxEntityVersion: never
// stored, owes nothing).
func batchExternal(version int64, rank versionRank) int64 {
	if version > maxEntityVersion || version < 1 {
		return 0
	}
	return externalVersion(bulkItem{version: version, rank: rank})
}

// permitTombstone is a permit delete's document: the tombstone and what
// the delete owes the cells.
type permitTombstone struct {
	meta
	CellsPending *cellsPending `json:"cells_pending,omitempty"`
}

// batchCells is the cell work of one batch for one kind of entity
// (permits: P is cellsPending; leads: leadPending).
type batchCells[P any] struct {
	kind    readmodel.Kind
	ids     []string      // the batch's entities of kind
	pending map[string]*P // by tag: what each version written owes
	recover []string      // entities stored with a pending: an earlier Apply did not finish
}

// permitCells is the permit cell work of one batch.
type permitCells = batchCells[cellsPending]

// pendingOf is what item owes the cells, nil for none (and for a batch
// without entities of c's kind).
func (c *batchCells[P]) pendingOf(it bulkItem) *P {
	if c == nil || it.kind != c.kind {
		return nil
	}
	if it.version > maxEntityVersion {
		return nil
	}
	return c.pending[transitionTag(it.id, externalVersion(it))]
}

// planCells reads the stored state of v's entities of kind (stored: one
// realtime _mget) and works out what each version written owes the
// cells (owe). nil when v holds no entity.
func planCells[S, P any](ctx context.Context, kind readmodel.Kind, v versions[S],
	stored func(context.Context, []string) (map[string]S, map[string]*P, error),
	version func(S) int64, owe func(from, to S, tag string) *P) (*batchCells[P], error) {
	if len(v.ids) == 0 {
		return nil, nil
	}
	states, pending, err := stored(ctx, v.ids)
	if err != nil {
		return nil, err
	}
	c := &batchCells[P]{kind: kind, ids: v.ids}
	c.pending, c.recover = owes(v, states, pending, version, owe)
	return c, nil
}

// versions are the states a batch writes its entities at (of one kind),
// by id; ids in the order first seen.
type versions[S any] struct {
	ids    []string
	states map[string][]S
}

// batchVersions notes the states a batch writes the entities of kind
// at: each document of docs (state: its id and state) and each delete of
// that kind (tomb: a tombstone's state at its external version).
func batchVersions[E, S any](kind readmodel.Kind, docs []E, deletes []readmodel.Delete, state func(*E) (string, S), tomb func(ext int64) S) versions[S] {
	var v versions[S]
	for i := range docs {
		v.note(state(&docs[i]))
	}
	for _, d := range deletes {
		if d.Kind == kind {
			v.note(d.ID, tomb(batchExternal(d.Version, rankTombstone)))
		}
	}
	return v
}

func (v *versions[S]) note(id string, st S) {
	if v.states == nil {
		v.states = map[string][]S{}
	}
	if _, ok := v.states[id]; !ok {
		v.ids = append(v.ids, id)
	}
	v.states[id] = append(v.states[id], st)
}

// owes works out what each version of v owes the cells (owe, from the
// stored state to it), by tag, and which ids are stored with a pending
// (recover: an earlier Apply did not finish). version is a state's
// external version.
func owes[S, P any](v versions[S], stored map[string]S, pending map[string]*P, version func(S) int64, owe func(from, to S, tag string) *P) (map[string]*P, []string) {
	out := map[string]*P{}
	var recover []string
	for _, id := range v.ids {
		if pending[id] != nil {
			recover = append(recover, id)
		}
		from := stored[id]
		for _, st := range v.states[id] {
			if version(st) <= version(from) {
				continue // stale (an equal or newer (version, linked) stored) or refused: not stored, owes nothing
			}
			tag := transitionTag(id, version(st))
			if _, seen := out[tag]; !seen { // at equal versions the first is the one stored
				out[tag] = owe(from, st, tag)
			}
		}
	}
	return out, recover
}

// planPermitCells reads the stored state of the batch's permits (one
// realtime _mget) and works out what each version written owes the
// cells (step 1). nil when the batch holds no permit.
func (s *Store) planPermitCells(ctx context.Context, b readmodel.Batch) (*permitCells, error) {
	v := batchVersions(readmodel.KindPermit, b.Permits, b.Deletes, func(p *readmodel.Permit) (string, permitState) {
		d := permitDocOf(*p)
		return p.PermitID, permitStateOf(&d, batchExternal(p.Version, docRank(!p.Linked())))
	}, func(ext int64) permitState { return permitState{version: ext} })
	return planCells(ctx, readmodel.KindPermit, v, func(ctx context.Context, ids []string) (map[string]permitState, map[string]*cellsPending, error) {
		return s.storedPermits(ctx, ids, "?_source_includes="+permitSourceFields)
	}, func(st permitState) int64 { return st.version }, pendingOf)
}
