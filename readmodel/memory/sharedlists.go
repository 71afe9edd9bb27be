package memory

import (
	"hash/maphash"
	"slices"
	"sync/atomic"

	"github.com/permitd/permitd/readmodel"
)

// sharedLists hands out one copy of each recurring string list of the
// leads a store takes (cloneBatch): their anchors (a location's
// hierarchy, the same for every lead anchored there) and their reason
// codes (a few combinations). A copy per lead was about 0.7 of an
// ingested event's allocations, and as many small arrays for the
// collector to mark. The store never writes into a document's lists, and
// a shared one's capacity is its length, so an append copies.
// Direct-mapped by the list's contents, each slot one atomic pointer, as
// the Apply callers clone their batches concurrently; a collision only
// costs a copy, and a list is compared element by element before it is
// shared.
type sharedLists struct {
	seed  maphash.Seed
	slots [1 << sharedListBits]atomic.Pointer[sharedList]
}

type sharedList struct{ list []string }

const (
	sharedListBits = 14 // 16,384 slots, 128 KiB
	maxSharedList  = 8  // longer lists are copied each time
)

var leadLists = &sharedLists{seed: maphash.MakeSeed()}

// of returns a list equal to s that the caller may keep, nil when s is
// empty (as readmodel's Clone does).
func (m *sharedLists) of(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	if len(s) > maxSharedList {
		return slices.Clip(slices.Clone(s))
	}
	h := uint64(len(s))
	for _, e := range s {
		h = (h ^ maphash.String(m.seed, e)) * 0x9e3779b97f4a7c15
	}
	slot := &m.slots[h>>(64-sharedListBits)]
	if e := slot.Load(); e != nil && slices.Equal(e.list, s) {
		return e.list
	}
	c := slices.Clip(slices.Clone(s))
	slot.Store(&sharedList{list: c})
	return c
}

// cloneLead is l.Clone() with its lists from leadLists (Clone copies the
// rest, whatever a lead comes to hold).
func cloneLead(l readmodel.Lead) readmodel.Lead {
	codes, anchors := l.ReasonCodes, l.GeoIDs
	l.ReasonCodes, l.GeoIDs = nil, nil
	l = l.Clone()
	l.ReasonCodes, l.GeoIDs = leadLists.of(codes), leadLists.of(anchors)
	return l
}
