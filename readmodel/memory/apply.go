package memory

import (
	"slices"
	"sync"

	"github.com/permitd/permitd/internal/spareprocs"
	"github.com/permitd/permitd/readmodel"
)

// Group commit. Apply calls that arrive while the writer is busy queue
// up; whichever takes the writer next applies every queued batch, in
// arrival order, as one step for readers (one drain, one swap), and
// each call returns its own batch's result. Readers still see whole
// batches only (a step holds whole batches), and a call returns only
// once its batch is visible.
//
// Within a step the signal families (leads, geo signals, catalog
// entries) are applied on their own goroutine beside every other kind:
// a side's lead, geo signal and catalog tables and their indexes
// (leads.go, signals.go) share nothing with its other tables and
// indexes, the rest of the write never reads them (only readers do:
// GeoSignalsForLocation's catalog check), and nothing reads the side
// while it is written (store.go). The indexer hands the store one
// partition, one family, per batch, and many partitions at once, so a
// step commonly holds leads and permits (the mix's two costliest
// families): on 2 cores the two halves of the write then take about the
// time of the longer one instead of their sum. Each batch is still
// applied twice, once per side; the batches the standby side missed
// (the previous step's) and the step's own are split into the two lanes
// together, one fork and one join a step, so a step of permits after a
// step of leads still writes the two side by side.

// The signal writer. While a replay is open (replay.go) nobody reads
// the side it writes, and no step is made visible before EndReplay, so
// a step is only the group its batches were applied in. A step still
// ended when both of its lanes had: the partitions whose batches of
// leads were written long before the permits beside them waited for the
// permits, and the next batches of leads, projected meanwhile, waited
// for the next step. In a trace of the real mix's replay
// (BenchmarkIngestMix), one goroutine ran with none waiting to run (the
// other core idle) for 12.7% of the round's wall time, a lead lane for a
// third of that and a permit lane for more than half; with this writer,
// 4.9% (docs/kafka-history.md, "Ninety-first session"). So during a
// replay a batch of the signal families only (every batch of a signal
// topic) is applied by a writer of its own (commitSignals: smu, with a
// group commit of its own), beside the steps of the other families
// under wmu: the two write structures no other lane shares, as the two
// lanes of a step do. A step under wmu that holds signal documents (a
// batch of mixed families) takes smu too, after wmu; BeginReplay,
// ReserveReplay and EndReplay take both. Once the replay has ended, a
// call that waited for smu goes through a step under wmu, as every
// Apply does then.

// applyQueue is the Apply calls waiting for a writer (a group commit):
// each joins it, then waits for the writer's lock; whichever takes the
// lock next takes the whole queue, its own call among them.
type applyQueue struct {
	mu   sync.Mutex
	reqs []*applyReq
}

func (q *applyQueue) join(r *applyReq) {
	q.mu.Lock()
	q.reqs = append(q.reqs, r)
	q.mu.Unlock()
}

// take empties the queue and returns what it held.
func (q *applyQueue) take() []*applyReq {
	q.mu.Lock()
	defer q.mu.Unlock()
	group := q.reqs
	q.reqs = nil
	return group
}

// leave takes r out of the queue.
func (q *applyQueue) leave(r *applyReq) {
	q.mu.Lock()
	q.reqs = slices.DeleteFunc(q.reqs, func(x *applyReq) bool { return x == r })
	q.mu.Unlock()
}

// applyReq is one Apply call waiting for the writer.
type applyReq struct {
	b *readmodel.Batch
	// lent is the caller's batch when b shares its permits and
	// properties (lentBatch, store.go): valid until the call returns.
	lent *readmodel.Batch
	res  readmodel.ApplyResult
	done bool // applied by another call's step (read under wmu)
}

