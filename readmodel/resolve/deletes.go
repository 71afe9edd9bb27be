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
	// heads maps a variant's hash to its newest post in links (index+1);
	// each post links to the one posted before it under the same hash.
	// One map entry and one arena slot per post, where a slice per
	// variant cost an allocation each (387,780 variants and 440,214 posts
	// for the national gazetteer's 12,418 terms of 6+ letters).
	heads map[uint64]int32
	links []post
	spare int32 // free posts in links, chained by next (index+1)
	ids   map[string]int32
	terms []string // id -> term, "" when free
	free  []int32
}

type post struct {
	id   int32
	next int32 // index+1 of the previous post under the hash, 0 at the end
}

// minDeleteTerm is the shortest term a two-typo query word can reach.
const minDeleteTerm = 6

func newDeletes() *deletes {
	return &deletes{heads: map[uint64]int32{}, ids: map[string]int32{}}
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
		head := d.heads[h]
		if head != 0 && d.links[head-1].id == id {
			return // the same variant twice ("seattle" without either t)
		}
		d.heads[h] = d.newPost(post{id: id, next: head})
	})
}

// newPost stores p in a spare slot or at the end and returns its index+1.
func (d *deletes) newPost(p post) int32 {
	if i := d.spare; i != 0 {
		d.spare = d.links[i-1].next
		d.links[i-1] = p
		return i
	}
	d.links = append(d.links, p)
	return int32(len(d.links))
}

func (d *deletes) remove(term string) {
	id, ok := d.ids[term]
	if !ok {
		return
	}
	variants(term, func(h uint64) { d.unpost(h, id) })
	delete(d.ids, term)
	d.terms[id] = ""
	d.free = append(d.free, id)
}

// unpost removes one post of id under h (the newest, so that the
// duplicate check in add stays valid).
func (d *deletes) unpost(h uint64, id int32) {
	prev := int32(0)
	for i := d.heads[h]; i != 0; prev, i = i, d.links[i-1].next {
		if d.links[i-1].id != id {
			continue
		}
		next := d.links[i-1].next
		switch {
		case prev != 0:
			d.links[prev-1].next = next
		case next != 0:
			d.heads[h] = next
		default:
			delete(d.heads, h)
		}
		d.links[i-1] = post{next: d.spare}
		d.spare = i
		return
	}
}

// within2 calls fn once for every term within two edits of q (q itself
// excluded), with the distance.
func (d *deletes) within2(q string, fn func(term string, dist int)) {
	var seen map[int32]bool
	variants(q, func(h uint64) {
		for i := d.heads[h]; i != 0; i = d.links[i-1].next {
			id := d.links[i-1].id
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
