package memory

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestLeadRecordsFromBlocks: the records of new leads come from blocks
// (consecutive in memory), a deleted lead's record is emptied at once
// (it holds no document) and the next new lead takes it with its slot,
// and every live record is found in its slot.
func TestLeadRecordsFromBlocks(t *testing.T) {
	s := newSide(nil)
	x := s.signals.leads
	lead := func(i int, version int64) readmodel.Lead {
		return readmodel.Lead{LeadID: fmt.Sprintf("lead_%03d", i), SignalKey: "roof", Version: version,
			EventDateUsed: "2024-03-01", GeoIDs: []string{"us-wa"}}
	}
	for i := range 40 {
		require.True(t, s.putLead(lead(i, 1)))
	}
	rec := func(i int) *leadRec { return s.leads.rows[fmt.Sprintf("lead_%03d", i)].doc }
	size := unsafe.Sizeof(leadRec{})
	adjacent := 0
	for i := 1; i < 40; i++ {
		if uintptr(unsafe.Pointer(rec(i))) == uintptr(unsafe.Pointer(rec(i-1)))+size {
			adjacent++
		}
	}
	require.GreaterOrEqual(t, adjacent, 30, "records of consecutive new leads side by side in a block")

	gone := rec(7)
	slot := gone.slot
	require.True(t, s.delLead("lead_007", 2))
	require.Equal(t, leadRec{slot: slot}, *gone, "a dropped record keeps no document")
	require.Nil(t, x.recs[slot])

	require.True(t, s.putLead(lead(100, 1)))
	require.Same(t, gone, rec(100), "the next new lead takes the dropped record")
	require.Equal(t, slot, rec(100).slot)
	require.Equal(t, "lead_100", rec(100).lead.LeadID)
	for i := range 40 {
		if i != 7 {
			require.Same(t, rec(i), x.recs[rec(i).slot], "lead %d", i)
		}
	}
	page, err := x.page(readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("us-wa")}, Sort: readmodel.SortEventDateDesc, Limit: 100})
	require.NoError(t, err)
	require.Len(t, page, 40)
}

// TestLeadKeysFromBlocks: the keys an anchor makes come from blocks
// (consecutive in memory), each its own, found by its key.
func TestLeadKeysFromBlocks(t *testing.T) {
	s := newSide(nil)
	x := s.signals.leads
	for i := range 30 {
		require.True(t, s.putLead(readmodel.Lead{LeadID: fmt.Sprintf("lead_%03d", i), SignalKey: fmt.Sprintf("key_%02d", i),
			Version: 1, EventDateUsed: "2024-03-01", GeoIDs: []string{"us-wa"}}))
	}
	a := x.anchors["us-wa"]
	require.Len(t, a.keys, 30)
	size := unsafe.Sizeof(keyLeads{})
	adjacent := 0
	for i := 1; i < 30; i++ {
		k, prev := a.get(fmt.Sprintf("key_%02d", i)), a.get(fmt.Sprintf("key_%02d", i-1))
		require.Equal(t, fmt.Sprintf("key_%02d", i), k.key)
		require.Len(t, k.pend, 1)
		if uintptr(unsafe.Pointer(k)) == uintptr(unsafe.Pointer(prev))+size {
			adjacent++
		}
	}
	require.GreaterOrEqual(t, adjacent, 20, "keys made one after another side by side in a block")
}

// TestAnchorKeyListsFirstRoom: an anchor's key lists are made with room
// for anchorKeysFirst keys, so its first keys are inserted in place, in
// order.
func TestAnchorKeyListsFirstRoom(t *testing.T) {
	s := newSide(nil)
	var keys0 **keyLeads
	var ids0 *uint32
	for i := range anchorKeysFirst {
		require.True(t, s.putLead(readmodel.Lead{LeadID: fmt.Sprintf("lead_%03d", i), SignalKey: fmt.Sprintf("key_%02d", anchorKeysFirst-i),
			Version: 1, EventDateUsed: "2024-03-01", GeoIDs: []string{"us-wa"}}))
		a := s.signals.leads.anchors["us-wa"]
		if i == 0 {
			keys0, ids0 = unsafe.SliceData(a.keys), unsafe.SliceData(a.ids)
		}
		require.Same(t, keys0, unsafe.SliceData(a.keys), "key %d: the keys list moved", i)
		require.Same(t, ids0, unsafe.SliceData(a.ids), "key %d: the ids list moved", i)
		require.True(t, slices.IsSortedFunc(a.keys, func(p, q *keyLeads) int { return strings.Compare(p.key, q.key) }))
		for j, k := range a.keys {
			require.Equal(t, s.signals.leads.names.id(k.key), a.ids[j])
		}
	}
}

// TestLeadAnchorsFoundByAddress: once the index holds cacheFrom anchors,
// a lead's geo_ids find their anchors by address first (leadIndex.near).
// A geo_id with the same bytes at another address and an anchor made
// after a miss find their own anchor, and the leads written through the
// cache are where the map says.
func TestLeadAnchorsFoundByAddress(t *testing.T) {
	s := newSide(nil)
	x := s.signals.leads
	n := cacheFrom + 500
	geo := make([]string, n)
	for i := range geo {
		geo[i] = fmt.Sprintf("g%05d", i)
	}
	put := func(id string, geoIDs ...string) {
		require.True(t, s.putLead(readmodel.Lead{LeadID: id, SignalKey: "roof", Version: 1, EventDateUsed: "2024-03-01", GeoIDs: geoIDs}))
	}
	for i := range cacheFrom {
		put(fmt.Sprintf("lead_a%05d", i), geo[i])
	}
	require.Nil(t, x.near, "no cache under cacheFrom anchors")
	for i := cacheFrom; i < n; i++ { // the cache is made by the first of these
		put(fmt.Sprintf("lead_a%05d", i), geo[i], geo[i%7])
	}
	require.NotNil(t, x.near)
	for i, g := range geo {
		require.Same(t, x.anchors[g], x.anchor(g), "geo %d by its own string", i)
		require.Same(t, x.anchors[g], x.anchor(strings.Clone(g)), "geo %d by a copy", i)
	}
	require.Nil(t, x.anchor("g99999"))
	put("lead_new", "g99999") // made after its miss
	require.Same(t, x.anchors["g99999"], x.anchor("g99999"))
	require.Equal(t, 1, x.anchors["g99999"].recs)
	for i := range 7 { // each leads of its own and those naming it second
		want := 1
		for j := cacheFrom; j < n; j++ {
			if j%7 == i {
				want++
			}
		}
		require.Equal(t, want, x.anchors[geo[i]].recs, "anchor %d", i)
	}
	require.Equal(t, n+1, len(x.anchors))
}
