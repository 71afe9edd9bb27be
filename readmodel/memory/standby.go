package memory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/permitd/permitd/readmodel"
)

// The second side. After an Import's Commit (import.go) and a replay's
// end (replay.go) readers have one side and the other is built in the
// background; the standby slot is stale until settle puts the built side
// there, so every write settles first.
//
// StopBuilding abandons that build. A process that is shutting down
// needs only the readers' side, for its last snapshot (Export), and the
// build would share the CPU with it: right after a replay of 1M permits
// the shutdown snapshot took 28 s beside the build. The build stops at
// its next batch (and its geo builders at their next geo); the partial
// side is dropped, never read nor written. A write after it (none
// comes in a shutdown) first builds the second side from the readers'
// side, as a replay's is built, and waits for it.

// standbyBuild is a second side being built in the background
// (Store.standby).
type standbyBuild struct {
	side    *side
	journal []*readmodel.Batch // Apply's batches during the Import
	locGen  uint64             // added to the side's locGen (Commit)
	done    chan struct{}      // closed once side holds the imported batches, or is abandoned
	quit    atomic.Bool        // StopBuilding: stop at the next batch
	// abandoned is set before done is closed (at once after
	// StopBuilding): side is partial or nil, and settle builds another.
	abandoned bool
	// background is the Store's Params.Background, called by begin;
	// end is what it returned, called by finish.
	background func() func()
	end        func()
}

// newStandby starts the second side's build record (under wmu). After
// StopBuilding it is abandoned from the start: nothing is built.
func (s *Store) newStandby(journal []*readmodel.Batch, locGen uint64) *standbyBuild {
	st := &standbyBuild{journal: journal, locGen: locGen, done: make(chan struct{}), background: s.background}
	s.standby = st
	if s.noBuild {
		st.abandoned = true
		close(st.done)
		return st
	}
	st.side = s.bulkSide()
	st.side.quit = &st.quit
	return st
}

// finish ends the background build (its goroutine): ok reports that
// the side is whole. The side is then put in place, unless it was
// abandoned.
func (st *standbyBuild) finish(s *Store, ok bool) {
	if !ok || st.quit.Load() { // also when the stop came as the build ended
		st.abandoned = true
		st.side = nil
	} else {
		// What the resolvers leave to their first two-typo search
		// (resolve.Index.Warm), built here rather than as the
		// locations arrived, when it held back the replay or the load
		// before the readers' side was ready. The readers' side's is
		// warm already (readyForReaders) unless a stop came before it.
		// No write runs before settle, which waits for done: the two
		// are built at once (about 0.1 s each for the national
		// gazetteer).
		var wg sync.WaitGroup
		wg.Go(func() { warm(st.side.resolver) })
		warm(s.sides[s.active.Load()].resolver)
		wg.Wait()
	}
	close(st.done)
	s.wmu.Lock()
	if s.standby == st && !st.abandoned {
		s.settle()
	}
	s.wmu.Unlock()
	if st.end != nil {
		st.end()
	}
}

// begin starts the background build of the second side from a, the
// side readers were just given: the Store's Background hook (Params),
// a first, for its readers (readyForReaders), then the test hook that
// holds the build. finish ends what the hook began, after settle (a
// lean side's indexes are built there).
func (st *standbyBuild) begin(a *side) {
	if st.background != nil {
		st.end = st.background()
	}
	a.readyForReaders(&st.quit)
	if holdStandby != nil {
		holdStandby()
	}
}

// readyForReaders builds, on a side readers were just given (a replay's
// end, an Import's Commit, a snapshot's load), what their first reads
// would build otherwise, before the second side is built from it: the
// lead keys of its large anchors (leadIndex.buildLarge) and what its
// resolver leaves to its first two-typo search (warm). finish warms
// them too, but only once the second side's copy is whole, 35 s after
// a replay of 2M leads (eighty-second session): until then a large
// state's first stats read took 0.1 to 0.7 s, and the first two-typo
// search 73 ms. quit (StopBuilding) stops it.
func (a *side) readyForReaders(quit *atomic.Bool) {
	var wg sync.WaitGroup
	wg.Go(func() { // side by side: warm waits for the late resolver's build (resolver_late.go)
		if !quit.Load() {
			warm(a.resolver)
		}
	})
	a.signals.leads.buildLarge(quit)
	wg.Wait()
}

