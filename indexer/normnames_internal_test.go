package indexer

import (
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
	for round := range 2 {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range names {
					name := names[(i+g*len(names)/4)%len(names)]
					if got, want := c.of(name), readmodel.NormName(name); got != want {
						t.Errorf("round %d: of(%q) = %q, want %q", round, name, got, want)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	c.of("SEATTLE")
	if n := testing.AllocsPerRun(100, func() { c.of("SEATTLE") }); n != 0 {
		t.Errorf("a held name took %v allocations, want 0", n)
	}
}
