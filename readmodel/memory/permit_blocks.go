package memory

import (
	"slices"
)

// blockSet is the ordered set behind a treeSet: its keys in sorted blocks
// of at most blockMax keys, the blocks in order (a B+tree of two levels).
//
// It is built for how permit sets are filled and read. An Import's side
// (and a replay's) fills them in index order: a key sorting last is
// appended to the last block, which holds blockFill keys (15/16 of
// blockMax) before the next is started, so a loaded set holds about 8.5
// bytes per key, with room in every block for the inserts that follow.
// A B-tree
// filled by appending splits each full leaf in two halves and ends half
// full, with a node search per key; a checked append here is one
// comparison, and appendSorted none. Apply inserts at any place: a
// binary search over the blocks and one in the block, and a copy of at
// most blockMax keys; a full block splits in two. A delete that leaves a
// block under a quarter full merges it into a neighbour with room. Pages
// walk the blocks as slices.
//
// The blocks' order is a list of their places in a pool (order): a split
// or a merge moves 4-byte places, which hold no pointer, rather than
// slice headers. A set of 5M keys has about 40,000 blocks; moving their
// headers at a split took a write barrier for each while the collector
// ran: more than half of an insert's cost into a 5M store
// (BenchmarkIngestMixFullStore's profile).
//
// Not safe for concurrent use: a side's sets are written by its writer
// while no reader reads that side (store_side.go).
type blockSet struct {
	pool  [][]pkey // the blocks, in no order; a removed block's place is nil and in free
	order []uint32 // pool places in key order: each block sorted and not empty, block i's last < block i+1's first
	last  []pkey   // last[i] is block i's last key: a seek's search over the blocks reads one array
	free  []uint32 // pool places to give again
	n     int
	slab  *permitSlab // the side's: what the keys' slots name
	// A filter posting's density (permit_dense.go): a dense posting
	// holds no keys, n counts its permits; mark is the count at which
	// its density is checked again.
	dense bool
	mark  int32
	// byValue: the keys order valuations, not days (a geo's valuation
	// order, permit_sort.go): a key's ik is its permit's valueIK.
	byValue bool
}

// blockMax is the most keys a block holds: 1 KiB of 8-byte keys.
const blockMax = 128

// blockFill is the keys a block is given when a set is made or appended
// to in order (an Import's, a replay's): 15/16 of blockMax, so that the
// inserts that follow a restart fill the room left instead of splitting
// nearly every block they touch (a split allocates a block and moves the
// set's block order; filled to blockMax, the round into a 5M store
// split a block for most of its inserts). B-tree bulk loads leave room
// in their leaves for the same reason.
const blockFill = blockMax - blockMax/16

func newBlockSet(slab *permitSlab) *blockSet { return &blockSet{slab: slab} }

// nblocks is the number of blocks; block(i) is the i-th in key order.
func (s *blockSet) nblocks() int             { return len(s.order) }
func (s *blockSet) block(i int) []pkey       { return s.pool[s.order[i]] }
func (s *blockSet) setBlock(i int, b []pkey) { s.pool[s.order[i]] = b }

// place puts b in the pool and returns its place.
func (s *blockSet) place(b []pkey) uint32 {
	if n := len(s.free); n > 0 {
		at := s.free[n-1]
		s.free = s.free[:n-1]
		s.pool[at] = b
		return at
	}
	s.pool = append(s.pool, b)
	return uint32(len(s.pool) - 1)
}

// ordOf is what the set's keys order c by: its day, or its valuation's
// valueIK in a valuation order.
func (s *blockSet) ordOf(c *cpermit) int32 {
	if s.byValue {
		return valueIK(c.valuation)
	}
	return c.ik
}

// keyOf is c's key in s.
func (s *blockSet) keyOf(c *cpermit) pkey { return pkey{s.ordOf(c), c.slot} }

// before reports whether k sorts before the permit p (a page's pivot
// need not be stored: ties on the day compare ids).
func (s *blockSet) before(k pkey, p *cpermit) bool { return keyBeforeAt(s.slab, k, s.ordOf(p), p) }

