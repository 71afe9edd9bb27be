package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBlockSetMatchesASortedSlice drives a blockSet with random sets,
// loads, deletes and replacements (many on a few days, so ties compare
// ids), with small and large sizes so blocks split and merge, and checks
// after each step every read a page makes (ascend and descend from
// pivots held and not held, the iterator's seeks and steps both ways,
// size, min) against a sorted slice of the same keys.
func TestBlockSetMatchesASortedSlice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ops   int
		ids   int
		bulk  bool // load in order first, as an Import's side does
		check int  // full check every check ops
		drain bool // mostly deletes: blocks fall under a quarter and merge
		of    bool // the loaded keys made in one piece (blockSetOf)
	}{
		{"small", 400, 50, false, 1, false, false},
		{"splits and merges", 6000, 900, false, 97, false, false},
		{"loaded in order then changed", 3000, 2000, true, 53, false, false},
		{"loaded in order then drained", 4000, 2000, true, 31, true, false},
		{"made in one piece then changed", 3000, 2000, true, 53, false, true},
		{"made in one piece then drained", 4000, 2000, true, 31, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			perm := make([]*cpermit, tc.ids)
			for i := range perm {
				perm[i] = &cpermit{id: fmt.Sprintf("s:%05d", r.IntN(100000)), ik: -int32(r.IntN(20))}
				if r.IntN(10) == 0 {
					perm[i].ik = undated
				}
			}
			perm = slices.CompactFunc(perm, func(a, b *cpermit) bool { return a.id == b.id && a.ik == b.ik })
			s := newBlockSet()
			var ref []pkey
			refSet := func(k pkey) {
				i, found := slices.BinarySearchFunc(ref, k, cmpPkey)
				if found {
					ref[i] = k
				} else {
					ref = slices.Insert(ref, i, k)
				}
			}
			if tc.bulk {
				sorted := slices.Clone(perm)
				slices.SortFunc(sorted, permitCmp)
				sorted = slices.CompactFunc(sorted, func(a, b *cpermit) bool { return permitCmp(a, b) == 0 })
				var keys []pkey
				for _, c := range sorted[:len(sorted)*3/4] {
					if tc.of {
						keys = append(keys, keyOf(c))
					} else {
						s.appendSorted(keyOf(c))
					}
					refSet(keyOf(c))
				}
				if tc.of {
					s = blockSetOf(keys)
					clear(keys) // the set holds its own copy
				}
				checkBlockSet(t, s, ref, perm)
			}
			for op := range tc.ops {
				c := perm[r.IntN(len(perm))]
				kind := r.IntN(5)
				if tc.drain && r.IntN(10) > 0 {
					kind = 4
				}
				switch kind {
				case 0, 1:
					s.set(keyOf(c))
					refSet(keyOf(c))
				case 2:
					// a new version of the same key: replaced, not added
					n := &cpermit{id: c.id, ik: c.ik}
					s.load(keyOf(n))
					refSet(keyOf(n))
				default:
					s.delete(keyOf(c))
					if i, found := slices.BinarySearchFunc(ref, keyOf(c), cmpPkey); found {
						ref = slices.Delete(ref, i, i+1)
					}
				}
				if op%tc.check == 0 || op == tc.ops-1 {
					checkBlockSet(t, s, ref, perm)
				}
			}
		})
	}
}

var cmpPkey = cmpByLess(pkeyLess)

func checkBlockSet(t *testing.T, s *blockSet, ref []pkey, pivots []*cpermit) {
	t.Helper()
	if s.len() != len(ref) {
		t.Fatalf("len %d, want %d", s.len(), len(ref))
	}
	var all []pkey
	s.scan(func(k pkey) bool { all = append(all, k); return true })
	if !slices.Equal(all, ref) {
		t.Fatalf("scan %v, want %v", all, ref)
	}
	for i, b := range s.blocks {
		if len(b) == 0 || len(b) > blockMax {
			t.Fatalf("block %d holds %d keys", i, len(b))
		}
	}
	if m, ok := s.min(); ok != (len(ref) > 0) || ok && m != ref[0] {
		t.Fatalf("min %v %v", m, ok)
	}
	for _, c := range append(pivots[:min(len(pivots), 40):min(len(pivots), 40)], &cpermit{ik: minIK}, &cpermit{ik: undated, id: "~"}) {
		k := keyOf(c)
		lo, _ := slices.BinarySearchFunc(ref, k, cmpPkey) // first >= k
		hi := lo                                          // one past the last <= k
		if hi < len(ref) && cmpPkey(ref[hi], k) == 0 {
			hi++
		}
		var up, down []pkey
		s.ascend(k, func(x pkey) bool { up = append(up, x); return len(up) < 300 })
		s.descend(k, func(x pkey) bool { down = append(down, x); return len(down) < 300 })
		wantUp := ref[lo:min(len(ref), lo+300)]
		var wantDown []pkey
		for i := hi - 1; i >= 0 && len(wantDown) < 300; i-- {
			wantDown = append(wantDown, ref[i])
		}
		if !slices.Equal(up, wantUp) || !slices.Equal(down, wantDown) {
			t.Fatalf("from %v: ascend %d keys, want %d; descend %d, want %d", k, len(up), len(wantUp), len(down), len(wantDown))
		}
		// the iterator: seek, then walk both ways
		it := treeSet{s}.iter()
		if ok := it.seekGE(k); ok != (lo < len(ref)) || ok && it.item() != ref[lo].p {
			t.Fatalf("seekGE %v: %v", k, ok)
		}
		if lo < len(ref) {
			for j := lo + 1; j < min(len(ref), lo+140); j++ {
				if !it.next() || it.item() != ref[j].p {
					t.Fatalf("next to %d", j)
				}
			}
		}
		if ok := it.seekLE(k); ok != (hi > 0) || ok && it.item() != ref[hi-1].p {
			t.Fatalf("seekLE %v: %v", k, ok)
		}
		if hi > 0 {
			for j := hi - 2; j >= max(0, hi-140); j-- {
				if !it.prev() || it.item() != ref[j].p {
					t.Fatalf("prev to %d", j)
				}
			}
			if hi-140 <= 0 {
				if it.prev() {
					t.Fatal("prev past the first key")
				}
			}
		}
	}
}
