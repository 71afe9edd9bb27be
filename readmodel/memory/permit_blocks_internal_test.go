package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBlockSetMatchesASortedSlice drives a blockSet (and beside it a
// slotKeys list, read as a sliceSet) with random sets,
// loads, deletes and replacements (many on a few days, so ties compare
// ids), with small and large sizes so blocks split and merge, and checks
// after each step every read a page makes (ascend and descend from
// pivots held and not held, the iterator's seeks and steps both ways,
// size, min) against a sorted slice of the same keys.
func TestBlockSetMatchesASortedSlice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ops    int
		ids    int
		bulk   bool // load in order first, as an Import's side does
		check  int  // full check every check ops
		drain  bool // mostly deletes: blocks fall under a quarter and merge
		of     bool // the loaded keys made in one piece (blockSetOf)
		refill bool // drained for half the ops, then mostly sets: splits take freed pool places again
	}{
		{"small", 400, 50, false, 1, false, false, false},
		{"splits and merges", 6000, 900, false, 97, false, false, false},
		{"loaded in order then changed", 3000, 2000, true, 53, false, false, false},
		{"loaded in order then drained", 4000, 2000, true, 31, true, false, false},
		{"made in one piece then changed", 3000, 2000, true, 53, false, true, false},
		{"made in one piece then drained", 4000, 2000, true, 31, true, true, false},
		{"made in one piece, drained, refilled", 8000, 2000, true, 31, true, true, true},
		{"loaded in order, drained, refilled", 8000, 2000, true, 31, true, false, true},
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
			slab := newPermitSlab()
			held := map[string]bool{} // ids in the set
			for i, c := range perm {
				if i > 0 && perm[i-1].id == c.id {
					c.id += "x" // one slot per id: keep ids distinct
				}
				slab.take(c)
			}
			s := newBlockSet(slab)
			var l slotKeys // the same permits as a slotKeys list, beside the blockSet
			var ref []*cpermit
			refSet := func(c *cpermit) {
				held[c.id] = true
				i, found := slices.BinarySearchFunc(ref, c, permitCmp)
				if found {
					ref[i] = c
				} else {
					ref = slices.Insert(ref, i, c)
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
						s.appendSorted(c)
					}
					l = insertSorted(slab, l, c)
					refSet(c)
				}
				if tc.of {
					s = blockSetOf(slab, keys)
					clear(keys) // the set holds its own copy
				}
				checkBlockSet(t, s, ref, perm)
			}
			for op := range tc.ops {
				pi := r.IntN(len(perm))
				c := perm[pi]
				kind := r.IntN(5)
				if tc.drain && r.IntN(10) > 0 {
					kind = 4
					if tc.refill && op >= tc.ops/2 {
						kind = 0
					}
				}
				switch kind {
				case 0, 1:
					s.set(c)
					l = insertSorted(slab, l, c)
					refSet(c)
				case 2:
					// a new version of the same permit (its slot): replaced, not added
					n := &cpermit{id: c.id, ik: c.ik, slot: c.slot}
					slab.replace(n)
					perm[pi] = n
					if held[c.id] {
						if i, found := slices.BinarySearchFunc(ref, c, permitCmp); found {
							ref[i] = n
						}
					}
					s.load(n)
					l = insertSorted(slab, l, n)
					refSet(n)
				default:
					s.delete(c)
					l = removeSorted(slab, l, c)
					if i, found := slices.BinarySearchFunc(ref, c, permitCmp); found {
						ref = slices.Delete(ref, i, i+1)
						delete(held, c.id)
					}
				}
				if op%tc.check == 0 || op == tc.ops-1 {
					checkBlockSet(t, s, ref, perm)
					checkOrderedSet(t, sliceSet{l, slab}, ref, perm)
				}
			}
		})
	}
}