// after reports whether k sorts after the permit p.
func (s *blockSet) after(k pkey, p *cpermit) bool { return keyAfterAt(s.slab, k, s.ordOf(p), p) }

// keyBefore reports whether k, a key of slab's permits, sorts before the
// permit p (p need not be stored: ties on the day compare ids, through
// their abbreviated ids when both have one and they differ: abbr.go).
func keyBefore(slab *permitSlab, k pkey, p *cpermit) bool { return keyBeforeAt(slab, k, p.ik, p) }

// keyAfter reports whether k sorts after the permit p.
func keyAfter(slab *permitSlab, k pkey, p *cpermit) bool { return keyAfterAt(slab, k, p.ik, p) }

// keyBeforeAt is keyBefore with p ordered by ik (its day, or its
// valueIK in a valuation order): ties on ik compare ids.
func keyBeforeAt(slab *permitSlab, k pkey, ik int32, p *cpermit) bool {
	if k.ik != ik {
		return k.ik < ik
	}
	if p.slot != 0 {
		if k.slot == p.slot {
			return false // p itself
		}
		if a, b := slab.abbrAt(k.slot), slab.abbrAt(p.slot); a != b && !a.none() && !b.none() {
			return a.less(b)
		}
	}
	return slab.at(k.slot).id < p.id
}

// keyAfterAt is keyAfter with p ordered by ik.
func keyAfterAt(slab *permitSlab, k pkey, ik int32, p *cpermit) bool {
	if k.ik != ik {
		return k.ik > ik
	}
	if p.slot != 0 {
		if k.slot == p.slot {
			return false
		}
		if a, b := slab.abbrAt(k.slot), slab.abbrAt(p.slot); a != b && !a.none() && !b.none() {
			return b.less(a)
		}
	}
	return p.id < slab.at(k.slot).id
}

// permit is the permit k names.
func (s *blockSet) permit(k pkey) *cpermit { return s.slab.at(k.slot) }

// blockSetOf makes the set of keys, sorted and distinct, in blocks of
// blockFill keys in one array (copied: keys stays the caller's). Each
// block's capacity is blockMax and ends where the next block's keys
// begin, so the first blockMax-blockFill inserts into a block take its
// room, and the next splits it (a new array for one half; a block never
// holds more than blockMax keys, so it never reaches the next). The last
// block has room for a sixteenth more.
func blockSetOf(slab *permitSlab, keys []pkey) *blockSet {
	s := &blockSet{n: len(keys), slab: slab}
	if len(keys) == 0 {
		return s
	}
	nb := (len(keys) + blockFill - 1) / blockFill
	tail := len(keys) - (nb-1)*blockFill
	all := make([]pkey, (nb-1)*blockMax+tail+tail/16)
	s.pool, s.order, s.last = make([][]pkey, 0, nb), make([]uint32, 0, nb), make([]pkey, 0, nb)
	for b := range nb {
		i, j := b*blockFill, min((b+1)*blockFill, len(keys))
		at := b * blockMax
		end := min(at+blockMax, len(all))
		blk := all[at : at+j-i : end]
		copy(blk, keys[i:j])
		s.order = append(s.order, uint32(len(s.pool)))
		s.pool = append(s.pool, blk)
		s.last = append(s.last, keys[j-1])
	}
	return s
}

func (s *blockSet) len() int { return s.n }

func (s *blockSet) min() (pkey, bool) {
	if s.n == 0 {
		return pkey{}, false
	}
	return s.block(0)[0], true
}

func (s *blockSet) max() (pkey, bool) {
	if s.n == 0 {
		return pkey{}, false
	}
	return s.last[len(s.last)-1], true
}

// find returns the position of the first key >= p: block bi, index i;
// bi == s.nblocks() when every key is < p. The blocks are searched by
// their last keys (one array), then the block.
func (s *blockSet) find(p *cpermit) (bi, i int) {
	ik := s.ordOf(p)
	lo, hi := 0, len(s.last)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if keyBeforeAt(s.slab, s.last[m], ik, p) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(s.last) {
		return lo, 0
	}
	b := s.block(lo)
	l, h := 0, len(b)-1 // b's last key is >= p
	for l < h {
		m := int(uint(l+h) >> 1)
		if keyBeforeAt(s.slab, b[m], ik, p) {
			l = m + 1
		} else {
			h = m
		}
	}
	return lo, l
}

