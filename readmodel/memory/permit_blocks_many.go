package memory

// Seeks in lock step. A permit's write into a large store inserts it
// into a few dozen large sets (its geos' sets and, in posted geos, one
// posting per filter value), and each seek is a chain of dependent cache
// misses: the blocks' last keys, the block, the keys in it and, on a tie
// of days, the abbreviated ids of other permits. One seek after another
// waits for each miss in turn. findAll runs the seeks of one permit into
// many sets a step of each at a time: the steps of different sets do not
// depend on one another, so the processor has the misses of all of them
// in flight at once instead of one. Each round is staged (search), so
// that no load waits behind a branch on another's result.
//
// The permit write uses it for a permit's geo sets (indexPermit,
// unindexPermit) and its filter postings (lanePostings) on the live
// path (writeAll). A store's second side, writing a batch the first
// has written, checks the places the first side's seeks found instead
// (permit_seeklog.go), in lock step too. BenchmarkBlockSetInsertCold's "-many" cases measure it against
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
// manyMax; the sets share one slab and one order, by day or by
// valuation): the blocks' last keys searched in lock step, then the
// blocks.
func findAll(sets []*blockSet, c *cpermit, pos *[manyMax][2]int) {
	n := len(sets)
	if n == 0 {
		return
	}
	slab := sets[0].slab
	q := seekKeyOf(slab, c)
	q.ik = sets[0].ordOf(c)
	var keys [manyMax][]pkey
	var lo, hi [manyMax]int
	for j, s := range sets[:n] {
		keys[j], lo[j], hi[j] = s.last, 0, len(s.last)
	}
	q.search(slab, n, &keys, &lo, &hi)
	for j, s := range sets[:n] {
		pos[j][0] = lo[j]
		if lo[j] < len(s.last) {
			keys[j] = s.block(lo[j])
			lo[j], hi[j] = 0, len(keys[j])-1 // its last key is >= c
		} else {
			lo[j], hi[j] = 0, 0
		}
	}
	q.search(slab, n, &keys, &lo, &hi)
	for j := range n {
		pos[j][1] = lo[j]
	}
}

// search runs n binary searches for q's permit, of keys[j] in [lo[j],
// hi[j]), in lock step: lo[j] ends at the first key >= it. Each round is
// staged: every search's next key is loaded, then the abbreviations of
// those that tie on the day, then the comparisons (keyBefore's).
func (q *seekKey) search(slab *permitSlab, n int, keys *[manyMax][]pkey, lo, hi *[manyMax]int) {
	var mid [manyMax]pkey
	var ab [manyMax]abbrID
	for {
		more := false
		for j := range n {
			if l, h := lo[j], hi[j]; l < h {
				mid[j] = keys[j][int(uint(l+h)>>1)]
				more = true
			}
		}
		if !more {
			return
		}
		for j := range n {
			if k := mid[j]; lo[j] < hi[j] && k.ik == q.ik && k.slot != q.c.slot && q.c.slot != 0 {
				ab[j] = slab.abbrAt(k.slot)
			}
		}
		for j := range n {
			l, h := lo[j], hi[j]
			if l >= h {
				continue
			}
			var lt bool
			switch k := mid[j]; {
			case k.ik != q.ik:
				lt = k.ik < q.ik
			case q.c.slot != 0 && k.slot == q.c.slot:
				lt = false
			case q.c.slot != 0 && ab[j] != q.abbr && !ab[j].none() && !q.abbr.none():
				lt = ab[j].less(q.abbr)
			default:
				lt = slab.at(k.slot).id < q.c.id
			}
			if m := int(uint(l+h) >> 1); lt {
				lo[j] = m + 1
			} else {
				hi[j] = m
			}
		}
	}
}

// writeAll adds c to (add) or removes it from every set of sets
// (distinct sets of one slab and one order), their seeks in lock step.
// With a log (permit_seeklog.go) it records the places found, or reads
// those the other side recorded for the same write.
func writeAll(sets []*blockSet, c *cpermit, add bool, lane *seekLog) {
	var rec [][2]int32
	switch {
	case lane == nil || len(sets) == 0:
		lane = nil
	case lane.reading:
		rec = lane.next(len(sets), add)
	default:
		lane.record(len(sets), add)
	}
	var pos [manyMax][2]int
	for len(sets) > 0 {
		n := min(len(sets), manyMax)
		if rec != nil {
			placeAll(sets[:n], c, rec[:n], &pos, lane)
			rec = rec[n:]
		} else {
			findAll(sets[:n], c, &pos)
		}
		if lane != nil && !lane.reading {
			for _, p := range pos[:n] {
				lane.places = append(lane.places, [2]int32{int32(p[0]), int32(p[1])})
			}
		}
		for j, s := range sets[:n] {
			if add {
				s.setFound(c, pos[j][0], pos[j][1])
			} else {
				s.deleteFound(c, pos[j][0], pos[j][1])
			}
		}
		sets = sets[n:]
	}
}