func checkBlockSet(t *testing.T, s *blockSet, ref []*cpermit, pivots []*cpermit) {
	t.Helper()
	if s.len() != len(ref) {
		t.Fatalf("len %d, want %d", s.len(), len(ref))
	}
	var all []*cpermit
	s.scan(func(k pkey) bool {
		c := s.permit(k)
		if k.ik != c.ik {
			t.Fatalf("key %v names %s of ik %d", k, c.id, c.ik)
		}
		all = append(all, c)
		return true
	})
	if !slices.Equal(all, ref) {
		t.Fatalf("scan %d permits, want %d", len(all), len(ref))
	}
	if len(s.last) != s.nblocks() {
		t.Fatalf("%d last keys for %d blocks", len(s.last), s.nblocks())
	}
	for i := range s.nblocks() {
		b := s.block(i)
		if len(b) == 0 || len(b) > blockMax {
			t.Fatalf("block %d holds %d keys", i, len(b))
		}
		if s.last[i] != b[len(b)-1] {
			t.Fatalf("block %d: last key %v, want %v", i, s.last[i], b[len(b)-1])
		}
	}
	// Every pool place is in the order once or free once, and a free
	// place holds no block.
	seen := make([]int, len(s.pool))
	for _, at := range s.order {
		seen[at]++
	}
	for _, at := range s.free {
		if s.pool[at] != nil {
			t.Fatalf("free place %d holds a block", at)
		}
		seen[at] += 2
	}
	for at, n := range seen {
		if n != 1 && n != 2 {
			t.Fatalf("pool place %d: in the order or free list %d times (1: ordered, 2: free)", at, n)
		}
	}
	checkOrderedSet(t, treeSet{s}, ref, pivots)
}

