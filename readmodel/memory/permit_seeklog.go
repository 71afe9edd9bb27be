package memory

import "github.com/permitd/permitd/readmodel"

// Seek logs. The live path writes every batch twice, once per side
// (store.go): the standby side first, and the other a step later, when
// it is the standby side in turn (Store.pending). Both sides hold the
// same permits in sets built the same way (an Import's, a replay's or a
// snapshot's sides are both loaded from the same keys in order:
// blockSetOf), and the same writes in the same order split and merge
// their blocks alike. So where the first side's write of a permit found
// its place in a set (writeAll: a block and an index in it) is most
// often where the second side's will find it too.
//
// In the round into a store of 5M permits (BenchmarkIngestMixFullStore)
// the seeks in lock step (findAll) were the largest part of a batch's
// write, each a chain of cache misses: the blocks' last keys, the block,
// the keys in it and the abbreviated ids of a day's ties. The side
// written first records the places its seeks found (one seekLog for
// each of putPermits' three lanes: each lane writes its own sets, in
// the batch's order), and the side written second checks each recorded
// place in its own set (the key there and the one before it, a few
// loads, in lock step: placeAll) before it uses it, and seeks where it
// does not hold. A place is used only when it is the place a seek would
// find, so a log that does not fit the side (another batch's, a side
// built otherwise, a write that took another path) costs a check and
// changes nothing.

// seekLog is the places one lane's writeAll calls found for one batch,
// in call order.
type seekLog struct {
	calls  []int32    // per call: its number of sets, negative for a removal
	places [][2]int32 // per set of each call: block and index
	// reading: the side reads the log (the batch's second write), from
	// call and at, the next call's and place's index; lost: the log fell
	// out of step with the side's calls (a call's number of sets or its
	// kind differed), and no place is read after that.
	reading  bool
	call, at int
	lost     bool
	used     int // places that held (tests)
}

// seekLogs is the logs of one batch's three permit lanes (putPermits).
type seekLogs struct {
	main, postings, values seekLog
}

// start readies l for the write of a batch: recording into it (the
// batch's first side) or reading it from its first call (its second).
func (l *seekLogs) start(reading bool) {
	for _, g := range [3]*seekLog{&l.main, &l.postings, &l.values} {
		if !reading {
			g.calls, g.places = g.calls[:0], g.places[:0]
		}
		g.reading, g.call, g.at, g.lost, g.used = reading, 0, 0, false, 0
	}
}

// usedPlaces is the number of recorded places that held, over the three
// logs.
func (l *seekLogs) usedPlaces() int { return l.main.used + l.postings.used + l.values.used }

// seekLogMin is the fewest permits a batch needs for its seeks to be
// logged: the batches that take the lanes (putPermits).
const seekLogMin = laneMin

// record notes a call of n sets, adding or removing; writeAll appends
// the places it finds after it.
func (l *seekLog) record(n int, add bool) {
	if add {
		l.calls = append(l.calls, int32(n))
	} else {
		l.calls = append(l.calls, -int32(n))
	}
}

// next is the places recorded for the next call, if it writes as many
// sets the same way (add): else nil, and the log is read no further.
func (l *seekLog) next(n int, add bool) [][2]int32 {
	if l.lost {
		return nil
	}
	want := int32(n)
	if !add {
		want = -want
	}
	if l.call >= len(l.calls) || l.calls[l.call] != want || l.at+n > len(l.places) {
		l.lost = true
		return nil
	}
	l.call++
	p := l.places[l.at : l.at+n : l.at+n]
	l.at += n
	return p
}

// placeAll sets pos[j] to sets[j].find(c) for every j, as findAll does
// (the sets share one slab and one order), from the recorded places
// where they hold; the others are sought (findAll). A place (bi, i)
// holds when it is find's: the key there is >= c and the one before it
// (in the block, or the last of the block before) < c; or, past the last
// block (i 0), the set's last key < c. Its checks run as findAll's seeks
// do, a stage for every set at a time (the blocks, their keys, the
// abbreviated ids of those that tie on the day, the comparisons), so
// that the sets' cache misses are in flight together: one set after
// another, each check waited for its misses in turn and cost as much as
// the seek it saved (a profile of the round into a 5M store).
func placeAll(sets []*blockSet, c *cpermit, rec [][2]int32, pos *[manyMax][2]int, l *seekLog) {
	n := len(sets)
	slab := sets[0].slab
	q := seekKeyOf(slab, c)
	q.ik = sets[0].ordOf(c)
	const (
		checkAt   = 1 << iota // the key at the place must be >= c
		checkPrev             // the key before it must be < c
		wrong                 // no such place
	)
	var blk [manyMax][]pkey
	var at, prev [manyMax]pkey
	var abAt, abPrev [manyMax]abbrID
	var checks [manyMax]uint8
	for j, s := range sets[:n] { // the blocks
		if bi := int(rec[j][0]); uint(bi) < uint(len(s.order)) {
			blk[j] = s.pool[s.order[bi]]
		}
	}
	for j, s := range sets[:n] { // their keys
		bi, i, nb := int(rec[j][0]), int(rec[j][1]), len(s.order)
		switch {
		case bi == nb && i == 0: // past the last block
			if nb > 0 {
				prev[j], checks[j] = s.last[nb-1], checkPrev
			}
		case uint(bi) < uint(nb) && uint(i) < uint(len(blk[j])):
			at[j], checks[j] = blk[j][i], checkAt
			if i > 0 {
				prev[j], checks[j] = blk[j][i-1], checkAt|checkPrev
			} else if bi > 0 {
				prev[j], checks[j] = s.last[bi-1], checkAt|checkPrev
			}
		default:
			checks[j] = wrong
		}
	}
	tie := func(k pkey) bool { return k.ik == q.ik && k.slot != c.slot && c.slot != 0 }
	for j := range n { // the abbreviated ids of the keys that tie on the day
		if checks[j]&checkAt != 0 && tie(at[j]) {
			abAt[j] = slab.abbrAt(at[j].slot)
		}
		if checks[j]&checkPrev != 0 && tie(prev[j]) {
			abPrev[j] = slab.abbrAt(prev[j].slot)
		}
	}
	before := func(k pkey, ab abbrID) bool { // k < c, as search compares
		switch {
		case k.ik != q.ik:
			return k.ik < q.ik
		case c.slot != 0 && k.slot == c.slot:
			return false
		case c.slot != 0 && ab != q.abbr && !ab.none() && !q.abbr.none():
			return ab.less(q.abbr)
		default:
			return slab.at(k.slot).id < c.id
		}
	}
	var missBuf [manyMax]*blockSet
	var missAt [manyMax]int
	miss := missBuf[:0]
	for j, s := range sets[:n] {
		ch := checks[j]
		if ch&wrong == 0 && (ch&checkAt == 0 || !before(at[j], abAt[j])) && (ch&checkPrev == 0 || before(prev[j], abPrev[j])) {
			pos[j] = [2]int{int(rec[j][0]), int(rec[j][1])}
			l.used++
			continue
		}
		missAt[len(miss)] = j
		miss = append(miss, s)
	}
	if len(miss) == 0 {
		return
	}
	var found [manyMax][2]int
	findAll(miss, c, &found)
	for k := range miss {
		pos[missAt[k]] = found[k]
	}
}

// batchSeeks is the seek logs of the batches a step wrote to one side
// only (Store.pending), for the other side's write of them.
type batchSeeks map[*readmodel.Batch]*seekLogs