// at reports the key at (bi, i) and whether there is one.
func (s *blockSet) at(bi, i int) (pkey, bool) {
	if bi >= s.nblocks() {
		return pkey{}, false
	}
	return s.block(bi)[i], true
}

// set adds c, replacing a key equal to it.
func (s *blockSet) set(c *cpermit) {
	bi, i := s.find(c)
	s.setFound(c, bi, i)
}

// setFound is set with c's place found: (bi, i) is s.find(c).
func (s *blockSet) setFound(c *cpermit, bi, i int) {
	k := s.keyOf(c)
	if s.n == 0 {
		s.order, s.last = append(s.order, s.place([]pkey{k})), append(s.last, k)
		s.n = 1
		return
	}
	if bi == s.nblocks() { // after every key
		s.push(k)
		return
	}
	b := s.block(bi)
	if !s.after(b[i], c) { // equal: the same key (ik and slot)
		b[i] = k
		return
	}
	s.n++
	if len(b) < blockMax {
		s.setBlock(bi, insertAt(b, i, k))
		return
	}
	// Split the full block in two halves and insert into one.
	h := blockMax / 2
	right := make([]pkey, blockMax-h, blockMax)
	copy(right, b[h:])
	clear(b[h:])
	left := b[:h]
	if i <= h {
		left = insertAt(left, i, k)
	} else {
		right = insertAt(right, i-h, k)
	}
	s.setBlock(bi, left)
	s.order = insertAt(s.order, bi+1, s.place(right))
	s.last[bi] = left[len(left)-1]
	s.last = insertAt(s.last, bi+1, right[len(right)-1])
}

// insertAt inserts v at i, growing the slice's array when it is full.
func insertAt[T any](b []T, i int, v T) []T {
	var zero T
	b = append(b, zero)
	copy(b[i+1:], b[i:])
	b[i] = v
	return b
}

// load adds c, appended when it sorts after every key (a bulk load in
// order), else set.
func (s *blockSet) load(c *cpermit) {
	if s.n > 0 {
		if !s.before(s.last[len(s.last)-1], c) {
			s.set(c)
			return
		}
	}
	s.push(s.keyOf(c))
}

// appendSorted adds c, which the caller knows sorts after every key.
func (s *blockSet) appendSorted(c *cpermit) { s.push(s.keyOf(c)) }

// push appends k, greater than every key, to the last block, or to a new
// one when it holds blockFill keys.
func (s *blockSet) push(k pkey) {
	s.n++
	if n := s.nblocks(); n > 0 && len(s.block(n-1)) < blockFill {
		s.setBlock(n-1, append(s.block(n-1), k))
		s.last[n-1] = k
		return
	}
	s.last = append(s.last, k)
	if s.nblocks() == 0 {
		s.order = append(s.order, s.place([]pkey{k}))
		return
	}
	// A set that filled a block is large: the next is made whole.
	b := make([]pkey, 1, blockMax)
	b[0] = k
	s.order = append(s.order, s.place(b))
}

// delete removes the key equal to c's, if any.
func (s *blockSet) delete(c *cpermit) {
	bi, i := s.find(c)
	s.deleteFound(c, bi, i)
}

