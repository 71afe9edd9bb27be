package memory

import "sync/atomic"

// permitSlab numbers a side's stored permits: each permit id holds one
// slot from its first stored version until it is deleted, and the slot
// names the permit's current version. The permit sets (blockSet) hold
// slots instead of pointers, so their keys are 8 bytes with no pointer:
// half the memory, and nothing for the collector to scan in what is most
// of a large store's index (about 30 keys per permit and side).
//
// Slots live in chunks of slabSize that never move, found through a
// directory that is replaced (copied, larger) when it is full. Slot 0 is
// never given: a permit without a slot (a page's pivot, a version not
// stored) has slot 0, so a key equal in slot to a pivot is that permit.
//
// Beside each slot the slab keeps the permit's abbreviated id (abbr.go):
// 16 bytes whose order, when two differ, is their ids' order. A set whose
// keys tie on the issue day compares these, one load from an array, instead of the ids (the slot's chunk, the permit, the id's
// bytes: three dependent cache misses in a large store).
//
// The side's writer gives, replaces and frees slots. An Import's indexer
// stage reads slots the compactor gave before it handed the permits over,
// while the compactor gives more (import_stages.go): each is a different
// word of a chunk, and the directory is read through an atomic pointer,
// so they do not race.
type permitSlab struct {
	dir  atomic.Pointer[[]*slabChunk]
	next uint32   // the next slot never given
	free []uint32 // slots of deleted permits, given again
	abbr abbreviator
}

const (
	slabShift = 12
	slabSize  = 1 << slabShift
)

// slabChunk is slabSize slots: their permits and abbreviated ids (the
// pointers first: the collector scans only them).
type slabChunk struct {
	permits [slabSize]atomic.Pointer[cpermit]
	abbr    [slabSize]abbrID
}

func newPermitSlab() *permitSlab {
	s := &permitSlab{next: 1}
	dir := make([]*slabChunk, 1, 4)
	dir[0] = new(slabChunk)
	s.dir.Store(&dir)
	return s
}

// at is the permit holding slot.
func (s *permitSlab) at(slot uint32) *cpermit {
	return (*s.dir.Load())[slot>>slabShift].permits[slot&(slabSize-1)].Load()
}

// abbrAt is the abbreviated id of the permit holding slot.
func (s *permitSlab) abbrAt(slot uint32) abbrID {
	return (*s.dir.Load())[slot>>slabShift].abbr[slot&(slabSize-1)]
}

// take gives c, a permit id not stored yet, a slot.
func (s *permitSlab) take(c *cpermit) {
	if n := len(s.free); n > 0 {
		c.slot = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		c.slot = s.next
		s.next++
		dir := *s.dir.Load()
		if ci := int(c.slot >> slabShift); ci == len(dir) {
			if len(dir) < cap(dir) {
				dir = dir[:ci+1] // a word past the readers' length
			} else {
				grown := make([]*slabChunk, ci+1, 2*cap(dir))
				copy(grown, dir)
				dir = grown
			}
			dir[ci] = new(slabChunk)
			s.dir.Store(&dir)
		}
	}
	(*s.dir.Load())[c.slot>>slabShift].abbr[c.slot&(slabSize-1)] = s.abbr.of(c.id)
	s.put(c)
}

// replace puts c, a new version of the permit in its slot (c.slot, the
// one its previous version holds), in that slot.
func (s *permitSlab) replace(c *cpermit) { s.put(c) }

// release frees the slot of c, a permit deleted and taken out of every
// set.
func (s *permitSlab) release(c *cpermit) {
	ch := (*s.dir.Load())[c.slot>>slabShift]
	ch.permits[c.slot&(slabSize-1)].Store(nil)
	ch.abbr[c.slot&(slabSize-1)] = abbrID{}
	s.free = append(s.free, c.slot)
}

func (s *permitSlab) put(c *cpermit) {
	(*s.dir.Load())[c.slot>>slabShift].permits[c.slot&(slabSize-1)].Store(c)
}
