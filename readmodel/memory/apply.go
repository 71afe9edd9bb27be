package memory

import (
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Group commit. Apply calls that arrive while the writer is busy queue
// up; whichever takes the writer next applies every queued batch, in
// arrival order, as one step for readers (one drain, one swap), and
// each call returns its own batch's result. Readers still see whole
// batches only (a step holds whole batches), and a call returns only
// once its batch is visible.
//
// Within a step the leads are applied on their own goroutine beside
// every other kind: a side's lead table and lead index (leads.go) share
// nothing with its other tables and indexes, and nothing reads the side
// while it is written (store.go). The indexer hands the store one
// partition, one family, per batch, and many partitions at once, so a
// step commonly holds leads and permits (the mix's two costliest
// families): on 2 cores the two halves of the write then take about the
// time of the longer one instead of their sum. Each batch is still
// applied twice, once per side.

// applyReq is one Apply call waiting for the writer.
type applyReq struct {
	b    *readmodel.Batch
	res  readmodel.ApplyResult
	done bool // applied by another call's step (read under wmu)
}

// commit applies own (a batch the Store owns) with whatever else is
// queued, and returns own's result once it is visible.
func (s *Store) commit(own *readmodel.Batch) readmodel.ApplyResult {
	req := &applyReq{b: own}
	s.qmu.Lock()
	s.queue = append(s.queue, req)
	s.qmu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if req.done {
		return req.res // the previous step took it
	}
	s.settle() // an Import's second side is built (import.go)
	s.qmu.Lock()
	group := s.queue
	s.queue = nil
	s.qmu.Unlock()
	batches := make([]*readmodel.Batch, len(group))
	for i, r := range group {
		batches[i] = r.b
	}
	j := 1 - s.active.Load()
	s.drain(j)
	standby := s.sides[j]
	standby.applyAll(s.pending, nil)
	res := make([]readmodel.ApplyResult, len(batches))
	standby.applyAll(batches, res)
	if s.journal != nil { // an Import runs: its new sides get every batch of the step
		*s.journal = append(*s.journal, batches...)
	}
	applied := 0
	for i, r := range group {
		r.res, r.done = res[i], true
		applied += res[i].Applied
	}
	if applied == 0 { // both sides now hold the same state
		s.pending = nil
		return req.res
	}
	s.active.Store(j)
	s.seq.Add(1)
	s.pending = batches
	return req.res
}

// applyAll applies bs in order, the leads beside the rest (see above);
// res, when not nil, gets each batch's result.
func (s *side) applyAll(bs []*readmodel.Batch, res []readmodel.ApplyResult) {
	var leads, rest int
	for _, b := range bs {
		leads += len(b.Leads)
		rest += b.Len() - len(b.Leads)
	}
	if leads < applyStep || rest < applyStep {
		for i, b := range bs {
			r := s.apply(b)
			if res != nil {
				res[i] = r
			}
		}
		return
	}
	lanes := make([]readmodel.Batch, 2*len(bs))
	for i, b := range bs {
		lanes[2*i], lanes[2*i+1] = splitLeads(b)
	}
	var wg sync.WaitGroup
	leadRes := make([]readmodel.ApplyResult, len(bs))
	wg.Go(func() {
		for i := range bs {
			leadRes[i] = s.apply(&lanes[2*i+1])
		}
	})
	restRes := make([]readmodel.ApplyResult, len(bs))
	for i := range bs {
		restRes[i] = s.apply(&lanes[2*i])
	}
	wg.Wait()
	for i := range res {
		res[i] = readmodel.ApplyResult{Applied: restRes[i].Applied + leadRes[i].Applied, Stale: restRes[i].Stale + leadRes[i].Stale}
	}
}

// splitLeads parts b into everything but the leads, and the leads (with
// the lead deletes). Within each part the order is b's.
func splitLeads(b *readmodel.Batch) (rest, leads readmodel.Batch) {
	rest = *b
	rest.Leads = nil
	leads.Leads = b.Leads
	if len(b.Deletes) > 0 {
		rest.Deletes = nil
		for _, d := range b.Deletes {
			if d.Kind == readmodel.KindLead {
				leads.Deletes = append(leads.Deletes, d)
			} else {
				rest.Deletes = append(rest.Deletes, d)
			}
		}
	}
	return rest, leads
}