// commit applies own (a batch the Store owns, or lent's lentBatch) with
// whatever else is queued, and returns own's result once it is visible.
func (s *Store) commit(own, lent *readmodel.Batch) readmodel.ApplyResult {
	if s.background != nil && !s.replaying.Load() { // beside readers (Params.Background); told after wmu is let go
		defer s.background()()
	}
	if lent != nil && signalLen(own) == own.Len() {
		if res, ok := s.commitSignals(own, lent); ok {
			return res
		}
	}
	req := &applyReq{b: own, lent: lent}
	s.queue.join(req)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if req.done {
		return req.res // the previous step took it
	}
	s.settle() // an Import's second side is built (import.go)
	group := s.queue.take()
	batches := make([]*readmodel.Batch, len(group))
	for i, r := range group {
		if r.lent != nil && s.replay == nil {
			// Lent during a replay that has ended since: this step's
			// batches may be kept (pending, held, an Import's journal),
			// so the Store owns all of it. Its caller waits in commit.
			r.b, r.lent = cloneBatch(r.lent), nil
		}
		batches[i] = r.b
	}
	if len(s.held) > 0 && !s.holding() { // NewImport and BeginReplay release first; never lose held steps
		s.release()
	}
	j := 1 - s.active.Load()
	s.drain(j)
	if s.holding() { // an Export reads the active side (export_hold.go)
		s.hold(group, batches)
		return req.res
	}
	standby := s.sides[j]
	res := make([]readmodel.ApplyResult, len(batches))
	seeks := s.stepSeeks(batches)
	sig := s.replay != nil && slices.ContainsFunc(batches, func(b *readmodel.Batch) bool { return signalLen(b) > 0 })
	if sig {
		s.smu.Lock() // the signal writer's structures (commitSignals)
	}
	standby.applyAll(s.pending, batches, res, seeks)
	if sig {
		s.smu.Unlock()
	}
	s.keepSeeks(seeks, batches)
	if s.replay != nil { // one side first: readers keep the other until EndReplay (replay.go)
		s.replay.batches += len(batches)
		for i, r := range group {
			r.res, r.done = res[i], true
		}
		return req.res
	}
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
		s.keepSeeks(s.seeks, nil)
		return req.res
	}
	s.active.Store(j)
	s.seq.Add(1)
	s.pending = batches
	return req.res
}

// commitSignals applies own, a batch of the signal families only, while
// a replay is open, with the other such batches queued meanwhile, under
// smu alone (the signal writer, above), and returns its result; false
// when the replay has ended (own is not applied: the caller's step
// applies it).
func (s *Store) commitSignals(own, lent *readmodel.Batch) (readmodel.ApplyResult, bool) {
	req := &applyReq{b: own, lent: lent}
	s.squeue.join(req)
	s.smu.Lock()
	defer s.smu.Unlock()
	if req.done {
		return req.res, true // the last group took it
	}
	if !s.sigOpen { // closed under smu: each call queued meanwhile finds this out for itself
		s.squeue.leave(req)
		return readmodel.ApplyResult{}, false
	}
	group := s.squeue.take()
	d := s.sides[1-s.active.Load()] // the replay's side: no other write swaps the sides while it is open
	release := spareprocs.Hold()
	for _, r := range group {
		r.res, r.done = d.apply(r.b), true
	}
	release()
	s.sigBatches += len(group)
	return req.res, true
}

// stepSeeks is the seek logs of a step (permit_seeklog.go): those the
// other side recorded for the pending batches, which this step writes
// first, and one to record for each of batches that takes the permit
// lanes (none while a replay writes one side only).
func (s *Store) stepSeeks(batches []*readmodel.Batch) batchSeeks {
	seeks := s.seeks
	if s.replay != nil {
		return seeks
	}
	for _, b := range batches {
		if len(b.Permits) < seekLogMin {
			continue
		}
		if seeks == nil {
			seeks = batchSeeks{}
		}
		var l *seekLogs
		if n := len(s.seekFree); n > 0 {
			l, s.seekFree = s.seekFree[n-1], s.seekFree[:n-1]
		} else {
			l = new(seekLogs)
		}
		seeks[b] = l
	}
	return seeks
}

