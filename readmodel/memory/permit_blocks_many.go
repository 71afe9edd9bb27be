package memory

// Seeks in lock step. A permit's write into a large store inserts it
// into a few dozen large sets (its geos' sets and, in posted geos, one
// posting per filter value), and each seek is a chain of dependent cache
// misses: the blocks' last keys, the block, the keys in it and, on a tie
// of days, the abbreviated ids of other permits. One seek after another
// waits for each miss in turn. findAll runs the seeks of one permit into
// many sets a step of each at a time: the steps of different sets do not
// depend on one another, so the processor has the misses of all of them
// in flight at once instead of one. Each round is staged: every seek's
// next key is loaded, then the abbreviations of those that tie on the
// day, then the comparisons are made, so that no load waits behind a
// branch on another's result.
//
// The permit write uses it for a permit's geo sets (indexPermit,
// unindexPermit) and its filter postings (lanePostings) on the live
// path. BenchmarkBlockSetInsertCold's "-many" cases measure it against
// one seek after another.

// manyMax is the most sets findAll seeks in one pass.
const manyMax = 24

// seekKey is what a seek compares a set's keys with: the permit, its day
// and its abbreviated id, read once for all the seeks.
type seekKey struct {
	c    *cpermit
	ik   int32
	abbr abbrID
}

func seekKeyOf(slab *permitSlab, c *cpermit) seekKey {
	q := seekKey{c: c, ik: c.ik}
	if c.slot != 0 {
		q.abbr = slab.abbrAt(c.slot)
	}
	return q
}

// findAll sets pos[j] to sets[j].find(c) for every j (len(sets) <=
// manyMax; the sets share one slab).
func findAll(sets []*blockSet, c *cpermit, pos *[manyMax][2]int) {
	n := len(sets)
	if n == 0 {
		return
	}
	slab := sets[0].slab
	q := seekKeyOf(slab, c)
	var lo, hi [manyMax]int
	for j, s := range sets[:n] {
		lo[j], hi[j] = 0, len(s.last)
	}
	var keys [manyMax]pkey
	var ab [manyMax]abbrID
	for {
		// Stage 1: every seek's next key, loads that depend on nothing
		// of one another; stage 2: the abbreviations of the keys that
		// tie on the day, likewise; stage 3: the comparisons.
		more := false
		for j := range n {
			if l, h := lo[j], hi[j]; l < h {
				keys[j] = sets[j].last[int(uint(l+h)>>1)]
				more = true
			}
		}
		if !more {
			break
		}
		q.step(slab, n, &lo, &hi, &keys, &ab)
	}
	var blk [manyMax][]pkey
	for j, s := range sets[:n] {
		pos[j][0] = lo[j]
		if lo[j] < len(s.last) {
			blk[j] = s.block(lo[j])
			lo[j], hi[j] = 0, len(blk[j])-1 // its last key is >= c
		} else {
			lo[j], hi[j] = 0, 0
		}
	}
	for {
		more := false
		for j := range n {
			if l, h := lo[j], hi[j]; l < h {
				keys[j] = blk[j][int(uint(l+h)>>1)]
				more = true
			}
		}
		if !more {
			break
		}
		q.step(slab, n, &lo, &hi, &keys, &ab)
	}
	for j := range n {
		pos[j][1] = lo[j]
	}
}

// setAll adds c to every set of sets (distinct sets of one slab).
func setAll(sets []*blockSet, c *cpermit) {
	var pos [manyMax][2]int
	for len(sets) > 0 {
		n := min(len(sets), manyMax)
		findAll(sets[:n], c, &pos)
		for j, s := range sets[:n] {
			s.setFound(c, pos[j][0], pos[j][1])
		}
		sets = sets[n:]
	}
}

// deleteAll removes c from every set of sets (distinct sets of one slab).
func deleteAll(sets []*blockSet, c *cpermit) {
	var pos [manyMax][2]int
	for len(sets) > 0 {
		n := min(len(sets), manyMax)
		findAll(sets[:n], c, &pos)
		for j, s := range sets[:n] {
			s.deleteFound(c, pos[j][0], pos[j][1])
		}
		sets = sets[n:]
	}
}

// step moves each active seek's bounds by its key keys[j] (stages 2 and
// 3 of a round): keys[j] before q's permit as keyBefore decides it, the
// abbreviations of the keys that tie on the day loaded first, together.
func (q *seekKey) step(slab *permitSlab, n int, lo, hi *[manyMax]int, keys *[manyMax]pkey, ab *[manyMax]abbrID) {
	for j := range n {
		if lo[j] < hi[j] && keys[j].ik == q.ik && keys[j].slot != q.c.slot && q.c.slot != 0 {
			ab[j] = slab.abbrAt(keys[j].slot)
		}
	}
	for j := range n {
		l, h := lo[j], hi[j]
		if l >= h {
			continue
		}
		m := int(uint(l+h) >> 1)
		k := keys[j]
		var lt bool
		switch {
		case k.ik != q.ik:
			lt = k.ik < q.ik
		case q.c.slot != 0 && k.slot == q.c.slot:
			lt = false
		case q.c.slot != 0 && ab[j] != q.abbr && !ab[j].none() && !q.abbr.none():
			lt = ab[j].less(q.abbr)
		default:
			lt = slab.at(k.slot).id < q.c.id
		}
		if lt {
			lo[j] = m + 1
		} else {
			hi[j] = m
		}
	}
}
