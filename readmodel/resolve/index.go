package resolve

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/permitd/permitd/readmodel"
)

// Index is the in-memory resolver. Upsert and Delete take its write lock,
// Search its read lock, so it is safe on its own; inside memory.Store the
// Store's lock already serialises writers, and the inner lock is
// uncontended. Search never writes shared state: every buffer, map and
// expansion it uses is allocated per call.
type Index struct {
	mu    sync.RWMutex
	docs  docPages         // slot -> document; dead slots are reused
	free  []int32          // dead slots
	ids   map[string]int32 // geo_id -> slot
	terms map[string][]int32
	// compacts posts multi-word names by their joined words
	// ("sedrowoolley"); exact lookup only, kept out of the trie.
	compacts map[string][]int32
	zips     map[string][]int32 // 5-digit ZIP -> slots of ZIP locations
	trie     *trie              // every term: prefixes and one-typo walks
	// dels holds the terms of 6+ letters for two-typo lookups. It is
	// built by the first lookup that needs it (deletes) or by Warm, not
	// term by term as locations arrive: posting a term's deletion
	// variants (up to 56 map entries for ten letters, 440,214 posts for
	// the national gazetteer) was a third of Upsert's time, paid in a
	// replay or a snapshot load before the store was ready. Once built,
	// Upsert and Delete keep it (they hold mu; a build holds mu's read
	// side, so the two never overlap).
	dels      *deletes
	delsMu    sync.Mutex  // serialises the build among readers
	delsBuilt atomic.Bool // dels is built and kept
}

type doc struct {
	loc      readmodel.Location
	forms    []form
	terms    []string // distinct terms posted for this slot
	compacts []string // distinct joined names posted for this slot
	live     bool
}

// New returns an empty Index.
func New() *Index {
	return &Index{
		ids:      map[string]int32{},
		terms:    map[string][]int32{},
		compacts: map[string][]int32{},
		zips:     map[string][]int32{},
		trie:     newTrie(),
	}
}

// Reserve sizes an empty index for n locations, so that its maps are not
// grown (each split of a table rehashing its keys) while a side's index
// is built in one go (the memory store's late index after a replay or a
// snapshot load, and its second side's): in the real mix's replay that
// growth was about 1.7% of a round's CPU profile. The other maps are sized by the bundled US
// gazetteer's proportions (98,016 locations: 40,977 ZIPs, 15,535 terms,
// 11,907 joined names). It does nothing to an index that holds any.
func (x *Index) Reserve(n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n <= 0 || len(x.ids) > 0 || len(x.terms) > 0 || len(x.compacts) > 0 || len(x.zips) > 0 {
		return
	}
	// A quarter over: a map made for n entries spreads them over tables
	// that each split when full, and some fill before the map holds n.
	x.ids = make(map[string]int32, n+n/4)
	x.zips = make(map[string][]int32, n/2+n/8)
	x.terms = make(map[string][]int32, n/5)
	x.compacts = make(map[string][]int32, n/6)
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
		slot = x.docs.grow()
	}
	d := doc{loc: loc.Clone(), live: true}
	d.forms = formsOf(&d.loc)
	for _, f := range d.forms {
		for _, t := range f.toks {
			d.terms = appendUnique(d.terms, t.Text)
		}
		if len(f.toks) > 1 {
			d.compacts = appendUnique(d.compacts, f.compact)
		}
	}
	for _, t := range d.terms {
		p := x.terms[t]
		if len(p) == 0 {
			x.trie.set(t, true)
			if x.delsBuilt.Load() {
				x.dels.add(t)
			}
		}
		x.terms[t] = append(p, slot)
	}
	for _, c := range d.compacts {
		x.compacts[c] = append(x.compacts[c], slot)
	}
	if z := zipOf(&d.loc); z != "" {
		x.zips[z] = append(x.zips[z], slot)
	}
	*x.docs.at(slot) = d
	x.ids[loc.GeoID] = slot
}

// Warm builds what the index leaves to its first two-typo lookup (the
// deletion neighbourhood), so that no search pays for it. It takes the
// read lock: writers wait for it, readers do not.
func (x *Index) Warm() {
	x.mu.RLock()
	defer x.mu.RUnlock()
	x.deletes()
}

// Warmed reports whether what Warm builds is built.
func (x *Index) Warmed() bool { return x.delsBuilt.Load() }