// checkOrderedSet checks the reads of an ordered set (a treeSet, a
// sliceSet) against ref, its permits in order.
func checkOrderedSet(t *testing.T, s iterable, ref []*cpermit, pivots []*cpermit) {
	t.Helper()
	if s.size() != len(ref) {
		t.Fatalf("size %d, want %d", s.size(), len(ref))
	}
	if m, ok := s.first(); ok != (len(ref) > 0) || ok && m != ref[0] {
		t.Fatalf("first %v %v", m, ok)
	}
	// Pivots: stored permits (slots) and ones that are not (slot 0, as a
	// page's cursor), on and between the keys.
	for _, c := range append(pivots[:min(len(pivots), 40):min(len(pivots), 40)], &cpermit{ik: minIK}, &cpermit{ik: undated, id: "~"}, &cpermit{ik: pivots[0].ik, id: pivots[0].id}, &cpermit{ik: pivots[1].ik, id: pivots[1].id + "0"}) {
		lo, _ := slices.BinarySearchFunc(ref, c, permitCmp) // first >= c
		hi := lo                                            // one past the last <= c
		if hi < len(ref) && permitCmp(ref[hi], c) == 0 {
			hi++
		}
		var up, down []*cpermit
		s.ascend(c, func(x *cpermit) bool { up = append(up, x); return len(up) < 300 })
		s.descend(c, func(x *cpermit) bool { down = append(down, x); return len(down) < 300 })
		wantUp := ref[lo:min(len(ref), lo+300)]
		var wantDown []*cpermit
		for i := hi - 1; i >= 0 && len(wantDown) < 300; i-- {
			wantDown = append(wantDown, ref[i])
		}
		if !slices.Equal(up, wantUp) || !slices.Equal(down, wantDown) {
			t.Fatalf("from %s %d: ascend %d permits, want %d; descend %d, want %d", c.id, c.ik, len(up), len(wantUp), len(down), len(wantDown))
		}
		// the iterator: seek, then walk both ways
		it := s.iter()
		if ok := it.seekGE(c); ok != (lo < len(ref)) || ok && it.item() != ref[lo] {
			t.Fatalf("seekGE %s: %v", c.id, ok)
		}
		if lo < len(ref) {
			for j := lo + 1; j < min(len(ref), lo+140); j++ {
				if !it.next() || it.item() != ref[j] {
					t.Fatalf("next to %d", j)
				}
			}
		}
		if ok := it.seekLE(c); ok != (hi > 0) || ok && it.item() != ref[hi-1] {
			t.Fatalf("seekLE %s: %v", c.id, ok)
		}
		if hi > 0 {
			for j := hi - 2; j >= max(0, hi-140); j-- {
				if !it.prev() || it.item() != ref[j] {
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

// TestPermitSlabGivesEachPermitOneSlot: slots are distinct and never 0,
// a new version keeps its permit's slot, a deleted permit's slot is
// given again, and permits stay found as the directory grows past its
// first chunks.
func TestPermitSlabGivesEachPermitOneSlot(t *testing.T) {
	s := newPermitSlab()
	n := 5*slabSize + 17
	ps := make([]*cpermit, n)
	seen := map[uint32]bool{}
	for i := range ps {
		ps[i] = &cpermit{id: fmt.Sprint(i)}
		s.take(ps[i])
		if ps[i].slot == 0 || seen[ps[i].slot] {
			t.Fatalf("permit %d: slot %d given twice or 0", i, ps[i].slot)
		}
		seen[ps[i].slot] = true
	}
	for i, c := range ps {
		if s.at(c.slot) != c {
			t.Fatalf("permit %d not at its slot", i)
		}
	}
	v2 := &cpermit{id: ps[3].id, slot: ps[3].slot}
	s.replace(v2)
	if s.at(v2.slot) != v2 {
		t.Fatal("a new version does not take its permit's slot")
	}
	s.release(ps[9])
	if s.at(ps[9].slot) != nil {
		t.Fatal("a released slot still names its permit")
	}
	again := &cpermit{id: "new"}
	s.take(again)
	if again.slot != ps[9].slot {
		t.Fatalf("a released slot is not given again: %d, want %d", again.slot, ps[9].slot)
	}
}

// TestPermitSlabConcurrentReadsBesideTakes: as in an Import's stages, a
// reader reads the slots handed to it while the writer gives more,
// across new chunks and directory growth (make test runs it under
// -race).
func TestPermitSlabConcurrentReadsBesideTakes(t *testing.T) {
	s := newPermitSlab()
	handed := make(chan []*cpermit, 4)
	done := make(chan error)
	go func() {
		var all []*cpermit
		for batch := range handed {
			all = append(all, batch...)
			for _, c := range all[max(0, len(all)-3*len(batch)):] {
				if s.at(c.slot) != c {
					done <- fmt.Errorf("slot %d does not name %s", c.slot, c.id)
					return
				}
			}
		}
		done <- nil
	}()
	for b := range 9 * slabSize / 500 {
		batch := make([]*cpermit, 500)
		for i := range batch {
			batch[i] = &cpermit{id: fmt.Sprint(b, ":", i)}
			s.take(batch[i])
		}
		handed <- batch
	}
	close(handed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestBlockSetOfLeavesRoom: a set made in one piece (an Import's) and one
// appended to in order take blockMax-blockFill inserts into each block
// without a split, and past that room every block splits with no key
// lost or written over (the blocks share one array).
func TestBlockSetOfLeavesRoom(t *testing.T) {
	const n = 10 * blockFill
	slab := newPermitSlab()
	perm := make([]*cpermit, 0, 2*n)
	for i := range 2 * n { // even i are loaded, odd i inserted later
		c := &cpermit{id: fmt.Sprintf("p:%06d", i), ik: -7}
		slab.take(c)
		perm = append(perm, c)
	}
	var keys []pkey
	for i := 0; i < len(perm); i += 2 {
		keys = append(keys, keyOf(perm[i]))
	}
	appended := newBlockSet(slab)
	for _, k := range keys {
		appended.push(k)
	}
	for name, s := range map[string]*blockSet{"made": blockSetOf(slab, keys), "appended": appended} {
		t.Run(name, func(t *testing.T) {
			nb := s.nblocks()
			if nb != 10 {
				t.Fatalf("%d keys in %d blocks, want 10 of %d", n, nb, blockFill)
			}
			// Room: blockMax-blockFill inserts into every block, no split.
			for b := range nb {
				for j := range blockMax - blockFill {
					s.set(perm[2*(b*blockFill+j)+1])
				}
			}
			if s.nblocks() != nb {
				t.Fatalf("%d blocks after filling the room, want %d", s.nblocks(), nb)
			}
			// Past it: every block splits, and no key is lost or overwritten.
			for i := 1; i < len(perm); i += 2 {
				s.set(perm[i])
			}
			ref := slices.Clone(perm)
			checkBlockSet(t, s, ref, []*cpermit{perm[0], perm[n], {id: "p:", ik: -7}})
		})
	}
}
