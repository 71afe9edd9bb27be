package memory

import (
	"cmp"
	"slices"
	"sync/atomic"
)

// Lead trees built when first needed. Every key (anchor, signal key)
// starts not built: add appends each record to the key's pend, and its
// first reader (ready), or the first remove from it (build), sorts the
// records once per order and appends them to the empty trees (Load),
// and loads its day cells and roll-ups (lead_days_bulk.go). Only then do
// writes go to the trees, where an insert at a random place of a
// growing tree costs a descent, a shift of half a node, twice per anchor
// of every lead. Most keys (a zip's, a county's) are never read on a
// side, or long after their leads came: a replay, an Import, a second
// side's build and the live path alike write them by appends, and the
// keys a dashboard reads are built once per side and then kept.
// A reader builds under the key's once; the writer builds with no
// reader on the side (store.go), so a key is never written by both.

// deferLeadTrees starts, on an empty side nobody reads yet (a replay's,
// an Import's), the one-by-one lead writes (leadIndex.deferTrees).
func (x *leadIndex) deferLeadTrees() {
	if len(x.anchors) == 0 {
		x.deferTrees = true
	}
}

// leadBuildMin is the number of records from which an anchor's keys are
// all built without waiting for a reader: by the side's writer when an
// add reaches it, and by a second side's build for both sides
// (buildLike). A stats read takes every key of its anchor, so a first
// read never builds more than this many records (at the bundled data's
// WA, building its keys on the first stats read took 67 ms, against
// 0.7 ms for the read). A variable for tests.
var leadBuildMin = 4096

// appendPending adds r to k, one of a's keys, by its slot, if k is not
// built, and reports whether it did (the writer's call). On a side being
// read (a replay's or an Import's side defers every build) an anchor
// that reaches leadBuildMin records has all its keys built then.
func (x *leadIndex) appendPending(a *anchorLeads, k *keyLeads, r *leadRec) bool {
	if k.built.Load() {
		return false
	}
	k.pend = append(k.pend, r.slot)
	if a.recs >= leadBuildMin && !a.eager && !x.deferTrees {
		a.eager = true
		for _, k := range a.keys {
			k.build()
		}
	}
	return true
}

// buildLike builds, on x, a second side's index just copied from a's
// (copySide, or an Import's second build: no reader on x yet), the keys
// that are built on a, the readers' side, so that the keys readers asked
// for so far find themselves built when x becomes theirs (settle); and
// every key of an anchor of leadBuildMin records or more, on x and on a.
// No write changes a before settle; a's readers may build its keys
// meanwhile, each under its once, as a's are built here (ready), and
// set built last, atomically. An anchor's size is read on x.
func (x *leadIndex) buildLike(a *leadIndex) {
	var keys, aKeys []*keyLeads
	for g, xa := range x.anchors {
		aa := a.anchors[g]
		big := xa.recs >= leadBuildMin
		if big {
			xa.eager = true
			if aa != nil {
				aa.eager = true // read by a's writer after settle
				aKeys = append(aKeys, aa.keys...)
			}
		}
		for _, k := range xa.keys {
			if k.built.Load() {
				continue
			}
			if big {
				keys = append(keys, k)
			} else if aa != nil {
				if ak := aa.get(k.key); ak != nil && ak.built.Load() {
					keys = append(keys, k)
				}
			}
		}
	}
	shareOut(workersFor(len(aKeys), parallelKeys), len(aKeys), func(_, i int) {
		aKeys[i].ready()
	})
	shareOut(workersFor(len(keys), parallelKeys), len(keys), func(_, i int) {
		keys[i].build()
	})
}

// buildLarge builds, on a side readers were just given (a replay's end,
// an Import's Commit), every key of its anchors of leadBuildMin records
// or more, the largest anchors first, before the second side is built
// from it. buildLike builds them too, but only once the second side's
// copy is whole; until then a first read of a large anchor built its
// keys under their once. Measured in serve after a replay of 2,039,815
// leads (eighty-second session): the copy took about 35 s, and the
// first stats reads of Florida, Texas and California just after ready
// took 0.23, 0.31 and 0.68 s (0.4 to 20 ms for the next ones). Readers
// that come first still build theirs, under the same once; quit
// (StopBuilding: a shutdown's snapshot needs the CPU) stops it.
func (x *leadIndex) buildLarge(quit *atomic.Bool) {
	var anchors []*anchorLeads
	for _, a := range x.anchors {
		if a.recs >= leadBuildMin {
			anchors = append(anchors, a)
		}
	}
	slices.SortFunc(anchors, func(p, q *anchorLeads) int { return cmp.Compare(q.recs, p.recs) })
	var keys []*keyLeads
	for _, a := range anchors {
		keys = append(keys, a.keys...)
	}
	shareOut(workersFor(len(keys), parallelKeys), len(keys), func(_, i int) {
		if !quit.Load() {
			keys[i].ready()
		}
	})
}

// readersBuild ends the deferral of a side about to be read: its keys,
// none built, are built by their first readers (ready), a remove, or
// never. A state's key holds most of its leads, so a read pays for the
// keys it reads, where building them all took a replay of the real mix
// about a tenth of its time before readers had it.
func (x *leadIndex) readersBuild() {
	x.deferTrees = false
}

// ready builds k's trees and day cells from its pending records once, if
// not built: a reader calls it before it reads k (anchorLeads.selected).
func (k *keyLeads) ready() { k.once.Do(k.loadPending) }

// build is ready for the side's writer (a remove): no reader is on the
// side, and the structures must hold every record before one leaves.
func (k *keyLeads) build() {
	if !k.built.Load() {
		k.once.Do(k.loadPending)
	}
}

// loadPending sorts k's pending records into its trees and day cells,
// unless k is built (a key made built: leadIndex.eager).
func (k *keyLeads) loadPending() {
	if k.built.Load() {
		return
	}
	recs := make([]*leadRec, len(k.pend))
	items := make([]leadItem, len(k.pend))
	for i, slot := range k.pend {
		recs[i] = k.x.recs[slot]
		items[i] = itemOf(recs[i])
	}
	k.days.load(recs)
	k.pend = nil
	k.makeTrees()
	loadSorted(k.byDate, items)
	loadSorted(k.byConf, items)
	k.built.Store(true)
}

// loadSorted sorts items in t's order and builds t, empty, from them.
func loadSorted(t *leadTree, items []leadItem) {
	slices.SortFunc(items, t.cmp)
	t.load(items)
}

// parallelKeys is the number of keys to build from which buildLike
// shares them among goroutines (a variable for tests).
var parallelKeys = 4096
