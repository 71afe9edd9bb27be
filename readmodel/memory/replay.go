package memory

// Replay: one side first. A replay into an empty Store (the Kafka
// indexer's replay mode at a start without a snapshot) writes every
// batch to the standby side only, and readers go on seeing the empty
// active side: the read model is not ready before the replay has caught
// up anyway (serve's readiness waits for the consumer). EndReplay makes
// the written side active, the whole replayed state at once, and builds
// the other side in the background from that state, not from the
// replayed batches: the side is exported (Export's batches: permits in
// index order, each id once) into a bulk side as an Import builds one
// (import.go), which at 1M permits takes seconds where applying the
// batches again took as long as the replay. The next write waits for
// it (settle), as after an Import's Commit.
//
// Apply stays exact through a replay: each call applies its batch (the
// group commit and the signal lane of apply.go included) and returns its
// own result; only visibility is deferred, to EndReplay. What it saves is
// the second side's work per batch, and the Store keeps no batch for it.
// So a replay's Apply does not copy the batch's permits and properties
// either (lentBatch, store.go): the side keeps their compact forms only,
// built from the caller's documents while Apply runs.
//
// The replayed side also defers what an Import's side defers: its
// per-geo permit indexes (permit_bulk.go: a permit is appended to its
// geos' lists instead of being inserted into their sets, postings,
// valuation orders and month stats, about half of a permit's write, all
// of it B-tree inserts at random places on the writer's longer lane)
// and its leads' two B-trees per anchor and key (lead_bulk.go).
// EndReplay builds the permit sets, each list sorted once and appended
// (on up to four goroutines). The first write that takes a permit out of
// its geos (a newer version that moves it, a re-link, a delete) ends that
// deferral there, and one that takes a lead out of a key builds that
// key (lead_bulk.go), so the result is the one
// Apply reaches in any case; a log of one version per document, as a
// compacted topic holds, defers both to the end.
//
// And the replayed side is lean, as an Import's first side is
// (permit_bulk.go): readers have it without the permit indexes that only
// speed reads up, and each lead key's trees are built by its first
// reader (lead_bulk.go), on this side and on the second alike; settle,
// once the second side is built whole, makes that one the readers' and
// completes the replayed one's permit indexes. In the real mix's replay (BenchmarkIngestMix) building those at
// EndReplay took 0.6 to 1.1 s of the 5 to 6 s before readers had it.

import "github.com/permitd/permitd/readmodel"

// replayState is a replay in progress (Store.replay, under wmu).
type replayState struct {
	batches int // applied to the building side
}

// BeginReplay starts a replay (see above) and reports whether it did:
// only into an empty Store (no document or tombstone on either side),
// with no Import running or settling and no replay already open.
func (s *Store) BeginReplay() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// The second side of an Import or a replay may still be building
	// (standby). When the state it copies is not empty the answer is no,
	// without waiting for it: a restart from a snapshot starts its
	// consumer (and with nothing to replay is ready) once the first side
	// is built, and its first write waits for the second.
	if s.standby != nil && !s.sides[s.active.Load()].empty() {
		return false
	}
	s.settle()
	s.release() // steps held for an Export (export_hold.go): the Store is not empty
	if s.replay != nil || s.journal != nil || s.pending != nil || !s.sides[0].empty() || !s.sides[1].empty() {
		return false
	}
	// The signal writer (apply.go) opens with the side set up: unlike a
	// step, it does not wait for wmu.
	s.smu.Lock()
	defer s.smu.Unlock()
	s.replay = &replayState{}
	s.replaying.Store(true)
	s.sigOpen, s.sigBatches = true, 0
	d := s.sides[1-s.active.Load()]
	d.deferIndexes()
	d.lean = true   // readers have it sooner; settle completes it (permit_bulk.go)
	d.quiet = true  // no reader sees it before EndReplay: its writes do not yield
	d.resolveLate() // the place index built from the replayed locations at EndReplay (resolver_late.go)
	return true
}

// ReserveReplay sizes the tables of an open replay's side for counts
// documents of each kind (serve: the messages the replay will read,
// indexer/kafka Params.Backlog), so that they are not grown, each
// doubling hashing every id again, while the replay writes them. Only a
// table still empty is sized; a count too high costs memory only. It
// reports whether a replay was open.
func (s *Store) ReserveReplay(counts map[readmodel.Kind]int64) bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.replay == nil {
		return false
	}
	s.smu.Lock() // the signal writer's tables too
	defer s.smu.Unlock()
	s.sides[1-s.active.Load()].reserve(counts)
	return true
}

// EndReplay ends an open replay (else it does nothing): the replayed
// state becomes the readers' as one new version, and the other side is
// built in the background (Settle waits for it). It returns the number
// of batches the replay wrote.
func (s *Store) EndReplay() int {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	r := s.replay
	if r == nil {
		return 0
	}
	s.replay = nil
	s.replaying.Store(false)
	// The signal writer's last group is done once smu is ours; the calls
	// still waiting for it go through a step from now on (apply.go).
	s.smu.Lock()
	s.sigOpen = false
	r.batches += s.sigBatches
	s.smu.Unlock()
	j := 1 - s.active.Load()
	a := s.sides[j]
	a.quiet = false
	a.startResolver() // in the background: place searches wait for it, the replay does not
	a.buildDeferred()
	if r.batches == 0 {
		return 0 // nothing changed: both sides are still empty
	}
	// The stats cache keys on locGen: the replayed state must not meet
	// answers computed on the empty one (import.go's Commit does the
	// same).
	a.locGen += max(s.sides[0].locGen, s.sides[1].locGen) + 1
	s.pending = nil
	s.active.Store(j)
	s.seq.Add(1)
	st := s.newStandby(nil, 0)
	if !st.abandoned { // else StopBuilding: the next write builds it (standby.go)
		go func() {
			// a is active now and read by readers only: no write
			// changes it before settle has this build in place.
			st.begin(a)
			st.finish(s, a.copySide(st.side, &st.quit) != nil)
		}()
	}
	return r.batches
}

// empty reports whether the side holds no document and no tombstone.
func (d *side) empty() bool {
	return len(d.locations.rows) == 0 && len(d.permits.rows) == 0 && len(d.props.m) == 0 &&
		len(d.geoSignals.rows) == 0 && len(d.leads.rows) == 0 && len(d.catalog.rows) == 0
}

// syncVersions gives d, built from a's export, a's counters the stats
// cache keys on (statscache.go): locGen and every lead anchor's version.
// The two sides hold the same state and must name it alike, or a key
// one side computed could name another state on the other.
func (d *side) syncVersions(a *side) {
	d.locGen = a.locGen
	dx, ax := d.signals.leads, a.signals.leads
	for g, aa := range ax.anchors {
		da := dx.anchors[g]
		if da == nil { // every lead of g is gone: a still counts its writes
			da = &anchorLeads{}
			dx.anchors[g] = da
		}
		da.version = aa.version
	}
}
