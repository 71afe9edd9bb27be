package resolve

import (
	"strings"
	"testing"
)

// TestCompactOf: a name's compact form is its tokens' texts run
// together, the one token's own text when it has one, in at most one
// allocation.
func TestCompactOf(t *testing.T) {
	for _, name := range []string{"Seattle", "San Luis Obispo", "St. Louis", "Winston-Salem", "Coeur d'Alene", "Lake Forest Park"} {
		toks := tokenize(name)
		var want strings.Builder
		for _, tk := range toks {
			want.WriteString(tk.Text)
		}
		if got := compactOf(toks); got != want.String() {
			t.Fatalf("%q: compact %q, want %q", name, got, want.String())
		}
		allocs := testing.AllocsPerRun(100, func() { _ = compactOf(toks) })
		if limit := map[bool]float64{true: 0, false: 1}[len(toks) == 1]; allocs > limit {
			t.Fatalf("%q (%d tokens): %v allocations, want at most %v", name, len(toks), allocs, limit)
		}
	}
}
