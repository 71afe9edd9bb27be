package indexer

import (
	"sync"
	"testing"

	"github.com/permitd/permitd/events"
)

// TestGeoIDsOf holds the memoised ids to events.GeoID, for codes with a
// fixed slot (five digits, two capitals) and without (the map), asked
// for first from several goroutines at once and again after.
func TestGeoIDsOf(t *testing.T) {
	cases := []struct {
		ids   *geoIDs
		codes []string
	}{
		{zipIDs, []string{"00000", "00501", "98117", "99999", "9811", "981170", "9811a", "ABCDE", "", "98 17"}},
		{stateIDs, []string{"AA", "WA", "ZZ", "wa", "W", "WAS", "W1", "[A", "A@"}},
	}
	for _, c := range cases {
		for round := range 2 {
			var wg sync.WaitGroup
			got := make([][]string, 4)
			for g := range got {
				wg.Go(func() {
					for _, code := range c.codes {
						got[g] = append(got[g], c.ids.of(code))
					}
				})
			}
			wg.Wait()
			for g := range got {
				for i, code := range c.codes {
					if want := events.GeoID(c.ids.scope, code); got[g][i] != want {
						t.Fatalf("round %d: %s id of %q = %q, want %q", round, c.ids.scope, code, got[g][i], want)
					}
				}
			}
		}
	}
}

// TestGeoIDSlots checks which codes have a fixed slot, and that no two
// share one.
func TestGeoIDSlots(t *testing.T) {
	for code, want := range map[string]int{"00000": 0, "00501": 501, "98117": 98117, "99999": 99999,
		"9811": -1, "981170": -1, "9811a": -1, "/0000": -1, ":0000": -1, "": -1} {
		if got := zipSlot(code); got != want {
			t.Errorf("zipSlot(%q) = %d, want %d", code, got, want)
		}
	}
	seen := map[int]string{}
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			code := string([]byte{a, b})
			i := stateSlot(code)
			if i < 0 || i >= len(stateFixed) {
				t.Fatalf("stateSlot(%q) = %d", code, i)
			}
			if other, ok := seen[i]; ok {
				t.Fatalf("stateSlot(%q) = stateSlot(%q) = %d", code, other, i)
			}
			seen[i] = code
		}
	}
	for _, code := range []string{"wa", "Wa", "W", "WAS", "@A", "A[", ""} {
		if i := stateSlot(code); i != -1 {
			t.Errorf("stateSlot(%q) = %d, want -1", code, i)
		}
	}
}
