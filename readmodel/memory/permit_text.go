package memory

import (
	"sort"
	"strings"

	"github.com/tidwall/btree"

	"github.com/permitd/permitd/readmodel"
)

// Full text (q, readmodel.TextQuery). The side keeps an inverted index of
// the english-analysed words of every permit's description and number:
// per word, the ordered set of the permits holding it (over every geo),
// and the sorted dictionary of words for prefixes. A q page reads from the
// smallest candidate set: the postings of one of q's words, the union of
// the postings of the words its prefix begins (when at most
// maxPrefixTerms), or the geo's own or a filter's postings; the rest
// (geo link, other words, filters) is checked on each candidate.

// maxPrefixTerms bounds the words a prefix may expand to as a candidate
// set; a shorter, commoner prefix is only checked on candidates.
const maxPrefixTerms = 64

// smallPosting is the size up to which a posting is a sorted slice (most
// words of permit numbers belong to one permit).
const smallPosting = 32

type textIndex struct {
	postings map[string]*posting
	dict     *btree.BTreeG[string]
	desc     map[uint32]descTerms // description text id -> its words
}

type descTerms struct {
	src   string
	terms []string
}

func newTextIndex() textIndex {
	return textIndex{
		postings: map[string]*posting{},
		dict:     btree.NewBTreeGOptions(func(a, b string) bool { return a < b }, btree.Options{NoLocks: true}),
		desc:     map[uint32]descTerms{},
	}
}

// posting is an ordered permit set: a slice while small, then a B-tree.
type posting struct {
	small sliceSet
	tree  *treeSet
}

func (p *posting) add(c *cpermit) {
	if p.tree != nil {
		p.tree.set(c)
		return
	}
	p.small = insertSorted(p.small, c)
	if len(p.small) > smallPosting {
		t := treeSet{btree.NewBTreeGOptions(pkeyLess, btree.Options{NoLocks: true, Degree: 16})}
		for _, x := range p.small {
			t.set(x)
		}
		p.tree, p.small = &t, nil
	}
}

func (p *posting) del(c *cpermit) {
	if p.tree != nil {
		p.tree.delete(c)
		return
	}
	p.small = removeSorted(p.small, c)
}

func (p *posting) size() int {
	if p.tree != nil {
		return p.tree.size()
	}
	return len(p.small)
}

func (p *posting) set() iterable {
	if p.tree != nil {
		return *p.tree
	}
	return p.small
}

// descWords returns the words of a description text (the side's writer
// fills the cache; a live permit's text id is never reused).
func (s *side) descWords(id uint32) []string {
	src := s.pi.texts.str(id)
	if d, ok := s.pf.text.desc[id]; ok && d.src == src {
		return d.terms
	}
	terms := readmodel.EnglishTerms(src)
	s.pf.text.desc[id] = descTerms{src: src, terms: terms}
	return terms
}

// permitWords are the distinct words of c's description and number (the
// side's writer).
func (s *side) permitWords(c *cpermit) []string {
	words := append([]string(nil), s.descWords(c.desc)...)
	words = append(words, readmodel.EnglishTerms(s.permitNumber(c))...)
	out := words[:0]
	for _, w := range words {
		if !containsStr(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (s *side) indexText(c *cpermit) {
	for _, w := range s.permitWords(c) {
		p, ok := s.pf.text.postings[w]
		if !ok {
			p = &posting{}
			s.pf.text.postings[w] = p
			s.pf.text.dict.Set(w)
		}
		p.add(c)
	}
}

func (s *side) unindexText(c *cpermit) {
	for _, w := range s.permitWords(c) {
		if p, ok := s.pf.text.postings[w]; ok {
			p.del(c)
			if p.size() == 0 {
				delete(s.pf.text.postings, w)
				s.pf.text.dict.Delete(w)
			}
		}
	}
}

// textMatch checks q on one permit (a reader). The description's words
// come from the cache; a word the description lacks may be a word of the
// permit number, which is checked in that word's posting (one seek)
// instead of analysing the number per candidate.
func (s *side) textMatch(tq *readmodel.TextQuery, c *cpermit) bool {
	d := s.pf.text.desc[c.desc].terms
	for _, w := range tq.Words {
		if !containsStr(d, w) && !s.inPosting(w, c) {
			return false
		}
	}
	for _, w := range d {
		if strings.HasPrefix(w, tq.Prefix) {
			return true
		}
	}
	found, terms := false, 0
	s.pf.text.dict.Ascend(tq.Prefix, func(w string) bool {
		if !strings.HasPrefix(w, tq.Prefix) || terms == maxPrefixTerms {
			return false
		}
		terms++
		found = s.inPosting(w, c)
		return !found
	})
	if terms == maxPrefixTerms && !found { // a prefix of many words: analyse the number
		for _, w := range readmodel.EnglishTerms(s.permitNumber(c)) {
			if strings.HasPrefix(w, tq.Prefix) {
				return true
			}
		}
	}
	return found
}

// inPosting reports whether c holds word w.
func (s *side) inPosting(w string, c *cpermit) bool {
	p := s.pf.text.postings[w]
	if p == nil {
		return false
	}
	if p.tree != nil {
		_, ok := p.tree.t.Get(keyOf(c))
		return ok
	}
	i := sort.Search(len(p.small), func(i int) bool { return !permitLess(p.small[i], c) })
	return i < len(p.small) && p.small[i] == c
}

// textCandidates returns the smallest candidate set q offers and its
// size; ok false when q matches nothing at all. n is -1 when q offers no
// set smaller than limit.
func (s *side) textCandidates(tq *readmodel.TextQuery, limit int) (set permitSet, n int, ok bool) {
	n = -1
	for _, w := range tq.Words {
		p := s.pf.text.postings[w]
		if p == nil {
			return nil, 0, false
		}
		if p.size() < limit {
			set, n, limit = p.set(), p.size(), p.size()
		}
	}
	var sets []iterable
	total, terms := 0, 0
	s.pf.text.dict.Ascend(tq.Prefix, func(w string) bool {
		if !strings.HasPrefix(w, tq.Prefix) {
			return false
		}
		terms++
		if terms > maxPrefixTerms {
			return false
		}
		p := s.pf.text.postings[w]
		sets = append(sets, p.set())
		total += p.size()
		return true
	})
	if terms == 0 {
		return nil, 0, false
	}
	if terms <= maxPrefixTerms && total < limit {
		set, n = unionOf(sets), total
	}
	return set, n, true
}

// linked reports whether c is linked to geo (a symbol).
func (s *side) linked(c *cpermit, geo uint32) bool {
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == geo {
			return true
		}
	}
	return false
}
