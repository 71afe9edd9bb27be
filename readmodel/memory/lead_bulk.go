package memory

import (
	"slices"

	"github.com/tidwall/btree"
)

// Deferred lead trees. A side that nobody reads while it is written (a
// replay's, replay.go; an Import's, import.go) defers its leads' two
// B-trees per (anchor, key): add appends each record to the key's pend,
// and buildTrees sorts each key's records once per order and appends
// them to the empty trees (Load), where an insert at a random place of
// a growing tree cost a descent, a shift of half a node and the
// collector's write barriers, twice per anchor of every lead. The day
// cells and roll-ups wait with them (lead_days_bulk.go). The first
// remove ends the deferral (the record must leave the trees it is in,
// and a moved record is reused at once), so the trees are the ones add
// builds in any case.

// deferLeadTrees starts the deferral on an empty side's lead index.
func (x *leadIndex) deferLeadTrees() {
	if len(x.anchors) == 0 {
		x.deferTrees = true
	}
}

// buildTrees ends the deferral, if the index defers, and builds what a
// lean side left to its readers (readersBuild): every key's pending
// records go into its trees. Keys are independent, so up to four
// goroutines share them. The side's writer calls it with no reader on
// the side.
func (x *leadIndex) buildTrees() {
	if !x.deferTrees && !x.lazy {
		return
	}
	x.deferTrees, x.lazy = false, false
	var keys []*keyLeads
	for _, a := range x.anchors {
		for _, k := range a.keys {
			if len(k.pend) > 0 || k.lazy {
				keys = append(keys, k)
			}
		}
	}
	shareOut(workersFor(len(keys), parallelKeys), len(keys), func(_, i int) {
		keys[i].once.Do(keys[i].loadPending) // a no-op for a key a reader built
	})
	for _, k := range keys {
		k.lazy = false
	}
}

// readersBuild ends the deferral of a lean side (side.lean) without
// building the trees: each key with pending records builds its own on
// its first read (keyLeads.ready), and buildTrees the rest, once settle
// has made the whole side the readers' (permit_bulk.go's buildLean). A
// state's key holds most of its leads, so a read pays for the keys it
// reads, where building them all took a replay of the real mix about a
// tenth of its time before readers had it. The writer calls it before
// readers have the side; the next write to the side builds every key
// first (buildTrees).
func (x *leadIndex) readersBuild() {
	if !x.deferTrees {
		return
	}
	x.deferTrees = false
	for _, a := range x.anchors {
		for _, k := range a.keys {
			if len(k.pend) > 0 {
				k.lazy, x.lazy = true, true
			}
		}
	}
}

// ready builds k's trees and day cells from its pending records once, if
// they were left to its readers (readersBuild): a reader calls it before
// it reads k (anchorLeads.selected), and buildTrees for those no reader
// built.
func (k *keyLeads) ready() {
	if k.lazy {
		k.once.Do(k.loadPending)
	}
}

// loadPending sorts k's pending records into its trees and day cells.
func (k *keyLeads) loadPending() {
	items := make([]leadItem, len(k.pend))
	for i, r := range k.pend {
		items[i] = itemOf(r)
	}
	k.days.load(k.pend)
	k.pend = nil
	loadSorted(k.byDate, items, k.x.itemDateCmp)
	loadSorted(k.byConf, items, k.x.itemConfCmp)
}

// loadSorted sorts items by cmp (the tree's order) and appends them to t.
func loadSorted(t *btree.BTreeG[leadItem], items []leadItem, cmp func(a, b leadItem) int) {
	slices.SortFunc(items, cmp)
	for _, it := range items {
		t.Load(it)
	}
}

// parallelKeys is the number of pending keys from which buildTrees
// shares them among goroutines (a variable for tests).
var parallelKeys = 4096