// deleteFound is delete with c's place found: (bi, i) is s.find(c).
func (s *blockSet) deleteFound(c *cpermit, bi, i int) {
	if bi == s.nblocks() {
		return
	}
	b := s.block(bi)
	if s.after(b[i], c) {
		return // not held
	}
	s.n--
	copy(b[i:], b[i+1:])
	b[len(b)-1] = pkey{}
	b = b[:len(b)-1]
	s.setBlock(bi, b)
	if len(b) > 0 {
		s.last[bi] = b[len(b)-1]
	}
	switch {
	case len(b) == 0:
		s.removeBlock(bi)
	case len(b) < blockMax/4:
		if bi > 0 && len(s.block(bi-1))+len(b) <= blockMax {
			s.setBlock(bi-1, append(s.block(bi-1), b...))
			s.last[bi-1] = s.last[bi]
			s.removeBlock(bi)
		} else if bi+1 < s.nblocks() && len(s.block(bi+1))+len(b) <= blockMax {
			s.setBlock(bi, append(b, s.block(bi+1)...))
			s.last[bi] = s.last[bi+1]
			s.removeBlock(bi + 1)
		}
	}
}

// removeBlock takes block bi out of the order and gives its place back.
func (s *blockSet) removeBlock(bi int) {
	at := s.order[bi]
	s.pool[at] = nil
	s.order = slices.Delete(s.order, bi, bi+1)
	s.last = slices.Delete(s.last, bi, bi+1)
	if len(s.order) == 0 {
		s.pool, s.order, s.last, s.free = nil, nil, nil, nil
		return
	}
	s.free = append(s.free, at)
}

// ascend calls fn for the permits >= pivot in order until fn returns
// false.
func (s *blockSet) ascend(pivot *cpermit, fn func(*cpermit) bool) {
	bi, i := s.find(pivot)
	for ; bi < s.nblocks(); bi, i = bi+1, 0 {
		for _, k := range s.block(bi)[i:] {
			if !fn(s.permit(k)) {
				return
			}
		}
	}
}

// scan calls fn for every key in order until fn returns false.
func (s *blockSet) scan(fn func(pkey) bool) {
	for _, at := range s.order {
		for _, k := range s.pool[at] {
			if !fn(k) {
				return
			}
		}
	}
}

// lastLE returns the position of the last key <= p; ok false when there
// is none.
func (s *blockSet) lastLE(p *cpermit) (bi, i int, ok bool) {
	bi, i = s.find(p)
	if x, found := s.at(bi, i); found && !s.after(x, p) {
		return bi, i, true // equal
	}
	// the key before (bi, i)
	if i > 0 {
		return bi, i - 1, true
	}
	if bi == 0 {
		return 0, 0, false
	}
	return bi - 1, len(s.block(bi-1)) - 1, true
}

// descend calls fn for the permits <= pivot in reverse order until fn
// returns false.
func (s *blockSet) descend(pivot *cpermit, fn func(*cpermit) bool) {
	bi, i, ok := s.lastLE(pivot)
	if !ok {
		return
	}
	for {
		b := s.block(bi)
		for ; i >= 0; i-- {
			if !fn(s.permit(b[i])) {
				return
			}
		}
		if bi == 0 {
			return
		}
		bi--
		i = len(s.block(bi)) - 1
	}
}

// blockIter walks a blockSet from a position (setIter).
type blockIter struct {
	s     *blockSet
	bi, i int
}

func (t *blockIter) valid() bool {
	return t.bi >= 0 && t.bi < t.s.nblocks()
}

func (t *blockIter) seekGE(p *cpermit) bool {
	t.bi, t.i = t.s.find(p)
	return t.valid()
}

func (t *blockIter) seekLE(p *cpermit) bool {
	bi, i, ok := t.s.lastLE(p)
	if !ok {
		t.bi = -1
		return false
	}
	t.bi, t.i = bi, i
	return true
}

func (t *blockIter) next() bool {
	if !t.valid() {
		return false
	}
	if t.i++; t.i < len(t.s.block(t.bi)) {
		return true
	}
	t.bi, t.i = t.bi+1, 0
	return t.valid()
}

func (t *blockIter) prev() bool {
	if !t.valid() {
		return false
	}
	if t.i--; t.i >= 0 {
		return true
	}
	t.bi--
	if t.bi < 0 {
		return false
	}
	t.i = len(t.s.block(t.bi)) - 1
	return true
}

func (t *blockIter) item() *cpermit { return t.s.permit(t.s.block(t.bi)[t.i]) }
func (t *blockIter) release()       {}