// warm warms r, when it defers work to its first search
// (resolve.Index.Warm).
func warm(r Resolver) {
	if w, ok := r.(interface{ Warm() }); ok {
		w.Warm()
	}
}

// WarmResolvers builds what the sides' resolvers leave to their first
// two-typo search (resolve.Index.Warm), for a Store filled with Apply
// (serve's embedded feed): a replay's or an Import's second side's build
// does it for theirs. Writes do not wait for it; a resolver's own
// writes (a location's) wait for its part.
func (s *Store) WarmResolvers() {
	s.wmu.Lock()
	rs := []Resolver{s.sides[0].resolver, s.sides[1].resolver}
	s.wmu.Unlock()
	for _, r := range rs {
		warm(r)
	}
}

// StopBuilding abandons the second side being built in the background,
// if any, and any later one, without waiting (see above), and reports
// whether a build was running. Reads and Export are unaffected; a later
// write builds the second side first.
func (s *Store) StopBuilding() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.noBuild = true
	st := s.standby
	if st == nil {
		return false
	}
	st.quit.Store(true)
	select {
	case <-st.done:
		return false // built (settle puts it in place) or abandoned before
	default:
		return true
	}
}

// quitting reports whether d is a second side whose build was abandoned.
func (d *side) quitting() bool { return d.quit != nil && d.quit.Load() }

// settle puts the second side in place once built (under the Store's
// writer lock; it waits for the build). The side then holds what the
// active side holds: the imported batches and the journal. An abandoned
// build is replaced by one from the active side, made here.
func (s *Store) settle() {
	st := s.standby
	if st == nil {
		return
	}
	<-st.done
	s.standby = nil
	d := st.side
	if st.abandoned {
		d = s.sides[s.active.Load()].copySide(s.bulkSide(), nil)
	} else {
		for _, b := range st.journal {
			d.apply(b)
		}
		d.locGen += st.locGen
	}
	d.quit = nil
	i := 1 - s.active.Load()
	s.drain(i)
	s.sides[i] = d
	s.pending = nil
	if a := s.sides[1-i]; a.lean {
		// The readers' side is an Import's or a replay's lean side: the whole
		// one becomes theirs (the same state: no new version), and the
		// lean one, once no reader is left on it, gets its derived
		// indexes (permit_bulk.go).
		s.active.Store(i)
		s.drain(1 - i)
		a.buildLean()
	}
}

var errQuit = errors.New("memory: second side abandoned")

// copySide builds d, a new bulk side, from a's export (a is read only: no
// write changes it meanwhile), with a's counters the stats cache keys
// on. It returns nil when quit is set before the copy is whole.
func (a *side) copySide(d *side, quit *atomic.Bool) *side {
	d.reserve(a.liveCounts()) // its tables and its resolver's index made to size, not grown
	stages := newImportStages(d)
	err := a.export(context.Background(), 4096, func(b readmodel.Batch) error {
		if quit != nil && quit.Load() {
			return errQuit
		}
		stages.add(importBatch{b: &b})
		return nil
	})
	stages.close()
	if err != nil && !errors.Is(err, errQuit) { // export fails only on its context's end or fn's error
		panic("memory: second side: " + err.Error())
	}
	if err != nil || (quit != nil && quit.Load()) {
		return nil
	}
	d.endBulk()
	if quit != nil && quit.Load() {
		return nil
	}
	d.signals.leads.buildLike(a.signals.leads) // the keys a's readers read, and the large ones (lead_bulk.go)
	d.syncVersions(a)
	return d
}
