package memory

import "github.com/permitd/permitd/readmodel"

// Writes during an Export. An Export (a snapshot's) reads the active side
// as one long reader: at 1M permits, 8 to 10 s. A write needs a side no
// reader is on, and after one step the writer wanted the exported side
// back: ingest stood still until the export ended, then applied the
// backlog before anything new was visible.
//
// So while Exports read the active side and none reads the other, the
// writer holds its steps: each is applied to the standby side only (after
// the batches that side missed, as always), and the side is not made
// active. Readers keep the exported state, which is what they would have
// seen anyway, as ingest waited; the Store keeps the held batches. When
// the last Export of the side ends, the standby side becomes active with
// every held batch at once (one new version), and the held batches are
// what the other side missed: the next step applies them there first, as
// it applies any step's missed batches. Ingest goes on during the export;
// what is left for after it is the held batches' second application, on
// one side.
//
// Apply stays exact (each call applies its batch and returns its own
// result); only visibility is deferred, to the export's end, as a replay
// defers it (replay.go). An Import, a replay or the second side's build
// in the background (standby) each have their own order of sides, so a
// step holds only when none is running, and NewImport and BeginReplay
// release what is held first.

// beginExport counts an Export in as a reader of the active side. What
// is held for an earlier Export still reading is released first: an
// Export holds every batch whose Apply returned before it began (a
// snapshot's offsets are taken before its export), and the writer then
// waits for the earlier one, as it did before steps were held.
func (s *Store) beginExport() (*side, *readerCount) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.release()
	d, c := s.enter()
	d.exports++
	return d, c
}

// endExport counts the Export of d out; the last one of the active side
// releases what the writer held meanwhile.
func (s *Store) endExport(d *side, c *readerCount) {
	leave(c)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	d.exports--
	if d.exports == 0 && d == s.sides[s.active.Load()] {
		s.release()
	}
}

// holding reports whether the writer's step is held (under wmu): Exports
// read the active side, none reads the standby side, and no Import,
// replay or background build orders the sides otherwise.
func (s *Store) holding() bool {
	a := s.active.Load()
	return s.sides[a].exports > 0 && s.sides[1-a].exports == 0 && s.standby == nil && s.journal == nil && s.replay == nil
}

// hold applies a step to the standby side only (under wmu) and keeps it
// for the active side.
func (s *Store) hold(group []*applyReq, batches []*readmodel.Batch) {
	standby := s.sides[1-s.active.Load()]
	res := make([]readmodel.ApplyResult, len(batches))
	standby.applyAll(s.pending, batches, res, s.seeks)
	s.pending = nil // the standby side has them now; the active side had them
	s.keepSeeks(s.seeks, nil)
	applied := 0
	for i, r := range group {
		r.res, r.done = res[i], true
		applied += res[i].Applied
	}
	if applied > 0 { // a step that changed nothing is nothing to the other side either
		s.held = append(s.held, batches...)
	}
}

// release makes the standby side, which holds every held step, active,
// and the held steps what the other side missed (under wmu). Nothing
// held: nothing changes.
func (s *Store) release() {
	if len(s.held) == 0 {
		return
	}
	j := 1 - s.active.Load()
	s.pending = s.held // the standby side applied the pending batches before the first held step
	s.held = nil
	s.active.Store(j)
	s.seq.Add(1)
}
