package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWriteAllMatchesOneByOne writes permits into many sets at once
// (writeAll: seeks in lock step) and the same permits into a
// copy of the sets one set at a time (set, delete), and checks that both
// copies hold the same keys in the same blocks. More sets than one pass
// seeks (manyMax), sets of every size (empty, one block, many blocks
// that split and merge), days that tie so seeks compare abbreviated ids
// and, where the abbreviations are equal or missing, ids.
func TestWriteAllMatchesOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	slab := newPermitSlab()
	perm := tiedPermits(r, slab, 3000)
	const nsets = manyMax + 9
	one, many := make([]*blockSet, nsets), make([]*blockSet, nsets)
	for j := range nsets {
		one[j], many[j] = newBlockSet(slab), newBlockSet(slab)
	}
	for op := range 40000 {
		c := perm[r.IntN(len(perm))]
		js := r.Perm(nsets)[:1+r.IntN(nsets)]
		var ms []*blockSet
		for _, j := range js {
			ms = append(ms, many[j])
		}
		if r.IntN(3) > 0 { // mostly sets, so sets grow past one block
			for _, j := range js {
				one[j].set(c)
			}
			writeAll(ms, c, true, nil)
		} else {
			for _, j := range js {
				one[j].delete(c)
			}
			writeAll(ms, c, false, nil)
		}
		if op%997 == 0 || op == 39999 {
			for j := range nsets {
				if one[j].n != many[j].n || one[j].nblocks() != many[j].nblocks() {
					t.Fatalf("op %d set %d: %d keys in %d blocks, want %d in %d", op, j, many[j].n, many[j].nblocks(), one[j].n, one[j].nblocks())
				}
				for bi := range one[j].nblocks() {
					if !slices.Equal(one[j].block(bi), many[j].block(bi)) || one[j].last[bi] != many[j].last[bi] {
						t.Fatalf("op %d set %d: block %d differs", op, j, bi)
					}
				}
			}
		}
	}
	big := 0
	for _, s := range one {
		big = max(big, s.nblocks())
	}
	if big < 8 {
		t.Fatalf("the largest set has %d blocks: the test should split blocks", big)
	}
}

// tiedPermits is n permits of slab whose days tie often, so that seeks
// compare abbreviated ids and, where those are equal or missing, ids.
func tiedPermits(r *rand.Rand, slab *permitSlab, n int) []*cpermit {
	perm := make([]*cpermit, n)
	seen := map[string]bool{}
	for i := range perm {
		var id string
		for id == "" || seen[id] {
			switch r.IntN(4) {
			case 0: // no abbreviation (no ':')
				id = fmt.Sprintf("x%05d", r.IntN(100000))
			case 1: // abbreviations equal past 14 bytes: ids compared
				id = fmt.Sprintf("g:ABCDEFGHIJKLMN%05d", r.IntN(100000))
			default:
				id = fmt.Sprintf("g:%05d", r.IntN(100000))
			}
		}
		seen[id] = true
		perm[i] = &cpermit{id: id, ik: -int32(r.IntN(12))}
		slab.take(perm[i])
	}
	return perm
}
