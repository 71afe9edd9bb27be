package indexer

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/permitd/permitd/readmodel"
)

// normNames memoises readmodel.NormName for the names a lead's location
// is normalised from (its city and its anchor's county): a few thousand
// names repeat over every lead, and each normalised one that differs
// from its input ("SEATTLE", "King County") was a new string, 0.6 of an
// ingested event's allocations. A direct-mapped table: a slot holds the
// last name hashed to it, set whole (one pointer), so the partitions'
// decoders on both cores read it without a lock; a collision only costs
// a NormName.
type normNames struct {
	seed  maphash.Seed
	slots [1 << normNameBits]atomic.Pointer[normName]
}

type normName struct{ name, norm string }

const (
	normNameBits = 13 // 8,192 slots, 64 KiB
	maxNormName  = 64 // longer names are normalised each time
)

var leadNames = &normNames{seed: maphash.MakeSeed()}

// of is readmodel.NormName(s).
func (c *normNames) of(s string) string {
	if len(s) > maxNormName {
		return readmodel.NormName(s)
	}
	slot := &c.slots[maphash.String(c.seed, s)>>(64-normNameBits)]
	if e := slot.Load(); e != nil && e.name == s {
		return e.norm
	}
	norm := readmodel.NormName(s)
	if norm != s { // NormName returns s itself, with nothing to keep, when it is normal
		slot.Store(&normName{name: s, norm: norm})
	}
	return norm
}

// anchorLists memoises anchorsOf: a lead's anchors are its anchor
// location's own hierarchy, the same list for every lead anchored there,
// and a new one for each was 0.29 of an ingested event's allocations.
// Direct-mapped by the location's geo_id like normNames; an entry holds
// the five ids its list was made of, so a location whose hierarchy
// changed gets a new list. The lists are shared by the leads: nothing
// writes into a document's GeoIDs (the store copies them), and their
// capacity is their length, so an append copies too.
type anchorLists struct {
	seed  maphash.Seed
	slots [1 << anchorListBits]atomic.Pointer[anchorList]
}

type anchorList struct {
	ids  [5]string // what anchorsOf reads of the location
	list []string
}

const anchorListBits = 14 // 16,384 slots, 128 KiB

var leadAnchors = &anchorLists{seed: maphash.MakeSeed()}

// of is anchorsOf(l).
func (c *anchorLists) of(l readmodel.Location) []string {
	ids := [5]string{l.GeoID, l.JurisdictionGeoID, l.CityGeoID, l.CountyGeoID, l.StateGeoID}
	slot := &c.slots[maphash.String(c.seed, l.GeoID)>>(64-anchorListBits)]
	if e := slot.Load(); e != nil && e.ids == ids {
		return e.list
	}
	list := anchorsOf(l)
	slot.Store(&anchorList{ids: ids, list: list})
	return list
}
