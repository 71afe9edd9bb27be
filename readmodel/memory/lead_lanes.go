package memory

import (
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Lead lanes. A lead's write is, per anchor, an insert into two B-trees
// and into the day cells and roll-ups; in a large store the trees alone
// are four in ten of its CPU, on the one goroutine of the signal lane
// (apply.go). A live batch of laneMin or more leads is written in two
// lanes instead:
//
//  1. in order, on the writer: the lead table, each lead's record and
//     its anchors' structures (interning, anchor versions, keys
//     created), listed as changes: a record added to or removed from one
//     (anchor, key). A moved lead gets a new record here (the one-by-one
//     path reuses the old), as the old one must still name its place
//     until the lanes remove it;
//  2. at once: a goroutine applies every change to the keys' trees, and
//     the writer applies them to the keys' day cells and roll-ups. No
//     field is written by both, and the records are only read.
//
// So a key's structures are the same after the batch as after putLead
// one lead at a time (TestLeadLanesMatchOneByOne). Small batches and a
// side whose trees are deferred (lead_bulk.go) take putLead. A key not
// built yet (lead_bulk.go) gets no change: an add appends to its pend at
// staging, and a remove builds it there first.

// leadChange is one record added to (delta 1) or removed from (-1) the
// structures of one (anchor, key).
type leadChange struct {
	k     *keyLeads
	it    leadItem
	r     *leadRec // it's record
	delta int64
}

// putLeads stores ls in order (the side's writer), calling count with
// each one's result.
func (s *side) putLeads(ls []readmodel.Lead, count func(bool)) {
	x := s.signals.leads
	id := func(j int) string { return ls[j].LeadID }
	if len(ls) < laneMin || x.deferTrees {
		for i, l := range ls {
			s.leads.touchRun(i, len(ls), id)
			count(s.putLead(l))
		}
		return
	}
	changes := s.leadChanges[:0]
	stage := func(r *leadRec, create bool, delta int64) {
		it := itemOf(r)
		x.eachKey(r, create, func(a *anchorLeads, k *keyLeads) {
			if delta > 0 && x.appendPending(a, k, r) { // lead_bulk.go
				return
			}
			if delta < 0 {
				k.build() // before the lanes, with the records staged so far
			}
			changes = append(changes, leadChange{k, it, r, delta})
		})
	}
	dropped := s.leadsDropped[:0]
	for i, l := range ls {
		s.leads.touchRun(i, len(ls), id)
		prev, index, took := s.storeLead(l)
		if index {
			if prev != nil {
				stage(prev, false, -1)
				dropped = append(dropped, prev)
			}
			r := x.record(l, nil)
			s.leads.rows[l.LeadID].doc = r
			stage(r, true, 1)
		}
		count(took)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, c := range changes {
			if c.delta > 0 {
				c.k.addTrees(c.it)
			} else {
				c.k.removeTrees(c.it)
			}
			s.yieldEvery(i)
		}
	})
	for i, c := range changes {
		c.k.days.add(c.r, c.delta)
		s.yieldEvery(i)
	}
	wg.Wait()
	// The slots of the records replaced are free once no tree names
	// them: not before, or a later record of the batch could take one.
	for _, r := range dropped {
		x.drop(r)
	}
	clear(changes) // hold no records
	clear(dropped)
	s.leadChanges, s.leadsDropped = changes[:0], dropped[:0]
}
