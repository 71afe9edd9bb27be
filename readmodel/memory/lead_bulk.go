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

// buildTrees ends the deferral, if the index defers: every key's pending
// records go into its trees. Keys are independent, so up to four
// goroutines share them.
func (x *leadIndex) buildTrees() {
	if !x.deferTrees {
		return
	}
	x.deferTrees = false
	var keys []*keyLeads
	for _, a := range x.anchors {
		for _, k := range a.keys {
			if len(k.pend) > 0 {
				keys = append(keys, k)
			}
		}
	}
	shareOut(workersFor(len(keys), parallelKeys), len(keys), func(_, i int) { keys[i].loadPending() })
}

// loadPending sorts k's pending records into its trees and day cells.
func (k *keyLeads) loadPending() {
	items := make([]leadItem, len(k.pend))
	for i, r := range k.pend {
		items[i] = itemOf(r)
	}
	k.days.load(k.pend)
	k.pend = nil
	loadSorted(k.byDate, items, itemDateCmp)
	loadSorted(k.byConf, items, itemConfCmp)
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
