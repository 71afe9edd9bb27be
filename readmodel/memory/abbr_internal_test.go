package memory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAbbreviatedIDsKeepIDOrder: for ids of many groups and shapes (no
// ':', a ':' in the number, numbers longer than 14 bytes, NUL bytes,
// prefixes of one another), any two abbreviations that are both non-zero
// and differ are in their ids' order, and an id's abbreviation never
// changes as more groups are ranked, including after the ranks between
// two groups run out.
func TestAbbreviatedIDsKeepIDOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	groups := []string{"seattle_sdci_building", "seattle_sdci_trade", "synthetic", "a", "ab", "a-b", "b", "", "z\x00"}
	// Groups that each fall between the last two: the ranks between
	// "m" and "n" run out after 16 of them.
	for i := range 20 {
		groups = append(groups, "m"+strings.Repeat("~", i))
	}
	num := func(g string) string {
		switch rng.IntN(8) {
		case 0:
			return fmt.Sprint(rng.IntN(1000))
		case 1:
			return "SYN-7-" + fmt.Sprint(rng.IntN(100000))
		case 2:
			return "BLD" + fmt.Sprint(2020+rng.IntN(5)) + "-" + fmt.Sprintf("%05d", rng.IntN(100000))
		case 3:
			return "x:" + fmt.Sprint(rng.IntN(50)) // a second ':'
		case 4:
			return fmt.Sprint(rng.IntN(100)) + "\x00" + fmt.Sprint(rng.IntN(3))
		case 5:
			return "" // nothing after the ':'
		case 6:
			return "PERMIT-2024-000" + fmt.Sprint(rng.IntN(1000)) // past 14 bytes
		default:
			return fmt.Sprint(rng.IntN(10000000))
		}
	}
	var a abbreviator
	word := map[string]abbrID{}
	var ids []string
	for i := range 6000 {
		var id string
		if rng.IntN(40) == 0 {
			id = fmt.Sprint("nocolon", rng.IntN(100))
		} else {
			g := groups[min(rng.IntN(len(groups)), i/100)] // groups arrive over time
			if rng.IntN(2) == 0 {
				g = groups[3+rng.IntN(6)] // and some mostly
			}
			id = g + ":" + num(g)
		}
		w := a.of(id)
		if prev, ok := word[id]; ok && prev != w {
			t.Fatalf("%q: abbreviation %x, then %x", id, prev, w)
		}
		if !ok(word, id) {
			ids = append(ids, id)
		}
		word[id] = w
	}
	var words, none int
	for _, x := range ids {
		if word[x].none() {
			none++
			continue
		}
		words++
		for _, y := range ids {
			wx, wy := word[x], word[y]
			if wy.none() || wx == wy {
				continue
			}
			if wx.less(wy) != (x < y) {
				t.Fatalf("%q (%x) and %q (%x): words and ids disagree", x, wx, y, wy)
			}
		}
	}
	if words < len(ids)/2 || none == 0 {
		t.Fatalf("%d ids with a word, %d without: the test does not reach both", words, none)
	}
	if w := a.of("m" + strings.Repeat("~", 19) + ":1"); !w.none() {
		t.Fatalf("a group past the ranks between its neighbours has abbreviation %x", w)
	}
}

func ok(m map[string]abbrID, k string) bool { _, found := m[k]; return found }
