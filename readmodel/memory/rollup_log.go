package memory

import (
	"cmp"
	"slices"
	"sync"
)

// Logged top-list counts. A lead written into a large anchor's roll-ups
// changes, per roll-up (all, its year and its month), the counts of its
// city, zip and county in about four Fenwick nodes each: a dozen binary
// searches a roll-up into lists of hundreds to thousands of ids (a
// state's cities, zips and counties). On the live path those lists are
// out of the cache, and the searches were a fifth of a serve process's
// CPU while leads streamed into a store of 800,000 (docs/kafka-history.md,
// eighty-second session).
//
// A tree whose top lists hold fenLogMin keys or more logs its changes
// instead: one entry per packed key, with the node the change starts at.
// When the log reaches an eighth of the tree's top-list keys (and at
// least fenFoldMin entries) it is folded: sorted by key once, spread over
// the nodes each entry reaches, and merged into each node's list in one
// pass (or by search, for a list much longer than its changes). Folding
// a batch's changes at its end was measured and not kept (a batch
// changes each list a few times): the log gains only because it spans
// batches, so readers see it. A read adds the log's entries its buckets
// take; an unfloored read of the whole tree costs at most an eighth more
// than the lists alone. Counts of leads (cnt, null) are not logged: they
// are one array each.
//
// Measured (docs/kafka-history.md, eighty-third session): the roll-ups' part of
// a live lead write fell by two fifths (BenchmarkApplyMix at 300,000
// permits); stats reads over a store written live moved by -17% to +8%
// (BenchmarkStatsState).

// fenChange is one logged change: delta leads of packed key key, in the
// nodes from first up (first 0: null confidence).
type fenChange struct {
	key   uint32
	delta int32
	first uint8
}

// fenLogMin is the top-list keys (ids[confBuckets] and nullIDs) from which
// a tree logs its changes (under it the lists are short enough for the
// cache); fenFoldMin the least log it folds (variables so tests can
// exercise small ones).
var (
	fenLogMin  = 128
	fenFoldMin = 16
)

// logs reports whether f logs its top-list changes.
func (f *confFen) logs() bool {
	return len(f.log) > 0 || len(f.ids[confBuckets])+len(f.nullIDs) >= fenLogMin
}

func (f *confFen) logIDs(first int, ids leadIDs, delta int64) {
	p, n := packIDs(ids)
	for _, k := range p[:n] {
		f.log = append(f.log, fenChange{key: k, delta: int32(delta), first: uint8(first)})
	}
	if len(f.log) >= max(fenFoldMin, (len(f.ids[confBuckets])+len(f.nullIDs))/8) {
		f.fold()
	}
}

// loggedAtMost adds sign times the logged changes that start at a node
// <= last (buckets >= confBuckets-last).
func (f *confFen) loggedAtMost(last int, acc *leadStatsAcc, sign int64) {
	for _, c := range f.log {
		if c.first != 0 && int(c.first) <= last {
			acc.packedOne(c.key, sign*int64(c.delta))
		}
	}
}

// loggedAt adds sign times the logged changes that start at node first
// (0: null confidence; else bucket confBuckets-first alone).
func (f *confFen) loggedAt(first int, acc *leadStatsAcc, sign int64) {
	for _, c := range f.log {
		if int(c.first) == first {
			acc.packedOne(c.key, sign*int64(c.delta))
		}
	}
}

// fenFolds are the per-node change lists of a fold (index 0: null).
type fenFolds [confBuckets + 1][]idCountPair

var fenFoldPool = sync.Pool{New: func() any { return new(fenFolds) }}

// fold merges the log into the lists and empties it.
func (f *confFen) fold() {
	if len(f.log) == 0 {
		return
	}
	slices.SortFunc(f.log, func(a, b fenChange) int { return cmp.Compare(a.key, b.key) })
	by := fenFoldPool.Get().(*fenFolds)
	for _, c := range f.log {
		e := idCountPair{id: c.key, n: c.delta}
		if c.first == 0 {
			by[0] = append(by[0], e)
			continue
		}
		for i := int(c.first); i <= confBuckets; i += i & -i {
			by[i] = append(by[i], e)
		}
	}
	for i := range by {
		if len(by[i]) == 0 {
			continue
		}
		if i == 0 {
			f.nullIDs.addSorted(by[i])
		} else {
			f.ids[i].addSorted(by[i])
		}
		by[i] = by[i][:0]
	}
	fenFoldPool.Put(by)
	f.log = f.log[:0]
}

// addSorted adds ch (sorted by id; an id may repeat) to s, as add would
// one by one: in place where s has room, counts that reach zero dropped.
func (s *sparseCounts) addSorted(ch []idCountPair) {
	w := 0 // ch's repeats summed, zero sums dropped
	for _, c := range ch {
		if w > 0 && ch[w-1].id == c.id {
			ch[w-1].n += c.n
			if ch[w-1].n == 0 {
				w--
			}
			continue
		}
		ch[w] = c
		w++
	}
	ch = ch[:w]
	v := *s
	if len(v) > 32*len(ch) { // few changes: a search each
		for _, c := range ch {
			s.add(c.id, int64(c.n))
		}
		return
	}
	fresh := 0 // ids of ch not in v
	i := 0
	for _, c := range ch {
		for i < len(v) && v[i].id < c.id {
			i++
		}
		if i == len(v) || v[i].id != c.id {
			fresh++
		}
	}
	// Merged from the back, in place: v's room first.
	n := len(v)
	v = slices.Grow(v, fresh)[:n+fresh]
	i, j, k := n-1, len(ch)-1, len(v)-1
	zero := false
	for j >= 0 {
		switch {
		case i >= 0 && v[i].id > ch[j].id:
			v[k] = v[i]
			i--
		case i >= 0 && v[i].id == ch[j].id:
			v[k] = idCountPair{id: v[i].id, n: v[i].n + ch[j].n}
			zero = zero || v[k].n == 0
			i--
			j--
		default:
			v[k] = ch[j]
			j--
		}
		k--
	}
	if zero {
		v = slices.DeleteFunc(v, func(e idCountPair) bool { return e.n == 0 })
	}
	*s = v
}
