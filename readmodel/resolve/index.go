package resolve

import (
	"slices"
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// Index is the in-memory resolver. Upsert and Delete take its write lock,
// Search its read lock, so it is safe on its own; inside memory.Store the
// Store's lock already serialises writers, and the inner lock is
// uncontended. Search never writes shared state: every buffer, map and
// expansion it uses is allocated per call.
type Index struct {
	mu    sync.RWMutex
	docs  []doc            // slot -> document; dead slots are reused
	free  []int32          // dead slots
	ids   map[string]int32 // geo_id -> slot
	terms map[string][]int32
	zips  map[string][]int32 // 5-digit ZIP -> slots of ZIP locations
	trie  *trie
}

type doc struct {
	loc   readmodel.Location
	forms []form
	terms []string // distinct terms posted for this slot
	live  bool
}

// New returns an empty Index.
func New() *Index {
	return &Index{
		ids:   map[string]int32{},
		terms: map[string][]int32{},
		zips:  map[string][]int32{},
		trie:  newTrie(),
	}
}

// Len is the number of indexed locations.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Upsert adds loc or replaces the location with its geo_id. The index
// keeps its own copy.
func (x *Index) Upsert(loc readmodel.Location) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if slot, ok := x.ids[loc.GeoID]; ok {
		x.remove(slot)
	}
	var slot int32
	if n := len(x.free); n > 0 {
		slot, x.free = x.free[n-1], x.free[:n-1]
	} else {
		slot = int32(len(x.docs))
		x.docs = append(x.docs, doc{})
	}
	d := doc{loc: loc.Clone(), live: true}
	d.forms = formsOf(&d.loc)
	for _, f := range d.forms {
		for _, t := range f.toks {
			d.terms = appendUnique(d.terms, t.Text)
		}
		if len(f.toks) > 1 {
			d.terms = appendUnique(d.terms, f.compact)
		}
	}
	for _, t := range d.terms {
		p := x.terms[t]
		if len(p) == 0 {
			x.trie.set(t, true)
		}
		x.terms[t] = append(p, slot)
	}
	if z := zipOf(&d.loc); z != "" {
		x.zips[z] = append(x.zips[z], slot)
	}
	x.docs[slot] = d
	x.ids[loc.GeoID] = slot
}

// Delete removes the location with geoID; an unknown geo_id is a no-op.
func (x *Index) Delete(geoID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if slot, ok := x.ids[geoID]; ok {
		x.remove(slot)
	}
}

func (x *Index) remove(slot int32) {
	d := &x.docs[slot]
	for _, t := range d.terms {
		p := removeSlot(x.terms[t], slot)
		if len(p) == 0 {
			delete(x.terms, t)
			x.trie.set(t, false)
		} else {
			x.terms[t] = p
		}
	}
	if z := zipOf(&d.loc); z != "" {
		if p := removeSlot(x.zips[z], slot); len(p) == 0 {
			delete(x.zips, z)
		} else {
			x.zips[z] = p
		}
	}
	delete(x.ids, d.loc.GeoID)
	*d = doc{}
	x.free = append(x.free, slot)
}

func zipOf(loc *readmodel.Location) string {
	if loc.GeoType != readmodel.GeoZip {
		return ""
	}
	z := loc.Zipcode
	if z == "" {
		z = loc.Name
	}
	if len(z) != 5 || !isDigits(z) {
		return ""
	}
	return z
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// removeSlot removes slot from p (order is not kept).
func removeSlot(p []int32, slot int32) []int32 {
	for i, s := range p {
		if s == slot {
			p[i] = p[len(p)-1]
			return p[:len(p)-1]
		}
	}
	return p
}

// maxPrefixTerms bounds how many terms a prefix expands to.
const maxPrefixTerms = 256

// memoDistance is the distancer of one Search: the distances the trie walk
// found for each query word. A term absent from a word's map is farther
// than its budget - the walk is exhaustive over indexed terms, and every
// word of an indexed name is an indexed term - so it agrees with
// directDistance.
type memoDistance map[string]map[string]int

func (m memoDistance) distance(q, term string) (int, bool) {
	d, ok := m[q][term]
	return d, ok
}

// Search ranks the locations matching q (see the package documentation):
// at most q.Limit candidates ordered by Score descending, population
// descending, geo_id ascending; an empty slice when nothing matches.
// Candidates carry clones.
func (x *Index) Search(rq readmodel.ResolveQuery) []readmodel.Candidate {
	q := ParseQuery(rq)
	x.mu.RLock()
	defer x.mu.RUnlock()
	memo := memoDistance{}
	seen := map[int32]struct{}{}
	var slots []int32
	addSlots := func(p []int32) {
		for _, s := range p {
			if _, ok := seen[s]; !ok {
				seen[s] = struct{}{}
				slots = append(slots, s)
			}
		}
	}
	if q.Zip != "" {
		addSlots(x.zips[q.Zip])
	}
	for i := range q.Readings {
		r := &q.Readings[i]
		// Drive candidate generation from the word with the fewest
		// postings; matchForm checks the other words.
		var driver [][]int32
		driverSize := -1
		for ti, t := range r.Tokens {
			var lists [][]int32
			size := 0
			add := func(term string) {
				if p := x.terms[term]; len(p) > 0 {
					lists = append(lists, p)
					size += len(p)
				}
			}
			add(t.Text)
			if !r.Compact {
				if k := maxEdits(t.Text); k > 0 {
					if _, done := memo[t.Text]; !done {
						found := map[string]int{}
						x.trie.fuzzy(t.Text, k, func(term string, d int) {
							if term != t.Text && len(term) >= 4 {
								found[term] = d
							}
						})
						memo[t.Text] = found
					}
					for term := range memo[t.Text] {
						add(term)
					}
				}
				if ti == len(r.Tokens)-1 && len(t.Text) >= minPrefix {
					x.trie.withPrefix(t.Text, maxPrefixTerms, add)
				}
			}
			if size == 0 {
				driver, driverSize = nil, 0
				break
			}
			if driverSize < 0 || size < driverSize {
				driver, driverSize = lists, size
			}
		}
		for _, p := range driver {
			addSlots(p)
		}
	}
	matches := make([]Match, 0, len(slots))
	for _, s := range slots {
		d := &x.docs[s]
		if m, ok := scoreLoc(&q, &d.loc, d.forms, memo); ok {
			matches = append(matches, m)
		}
	}
	return Rank(matches, rq.Limit)
}
