package memory

import (
	"math"
	"math/bits"
	"slices"
)

// Dense postings. A filter posting (permit_filters.go) saves a filtered
// page the permits of its geo that fail the filter. A value held by a
// large share of its geo's permits saves little: "Completed" is about
// 72% of a generated state's permits, so its posting holds nearly the
// geo's own set again, and a page read from the geo's set with the
// predicate meets 1.4 candidates a hit instead of one. Yet each such
// posting is one more ordered-set insert for every permit written: in
// the round of the real mix into a store of 5M permits
// (BenchmarkIngestMixFullStore) the postings lane was about a sixth of
// the CPU, nearly all of it seeks into large sets.
//
// So a posting whose value holds more than a quarter of its geo's
// permits (denseShare) is dense: it keeps no keys, only the count of
// its permits (blockSet.n), and a filtered page does not read it (the
// field's values are not a candidate set: filteredSet). A dense posting
// becomes a kept one again, built from the geo's set, once its value
// holds less than an eighth of the geo (sparseShare): between the two a
// posting stays what it was, so one that hovers about a share is not
// built and dropped by turns. A page filtered on a dense value meets at
// most about ten candidates a hit (an eighth, with the geo's growth
// between checks below), and with any other filtered field the smaller
// candidate set is read, as before.
//
// The density is checked after each batch, on the side's writer, with
// every lane joined (checkPostings): a posting is due a check when its
// count passes its mark (blockSet.mark: a kept one's count above a
// quarter of its geo at its last check, a dense one's below an eighth),
// and a geo's dense postings are when its set has grown by about a
// quarter since (grewTo). A new posting's mark is 0: its first permit
// makes it due. The counts are exact whatever the density: every write
// adds or removes a permit once per geo, as the keys of a kept posting
// would be, so a dense posting's count reaches 0 exactly when its last
// permit goes, and it is dropped then as an empty kept one is.
//
// Density changes no answer: every candidate is checked against the
// whole filter (match), and a field with a dense value is simply not
// used to narrow the candidates.
var (
	denseShare  = 4 // dense above 1/denseShare of the geo's permits (0: never; a variable for tests)
	sparseShare = 8 // kept again below 1/sparseShare
)

// due reports whether the posting t's density is to be checked: its
// count has passed its mark.
func (t *blockSet) due() bool {
	if t.dense {
		return t.n < int(t.mark)
	}
	return t.n > int(t.mark)
}

// setMark sets the count at which t, a posting of a geo of n permits, is
// due its next check.
func (t *blockSet) setMark(n int) {
	switch {
	case t.dense:
		t.mark = int32(n / sparseShare)
	case denseShare == 0: // never dense
		t.mark = math.MaxInt32
	default:
		t.mark = int32(n / denseShare)
	}
}

// denseSet is a dense posting of n permits in a geo of geoN.
func denseSet(slab *permitSlab, n, geoN int) *blockSet {
	t := &blockSet{slab: slab, n: n, dense: true}
	t.setMark(geoN)
	return t
}

// isDense reports whether a posting of n permits in a geo of geoN is
// made dense when built.
func isDense(n, geoN int) bool { return n*denseShare > geoN }

// count adds a permit to (add) or removes one from the dense posting t.
func (t *blockSet) count(add bool) {
	if add {
		t.n++
	} else {
		t.n--
	}
}

// grewTo notes that geo's set, t, now holds n permits: at each step of
// about a quarter of n (a power of two), geo's dense postings are due a
// check, as their shares fell. The check list is the main lane's
// (permit_lanes.go).
func (s *side) grewTo(geo uint32, n int) {
	if n < postingMin {
		return
	}
	step := 1 << max(0, bits.Len(uint(n))-3) // an eighth to a quarter of n
	if n&(step-1) == 0 {
		s.pf.geoCheck = append(s.pf.geoCheck, geo)
	}
}

// duePosting queues the posting k for a density check if t is due one
// (the postings lane's list).
func (s *side) duePosting(k fkey, t *blockSet) {
	if t.due() {
		s.pf.postCheck = append(s.pf.postCheck, k)
	}
}

// checkPostings checks the density of the postings and geos queued
// since the last check (the side's writer, no lane running).
func (s *side) checkPostings() {
	for _, geo := range s.pf.geoCheck {
		for _, k := range slices.Clone(s.pf.dense[geo]) {
			s.checkDensity(k)
		}
	}
	for _, k := range s.pf.postCheck {
		s.checkDensity(k)
	}
	s.pf.geoCheck, s.pf.postCheck = s.pf.geoCheck[:0], s.pf.postCheck[:0]
}

// checkDensity makes the posting k dense, or kept again, as its share
// of its geo says, and sets its next mark.
func (s *side) checkDensity(k fkey) {
	p, ok := s.pf.postings.get(k)
	if !ok || !s.pf.posted[k.geo] {
		return
	}
	g, ok := s.pi.geoIdx[k.geo]
	if !ok {
		return
	}
	n, t := g.size(), p.t
	switch {
	case !t.dense && isDense(t.n, n):
		t.pool, t.order, t.last, t.free = nil, nil, nil, nil
		t.dense = true
		s.pf.dense[k.geo] = append(s.pf.dense[k.geo], k)
	case t.dense && t.n*sparseShare < n:
		t = s.keptPosting(k, g)
		s.pf.postings.put(k, treeSet{t})
		s.undense(k)
	}
	t.setMark(n)
}

// keptPosting builds the posting k from its geo's set g.
func (s *side) keptPosting(k fkey, g treeSet) *blockSet {
	var keys []pkey
	var kvs [5]fieldValue
	g.t.scan(func(pk pkey) bool {
		for _, x := range kvs[:s.filterKeys(g.t.permit(pk), &kvs)] {
			if x.f == k.field && x.v == k.val {
				keys = append(keys, pk)
				break
			}
		}
		return true
	})
	return blockSetOf(s.pi.slab, keys)
}

// undense takes k off its geo's list of dense postings.
func (s *side) undense(k fkey) {
	l := s.pf.dense[k.geo]
	if i := slices.Index(l, k); i >= 0 {
		l = slices.Delete(l, i, i+1)
	}
	if len(l) == 0 {
		delete(s.pf.dense, k.geo)
	} else {
		s.pf.dense[k.geo] = l
	}
}
