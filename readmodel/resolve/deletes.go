package resolve

// deletes is a deletion neighbourhood for words that take two typos
// (query words of 8+ letters, which can reach terms of 6+ letters): every
// term of 6+ letters is posted under the hash of each string obtained by
// deleting up to two of its bytes. Two strings within two
// optimal-string-alignment edits share such a string (each substitution,
// insertion or transposition costs at most one deletion per side), so a
// query looks up the hashes of its own deletion variants and verifies each
// hit with osa. A hash collision only costs a verification.
type deletes struct {
	posts map[uint64][]int32 // variant hash -> term ids
	ids   map[string]int32
	terms []string // id -> term, "" when free
	free  []int32
}

// minDeleteTerm is the shortest term a two-typo query word can reach.
const minDeleteTerm = 6

func newDeletes() *deletes {
	return &deletes{posts: map[uint64][]int32{}, ids: map[string]int32{}}
}

// variants calls fn with the hash of s with up to two bytes deleted.
func variants(s string, fn func(h uint64)) {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	hash := func(skipA, skipB int) uint64 {
		h := uint64(offset)
		for i := 0; i < len(s); i++ {
			if i != skipA && i != skipB {
				h ^= uint64(s[i])
				h *= prime
			}
		}
		return h
	}
	fn(hash(-1, -1))
	for a := 0; a < len(s); a++ {
		fn(hash(a, -1))
		for b := a + 1; b < len(s); b++ {
			fn(hash(a, b))
		}
	}
}

func (d *deletes) add(term string) {
	if len(term) < minDeleteTerm {
		return
	}
	if _, ok := d.ids[term]; ok {
		return
	}
	var id int32
	if n := len(d.free); n > 0 {
		id, d.free = d.free[n-1], d.free[:n-1]
		d.terms[id] = term
	} else {
		id = int32(len(d.terms))
		d.terms = append(d.terms, term)
	}
	d.ids[term] = id
	variants(term, func(h uint64) {
		p := d.posts[h]
		if n := len(p); n > 0 && p[n-1] == id {
			return // the same variant twice ("seattle" without either t)
		}
		d.posts[h] = append(p, id)
	})
}

func (d *deletes) remove(term string) {
	id, ok := d.ids[term]
	if !ok {
		return
	}
	variants(term, func(h uint64) {
		if p := removeID(d.posts[h], id); len(p) == 0 {
			delete(d.posts, h)
		} else {
			d.posts[h] = p
		}
	})
	delete(d.ids, term)
	d.terms[id] = ""
	d.free = append(d.free, id)
}

// removeID removes id from p, keeping order (so the duplicate check in
// add stays valid).
func removeID(p []int32, id int32) []int32 {
	for i, v := range p {
		if v == id {
			return append(p[:i], p[i+1:]...)
		}
	}
	return p
}

// within2 calls fn once for every term within two edits of q (q itself
// excluded), with the distance.
func (d *deletes) within2(q string, fn func(term string, dist int)) {
	var seen map[int32]bool
	variants(q, func(h uint64) {
		for _, id := range d.posts[h] {
			if seen[id] {
				continue
			}
			if seen == nil {
				seen = map[int32]bool{}
			}
			seen[id] = true
			t := d.terms[id]
			if t == q {
				continue
			}
			if dist := osa(q, t, 2); dist <= 2 {
				fn(t, dist)
			}
		}
	})
}