// keepSeeks keeps the logs of seeks recorded for kept (the batches the
// other side has still to write: Store.pending) and takes the others
// back for the next steps.
func (s *Store) keepSeeks(seeks batchSeeks, kept []*readmodel.Batch) {
	s.seeks = nil
	for b, l := range seeks {
		if slices.Contains(kept, b) {
			if s.seeks == nil {
				s.seeks = batchSeeks{}
			}
			s.seeks[b] = l
			continue
		}
		s.seekPlaces += int64(l.usedPlaces())
		if len(s.seekFree) < seekFreeMax {
			s.seekFree = append(s.seekFree, l)
		}
	}
}

// seekFreeMax is the most seek logs kept for the steps to come: about
// the batches of a step, each log as large as its batch's places.
const seekFreeMax = 32

// applyAll applies missed and then bs, in order, the signal families
// beside the rest (see above); res[i] gets bs[i]'s result. seeks holds
// the seek logs of the batches that have them: read for missed, which
// the other side wrote first, recorded for bs (permit_seeklog.go).
func (s *side) applyAll(missed, bs []*readmodel.Batch, res []readmodel.ApplyResult, seeks batchSeeks) {
	all := bs
	if len(missed) > 0 {
		all = append(slices.Clip(missed), bs...)
	}
	out := res
	if len(missed) > 0 {
		out = make([]readmodel.ApplyResult, len(all))
	}
	var sig, rest int
	for _, b := range all {
		n := signalLen(b)
		sig += n
		rest += b.Len() - n
	}
	logs := func(i int) *seekLogs {
		l := seeks[all[i]]
		if l != nil {
			l.start(i < len(missed))
		}
		return l
	}
	// Each lane holds a CPU turn while the Ps are raised (live writes;
	// internal/spareprocs): the main lane gives its turn back before it
	// waits for the signal lane, which may need it.
	if sig < applyStep || rest < applyStep {
		release := spareprocs.Hold()
		for i, b := range all {
			s.seeks = logs(i)
			out[i] = s.apply(b)
		}
		release()
	} else {
		lanes := make([]readmodel.Batch, 2*len(all))
		for i, b := range all {
			lanes[2*i], lanes[2*i+1] = splitSignals(b)
		}
		sigRes := make([]readmodel.ApplyResult, len(all))
		var wg sync.WaitGroup
		wg.Go(func() {
			defer spareprocs.Hold()()
			for i := range all {
				sigRes[i] = s.apply(&lanes[2*i+1])
			}
		})
		release := spareprocs.Hold()
		for i := range all {
			s.seeks = logs(i) // the signal lane writes no permit
			out[i] = s.apply(&lanes[2*i])
		}
		release()
		wg.Wait()
		for i := range out {
			out[i].Applied += sigRes[i].Applied
			out[i].Stale += sigRes[i].Stale
		}
	}
	s.seeks = nil
	if len(missed) > 0 {
		copy(res, out[len(missed):])
	}
}

// signalFamily reports whether documents of kind k go to the signal lane.
func signalFamily(k readmodel.Kind) bool {
	return k == readmodel.KindLead || k == readmodel.KindGeoSignal || k == readmodel.KindCatalog
}

// signalLen is the number of b's documents and deletes of the signal
// families.
func signalLen(b *readmodel.Batch) int {
	n := len(b.Leads) + len(b.GeoSignals) + len(b.Catalog)
	for _, d := range b.Deletes {
		if signalFamily(d.Kind) {
			n++
		}
	}
	return n
}

// splitSignals parts b into everything but the signal families, and the
// signal families (with their deletes). Within each part the order is
// b's.
func splitSignals(b *readmodel.Batch) (rest, sig readmodel.Batch) {
	rest = *b
	rest.Leads, rest.GeoSignals, rest.Catalog = nil, nil, nil
	sig.Leads, sig.GeoSignals, sig.Catalog = b.Leads, b.GeoSignals, b.Catalog
	if len(b.Deletes) > 0 {
		rest.Deletes = nil
		for _, d := range b.Deletes {
			if signalFamily(d.Kind) {
				sig.Deletes = append(sig.Deletes, d)
			} else {
				rest.Deletes = append(rest.Deletes, d)
			}
		}
	}
	return rest, sig
}
