package indexer

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// TestNormNamesOf holds the memo to readmodel.NormName, from several
// goroutines at once and again once the names are held, and checks that
// a held name is handed out without allocating.
func TestNormNamesOf(t *testing.T) {
	names := []string{"SEATTLE", "seattle", "King County", "St. Paul", "  Winston-Salem ", "", "Cañon City",
		"MUÑOZ", strings.Repeat("Long Name ", 8), "a", "A"}
	for i := range 20000 { // more names than slots: collisions replace each other
		names = append(names, "City "+strings.Repeat("X", i%7)+string(rune('A'+i%26))+string(rune('A'+i/26%26))+string(rune('A'+i/676%26)))
	}
	c := &normNames{seed: leadNames.seed}
	fromGoroutines(names, func(name string) bool {
		if got, want := c.of(name), readmodel.NormName(name); got != want {
			t.Errorf("of(%q) = %q, want %q", name, got, want)
			return false
		}
		return true
	})
	c.of("SEATTLE")
	if n := testing.AllocsPerRun(100, func() { c.of("SEATTLE") }); n != 0 {
		t.Errorf("a held name took %v allocations, want 0", n)
	}
}

// TestAnchorListsOf holds the memo to anchorsOf for locations whose
// hierarchy changes under the same geo_id, from several goroutines, and
// checks that a list is shared while it holds and cannot be appended
// into.
func TestAnchorListsOf(t *testing.T) {
	c := &anchorLists{seed: leadAnchors.seed}
	var locs []readmodel.Location
	for i := range 40000 { // more geo_ids than slots
		id := "g" + strconv.Itoa(i%30000)
		locs = append(locs, readmodel.Location{GeoID: id, JurisdictionGeoID: "jur" + strconv.Itoa(i%7),
			CityGeoID: []string{"", id, "city" + strconv.Itoa(i%11)}[i%3], CountyGeoID: "county" + strconv.Itoa(i%5), StateGeoID: "WA"})
	}
	fromGoroutines(locs, func(l readmodel.Location) bool {
		if got, want := c.of(l), anchorsOf(l); !slices.Equal(got, want) {
			t.Errorf("of(%+v) = %v, want %v", l, got, want)
			return false
		}
		return true
	})
	l := readmodel.Location{GeoID: "gzip", CityGeoID: "gcity", CountyGeoID: "gcounty", StateGeoID: "gstate"}
	first := c.of(l)
	if second := c.of(l); &second[0] != &first[0] {
		t.Error("the same location's list was made again")
	}
	if cap(first) != len(first) {
		t.Errorf("a shared list has room to append into: len %d, cap %d", len(first), cap(first))
	}
	l.CityGeoID = "gother"
	if got := c.of(l); !slices.Equal(got, []string{"gzip", "gother", "gcounty", "gstate"}) {
		t.Errorf("after the location's city changed: %v", got)
	}
}

// fromGoroutines calls check with every item from four goroutines at
// once, each starting a quarter further on, twice (the second time with
// the memo full); a goroutine stops at the first false.
func fromGoroutines[T any](items []T, check func(T) bool) {
	for range 2 {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range items {
					if !check(items[(i+g*len(items)/4)%len(items)]) {
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