// deletes returns the deletion neighbourhood, built from the posted
// terms the first time (the caller holds mu, either side).
func (x *Index) deletes() *deletes {
	if x.delsBuilt.Load() {
		return x.dels
	}
	x.delsMu.Lock()
	defer x.delsMu.Unlock()
	if !x.delsBuilt.Load() {
		d := newDeletes()
		for t := range x.terms {
			d.add(t)
		}
		x.dels = d
		x.delsBuilt.Store(true)
	}
	return x.dels
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
	d := x.docs.at(slot)
	for _, t := range d.terms {
		p := removeSlot(x.terms[t], slot)
		if len(p) == 0 {
			delete(x.terms, t)
			x.trie.set(t, false)
			if x.delsBuilt.Load() {
				x.dels.remove(t)
			}
		} else {
			x.terms[t] = p
		}
	}
	for _, c := range d.compacts {
		if p := removeSlot(x.compacts[c], slot); len(p) == 0 {
			delete(x.compacts, c)
		} else {
			x.compacts[c] = p
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

// docPages holds the documents in fixed pages, so that a growing index
// never copies (or makes the collector rescan) the documents it already
// holds: a flat slice of them doubled and copied about 100 MB of
// pointer-filled documents while the national gazetteer was indexed.
type docPages struct {
	pages [][]doc
	n     int32
}

const docPage = 1024

func (p *docPages) at(slot int32) *doc { return &p.pages[slot/docPage][slot%docPage] }

// grow adds an empty document and returns its slot.
func (p *docPages) grow() int32 {
	if int(p.n) == len(p.pages)*docPage {
		p.pages = append(p.pages, make([]doc, docPage))
	}
	p.n++
	return p.n - 1
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

// withZipPrefix calls fn with the slots of every indexed ZIP that starts
// with the digits p. It looks up each 5-digit code p can begin - at most
// 100 map lookups for 3 digits, 10 for 4 - so the ZIP map needs no
// sorted companion to keep in step with Upsert and Delete.
func (x *Index) withZipPrefix(p string, fn func([]int32)) {
	if len(p) == 0 || len(p) > 5 || !isDigits(p) {
		return
	}
	var code [5]byte
	copy(code[:], p)
	n := 1
	for range 5 - len(p) {
		n *= 10
	}
	for i := range n {
		for j, v := 4, i; j >= len(p); j, v = j-1, v/10 {
			code[j] = byte('0' + v%10)
		}
		if s := x.zips[string(code[:])]; len(s) > 0 {
			fn(s)
		}
	}
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

// Candidate generation bounds (they bound recall, not scoring): the last
// word expands to at most maxPrefixTerms terms it begins, and, when it is
// the reading's only word, only when the word itself has at most
// maxPrefixExact postings.
const (
	maxPrefixTerms = 256
	maxPrefixExact = 50
)

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
	if q.ZipPrefix != "" {
		x.withZipPrefix(q.ZipPrefix, addSlots)
	}
	for i := range q.Readings {
		r := &q.Readings[i]
		// Drive candidate generation from the word with the fewest
		// postings; keep the slots whose terms reach every other word
		// (matchForm then checks positions and distances).
		type expansion struct {
			lists [][]int32
			terms map[string]struct{}
			size  int
		}
		exps := make([]expansion, 0, len(r.Tokens))
		for ti, t := range r.Tokens {
			if ti == len(r.Tokens)-1 && ti > 0 && !r.Compact && (len(t.Text) < minPrefix || len(t.Surface) == 1) &&
				Prefixable(len(prefixText(t)), len(r.Tokens)) {
				// A short last word ("Port An", "Lake Forest P", "Port W")
				// begins too many terms to expand: the other words drive,
				// and matchForm checks it against each candidate's name
				// (exactly, or as a prefix of the word as written).
				continue
			}
			e := expansion{terms: map[string]struct{}{}}
			add := func(term string) {
				if p := x.terms[term]; len(p) > 0 {
					e.lists = append(e.lists, p)
					e.terms[term] = struct{}{}
					e.size += len(p)
				}
			}
			add(t.Text)
			for _, a := range t.Alts {
				add(a)
			}
			exact := e.size
			if len(r.Tokens) == 1 {
				if p := x.compacts[t.Text]; len(p) > 0 {
					e.lists = append(e.lists, p)
					e.size += len(p)
				}
			}
			if !r.Compact && !t.Exact {
				// A common name word ("Port", "Lake", "Fort") is meant as
				// typed: its typo neighbours are other places' whole
				// names ("Post", "Laie", "Ford") that would outrank the
				// names that have the word.
				if k := maxEdits(t.Text); k > 0 && exact <= maxPrefixExact {
					if _, done := memo[t.Text]; !done {
						found := map[string]int{}
						collect := func(term string, d int) {
							if term != t.Text && len(term) >= 4 {
								found[term] = d
							}
						}
						if k == 2 {
							x.deletes().within2(t.Text, collect)
						} else {
							x.trie.fuzzy(t.Text, k, collect)
						}
						memo[t.Text] = found
					}
					for term := range memo[t.Text] {
						add(term)
					}
				}
				// A complete word that is a common name ("Lake", "Oak")
				// expands to the names it begins only when another word
				// of the reading constrains the candidates ("Thousand
				// Oak"): alone, its prefixes would crowd out the names
				// that have the word ("San" -> Sandy over San Diego).
				if ti == len(r.Tokens)-1 && len(t.Text) >= minPrefix && (exact <= maxPrefixExact || len(r.Tokens) > 1) {
					x.trie.withPrefix(t.Text, maxPrefixTerms, add)
				}
			}
			if e.size == 0 {
				exps = nil
				break
			}
			exps = append(exps, e)
		}
		if len(exps) == 0 {
			continue
		}
		slices.SortFunc(exps, func(a, b expansion) int { return a.size - b.size })
		for _, p := range exps[0].lists {
		slot:
			for _, s := range p {
				if _, ok := seen[s]; ok {
					continue
				}
				for _, e := range exps[1:] {
					reached := false
					for _, term := range x.docs.at(s).terms {
						if _, ok := e.terms[term]; ok {
							reached = true
							break
						}
					}
					if !reached {
						continue slot
					}
				}
				seen[s] = struct{}{}
				slots = append(slots, s)
			}
		}
	}
	matches := make([]Match, 0, len(slots))
	for _, s := range slots {
		d := x.docs.at(s)
		if m, ok := scoreLoc(&q, &d.loc, d.forms, memo); ok {
			matches = append(matches, m)
		}
	}
	return Rank(matches, rq.Limit)
}
