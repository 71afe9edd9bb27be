package memory

import (
	"iter"
	"math/bits"
)

// postingTable holds a side's filter postings by key (permitFilterIndex's
// postings): an open-addressing table with linear probing, its slots (a
// key and its posting, 24 bytes) in one array.
//
// A permit's write into a large store looks up 15 to 25 postings (each
// of its posted geos times its filter values: lanePostings), in a table
// of millions. In Go's map each look-up was two dependent cache misses
// (the group's control word, then its slot) and waited on the look-up
// before it: 0.63 of the 10.98 CPU-seconds of a round of the real mix
// into a store of 5M permits (docs/kafka-history.md, "Sixty-ninth session").
// Here a key's first probe is its home slot, and getAll loads every
// key's home slot before it compares any, so that the misses of all a
// permit's keys are in flight at once, as findAll's seeks are
// (permit_blocks_many.go).
//
// Like a map it is not safe for a write concurrent with anything else;
// reads may run together (a side's writer alone writes it, and readers
// read only the side no write changes).
type postingTable struct {
	slots []postingSlot // len a power of two, or none
	n     int
	shift uint8 // 64 - log2(len(slots))
}

// postingSlot is a slot of the table: empty when its key's field is 0
// (the filter fields count from 1).
type postingSlot struct {
	k fkey
	t *blockSet
}

// postingMinSlots is the smallest table made. A table doubles before it
// is three quarters full (put).
const postingMinSlots = 8

func newPostingTable() *postingTable { return &postingTable{} }

// len is the number of postings held.
func (p *postingTable) len() int { return p.n }

// home is k's first slot.
func (p *postingTable) home(k fkey) int {
	x := uint64(k.geo)<<32 | uint64(k.val)
	x ^= uint64(k.field) * 0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	x *= 0x94d049bb133111eb
	return int(x >> p.shift)
}

// find is k's slot and true, or the empty slot where the probe for it
// ended and false.
func (p *postingTable) find(k fkey) (int, bool) {
	mask := len(p.slots) - 1
	for i := p.home(k); ; i = (i + 1) & mask {
		switch s := &p.slots[i]; {
		case s.k == k:
			return i, true
		case s.k.field == 0:
			return i, false
		}
	}
}

// get is the posting of k and true, or none and false.
func (p *postingTable) get(k fkey) (treeSet, bool) {
	if p.n == 0 {
		return treeSet{}, false
	}
	i, ok := p.find(k)
	if !ok {
		return treeSet{}, false
	}
	return treeSet{p.slots[i].t}, true
}

// put sets the posting of k (k.field > 0) to t.
func (p *postingTable) put(k fkey, t treeSet) {
	if k.field == 0 {
		panic("memory: a posting's key without a field")
	}
	if (p.n+1)*4 > len(p.slots)*3 {
		p.grow()
	}
	i, ok := p.find(k)
	if !ok {
		p.slots[i].k = k
		p.n++
	}
	p.slots[i].t = t.t
}

// grow doubles the slots (or makes the first) and places every key again.
func (p *postingTable) grow() {
	old := p.slots
	size := max(postingMinSlots, 2*len(old))
	p.slots = make([]postingSlot, size)
	p.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for _, s := range old {
		if s.k.field == 0 {
			continue
		}
		i := p.home(s.k)
		for p.slots[i].k.field != 0 {
			i = (i + 1) & mask
		}
		p.slots[i] = s
	}
}

// del removes the posting of k, if held. The keys after it in its run
// move back into the hole their probes would pass (no tombstones: a
// probe ends at the first empty slot).
func (p *postingTable) del(k fkey) {
	if p.n == 0 {
		return
	}
	i, ok := p.find(k)
	if !ok {
		return
	}
	mask := len(p.slots) - 1
	for j := i; ; {
		p.slots[i] = postingSlot{}
		for {
			j = (j + 1) & mask
			s := p.slots[j]
			if s.k.field == 0 {
				p.n--
				return
			}
			// s may fill the hole at i when its home is not in (i, j]:
			// its probe passes i before it reaches j.
			if h := p.home(s.k); (j-h)&mask >= (j-i)&mask {
				p.slots[i] = s
				i = j
				break
			}
		}
	}
}

// all is every posting held and its key, in no set order.
func (p *postingTable) all() iter.Seq2[fkey, treeSet] {
	return func(yield func(fkey, treeSet) bool) {
		for _, s := range p.slots {
			if s.k.field != 0 && !yield(s.k, treeSet{s.t}) {
				return
			}
		}
	}
}

// postingsAtOnce is the most keys getAll probes in one stage.
const postingsAtOnce = 32

// getAll sets out[j] to the posting of keys[j] (nil when none), every
// key's home slot loaded before any is compared (postingTable).
func (p *postingTable) getAll(keys []fkey, out []*blockSet) {
	if p.n == 0 {
		clear(out[:len(keys)])
		return
	}
	for len(keys) > 0 {
		n := min(len(keys), postingsAtOnce)
		var at [postingsAtOnce]int
		var first [postingsAtOnce]postingSlot
		for j, k := range keys[:n] {
			at[j] = p.home(k)
		}
		for j := range n {
			first[j] = p.slots[at[j]]
		}
		for j, k := range keys[:n] {
			switch {
			case first[j].k == k:
				out[j] = first[j].t
			case first[j].k.field == 0:
				out[j] = nil
			default: // a collision: on along the run
				out[j] = nil
				if i, ok := p.find(k); ok {
					out[j] = p.slots[i].t
				}
			}
		}
		keys, out = keys[n:], out[n:]
	}
}
