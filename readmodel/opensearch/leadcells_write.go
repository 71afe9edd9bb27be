// Lead cells against the store: planning a batch's lead moves, reading stored leads and finishing the cells.

package opensearch

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// leadSourceFields are what the cells need of a stored lead.
const leadSourceFields = "doc_id,version,deleted,geo_ids,signal_key,event_date_used,confidence,location.county_norm,location.city_norm,location.zipcode_norm,cells_pending"

// planLeadCells is planPermitCells for the batch's leads.
func (s *Store) planLeadCells(ctx context.Context, b readmodel.Batch) (*leadCells, error) {
	v := batchVersions(readmodel.KindLead, b.Leads, b.Deletes, func(l *readmodel.Lead) (string, leadState) {
		d := leadDocOf(*l)
		return l.LeadID, leadStateOf(&d, batchExternal(l.Version, docRank(!l.Linked())))
	}, func(ext int64) leadState { return leadState{version: ext} })
	return planCells(ctx, readmodel.KindLead, v, func(ctx context.Context, ids []string) (map[string]leadState, map[string]*leadPending, error) {
		_, states, pending, err := s.storedLeads(ctx, ids, "?_source_includes="+leadSourceFields)
		return states, pending, err
	}, func(st leadState) int64 { return st.version }, leadPendingOf)
}

// storedLeads reads stored leads: documents, states and debts.
func (s *Store) storedLeads(ctx context.Context, ids []string, query string) (map[string]*leadDoc, map[string]leadState, map[string]*leadPending, error) {
	return storedDocs(ctx, s, readmodel.KindLead, ids, query, leadStateOf, func(src []byte) (*leadDoc, *leadPending, error) {
		var doc struct {
			leadDoc
			CellsPending *leadPending `json:"cells_pending"`
		}
		err := json.Unmarshal(src, &doc)
		return &doc.leadDoc, doc.CellsPending, err
	})
}

// finishLeadCells is finishPermitCells for leads.
func (s *Store) finishLeadCells(ctx context.Context, ids []string) error {
	var plan leadCellPlan
	return finishCells(ctx, s, readmodel.KindLead, ids, s.storedLeads,
		func(st leadState) int64 { return st.version }, plan.addPending,
		func(ctx context.Context) error { return s.countLeadCells(ctx, &plan) },
		func(ctx context.Context) error { return s.clearLeadTags(ctx, &plan) })
}

// countLeadCells counts plan's moves in the lead cells, each tag once
// (a tag the cell already holds was counted by an earlier attempt) and
// records the tags in the cells.
func (s *Store) countLeadCells(ctx context.Context, plan *leadCellPlan) error {
	return updateCellsIn(ctx, s, s.write(mappings.KindLeadCell), plan.ids(), func(id string, cur *leadCellDoc) (leadCellDoc, bool) {
		next := leadCellDoc{Tops: []leadTop{}, Pending: cellPending{Tags: []string{}}}
		next.Anchor, next.SignalKey, next.Level, next.Day = splitLeadCellID(id)
		if cur != nil {
			next = *cur
			next.Tops = slices.Clone(cur.Tops)
			next.Pending.Tags = slices.Clone(cur.Pending.Tags)
		}
		// A tag may move a lead out of and back into one cell (its month
		// and year when only the day changes): both moves or neither.
		var held cellPending
		if cur != nil {
			held = cur.Pending
		}
		changed := false
		for _, m := range plan.moves[id] {
			if held.has(m.tag) {
				continue // counted by an earlier attempt
			}
			next.add(m.side, m.n)
			if !next.Pending.has(m.tag) {
				next.Pending.Tags = append(next.Pending.Tags, m.tag)
				slices.Sort(next.Pending.Tags)
			}
			changed = true
		}
		return next, changed
	})
}

// clearLeadTags drops plan's tags from the lead cells.
func (s *Store) clearLeadTags(ctx context.Context, plan *leadCellPlan) error {
	return updateCellsIn(ctx, s, s.write(mappings.KindLeadCell), plan.ids(), func(id string, cur *leadCellDoc) (leadCellDoc, bool) {
		if cur == nil {
			return leadCellDoc{}, false
		}
		next := *cur
		moves := plan.moves[id]
		next.Pending.Tags = slices.DeleteFunc(slices.Clone(cur.Pending.Tags), func(t string) bool {
			return slices.ContainsFunc(moves, func(m leadMove) bool { return m.tag == t })
		})
		return next, len(next.Pending.Tags) != len(cur.Pending.Tags)
	})
}
