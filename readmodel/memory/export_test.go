package memory

// LiveTexts is the number of interned descriptions and permit numbers of
// the active side.
func (s *Store) LiveTexts() int {
	n, _ := read(s, func(d *side) (int, error) { return d.pi.texts.live(), nil })
	return n
}

// StatsCacheCounts reports the stats cache's hits, misses and entries.
func (s *Store) StatsCacheCounts() (hits, misses int64, size int) { return s.stats.counts() }

// SetRollMin sets the lead count from which a roll-up keeps its
// confidence tree, for stores made afterwards; it returns the undo.
func SetRollMin(n int64) func() {
	old := rollMin
	rollMin = n
	return func() { rollMin = old }
}

// SetWholeTexts sets the export scan's choice of text copy (permit_scan.go)
// until the returned func restores it.
func SetWholeTexts(n int) func() {
	old := wholeTexts
	wholeTexts = n
	return func() { wholeTexts = old }
}

// SetParallelGeos sets the number of geos from which an Import's bulk
// build runs builders side by side (permit_bulk.go), until the returned
// func restores it.
func SetParallelGeos(n int) func() {
	old := parallelGeos
	parallelGeos = n
	return func() { parallelGeos = old }
}

// SetPostingMin sets the permit count from which a geo keeps filter
// postings (permit_filters.go) until the returned func restores it.
func SetPostingMin(n int) func() {
	old := postingMin
	postingMin = n
	return func() { postingMin = old }
}

// SetDenseShare sets the share above which a filter posting is dense
// (permit_dense.go; 0: none is) until the returned func restores it.
func SetDenseShare(n int) func() {
	old := denseShare
	denseShare = n
	return func() { denseShare = old }
}

// SetGroupMin sets the permit count from which a description's permits
// are grouped in the text index (permit_text.go) until the returned func
// restores it.
func SetGroupMin(n int) func() {
	old := groupMin
	groupMin = n
	return func() { groupMin = old }
}

// TextGroups is the number of description groups of the text index and
// the number of words with a posting (permit_text.go).
func (s *Store) TextGroups() (groups, words int) {
	type gw struct{ g, w int }
	r, _ := read(s, func(d *side) (gw, error) { return gw{len(d.pf.text.groups), len(d.pf.text.postings)}, nil })
	return r.g, r.w
}

// ErrScanEnded is what a permit scan's Next answers after its last page.
var ErrScanEnded = errScanEnded

// ReplayDefersGeoIndexes reports whether an open replay's side still
// defers its per-geo permit indexes (replay.go).
func (s *Store) ReplayDefersGeoIndexes() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.replay != nil && s.sides[1-s.active.Load()].deferGeo
}

// ReplayDefersLeadTrees reports whether an open replay's side still
// defers its leads' trees (lead_bulk.go).
func (s *Store) ReplayDefersLeadTrees() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.replay != nil && s.sides[1-s.active.Load()].signals.leads.deferTrees
}

// LeadKeysLeft counts the lead keys of the readers' side and of the
// other one that are not built yet (lead_bulk.go). Call it with no read
// running.
func (s *Store) LeadKeysLeft() (active, standby int) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	left := func(d *side) (n int) {
		for _, a := range d.signals.leads.anchors {
			for _, k := range a.keys {
				if !k.built.Load() {
					n++
				}
			}
		}
		return n
	}
	a := s.active.Load()
	return left(s.sides[a]), left(s.sides[1-a])
}

// BuildLeadKeysEagerly makes s, new and unwritten, build every lead key
// as it is made, as writes did before keys waited for their first
// reader (lead_bulk.go): a store to compare the built-on-read answers
// with.
func (s *Store) BuildLeadKeysEagerly() {
	for _, d := range s.sides {
		d.signals.leads.eager = true
	}
}

// LeadKeyCount is the number of lead keys of the readers' side.
func (s *Store) LeadKeyCount() (n int) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, a := range s.sides[s.active.Load()].signals.leads.anchors {
		n += len(a.keys)
	}
	return n
}

// SetLeadBuildMin sets the pending record count from which a lead key
// is built without a reader (lead_bulk.go); it returns the undo.
func SetLeadBuildMin(n int) func() {
	old := leadBuildMin
	leadBuildMin = n
	return func() { leadBuildMin = old }
}

// SetParallelKeys sets the key count from which buildLike and buildTrees
// shares the keys among goroutines; it returns the undo.
func SetParallelKeys(n int) func() {
	old := parallelKeys
	parallelKeys = n
	return func() { parallelKeys = old }
}

// HoldStandby makes a second side built in the background (an Import's,
// a replay's) wait for fn before it is built, until the returned func
// restores the default.
func HoldStandby(fn func()) func() {
	holdStandby = fn
	return func() { holdStandby = nil }
}

// SecondSideBuilding reports whether a second side is being built in the
// background (standby.go), without waiting for it.
func (s *Store) SecondSideBuilding() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if st := s.standby; st != nil {
		select {
		case <-st.done:
		default:
			return true
		}
	}
	return false
}

// SecondSidePending reports whether a second side built in the
// background is not yet in place (settle has not taken it).
func (s *Store) SecondSidePending() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.standby != nil
}

// WaitSecondSide waits for the second side's background build to end, if
// one runs or ran, and reports whether it was abandoned (StopBuilding).
// It does not put the side in place.
func (s *Store) WaitSecondSide() (abandoned bool) {
	s.wmu.Lock()
	st := s.standby
	s.wmu.Unlock()
	if st == nil {
		return false
	}
	<-st.done
	return st.abandoned
}

// SidesLean reports whether the readers' side and the other one are lean
// (an Import's first side before settle: permit_bulk.go), and whether each
// holds any derived index (postings, valuation orders, month stats).
func (s *Store) SidesLean() (active, standby, activeDerived, standbyDerived bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	a := s.active.Load()
	derived := func(d *side) bool {
		return d.pf.postings.len()+len(d.pf.byValue)+len(d.pf.posted)+len(d.pf.months) > 0
	}
	return s.sides[a].lean, s.sides[1-a].lean, derived(s.sides[a]), derived(s.sides[1-a])
}

// buildTrees builds every lead key not built yet (lead_bulk.go), up to
// four goroutines sharing them (keys are independent), and ends the
// deferral: the tests' way to compare built structures. Call it with no
// reader on the side.
func (x *leadIndex) buildTrees() {
	x.deferTrees = false
	var keys []*keyLeads
	for _, a := range x.anchors {
		for _, k := range a.keys {
			if !k.built.Load() {
				keys = append(keys, k)
			}
		}
	}
	shareOut(workersFor(len(keys), parallelKeys), len(keys), func(_, i int) {
		keys[i].build()
	})
}
