package memory

import "testing"

// TestGeoListsFirstBlock: a deferred geo's list takes one allocation
// for its first geoListFirst permits (growing from one, it took four
// for eight), keeps them in the order added, and counts the geo once.
func TestGeoListsFirstBlock(t *testing.T) {
	ps := make([]*cpermit, geoListFirst)
	for i := range ps {
		ps[i] = &cpermit{}
	}
	g := &geoLists{}
	g.add(0, ps[0]) // the lists' own array
	geo := uint32(1)
	allocs := testing.AllocsPerRun(50, func() {
		for _, c := range ps {
			g.add(geo, c)
		}
		geo++
	})
	if allocs != 1 {
		t.Fatalf("%d permits of a new geo took %v allocations, want 1", len(ps), allocs)
	}
	for i, c := range g.lists[1] {
		if c != ps[i] {
			t.Fatalf("permit %d of the geo out of order", i)
		}
	}
	if want := int(geo); g.geos != want {
		t.Fatalf("%d geos counted, want %d", g.geos, want)
	}
}
