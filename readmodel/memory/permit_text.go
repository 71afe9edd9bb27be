package memory

import (
	"slices"
	"strings"

	"github.com/tidwall/btree"

	"github.com/permitd/permitd/readmodel"
)

// Full text (q: readmodel.IsPermitNumber or readmodel.TextQuery). The
// side keeps a map of folded permit numbers and an inverted index of the
// english-analysed words of every permit's description:
// per word, the ordered set of the permits holding it (over every geo),
// and the sorted dictionary of words for prefixes. A q page reads from the
// smallest candidate set: the postings of one of q's words, the union of
// the postings of the words its prefix begins (when at most
// maxPrefixTerms), or the geo's own or a filter's postings; the rest
// (geo link, other words, filters) is checked on each candidate.

// maxPrefixTerms bounds the words a prefix may expand to as a candidate
// set; a shorter, commoner prefix is only checked on candidates.
const maxPrefixTerms = 64

// smallPosting is the size up to which a posting is a sorted slice.
const smallPosting = 32

type textIndex struct {
	postings map[string]*posting
	dict     *btree.BTreeG[string]
	desc     map[uint32]descTerms // description text id -> its words
	numbers  map[string]slotKeys  // FoldValue(permit number) -> permits
	// Description groups (see descGroup): descN counts the indexed
	// permits of each description text id not grouped yet; groups holds
	// the grouped ones.
	descN  map[uint32]int32
	groups map[uint32]*descGroup
}

// descGroup holds the permits of one description once groupMin of them
// are indexed. Descriptions repeat (templates: gen's permits have two
// dozen), and a permit of a grouped description is added to its group's
// set alone instead of to the posting of every word of it (a few inserts
// into the largest trees of the side); each of those words' postings
// names the group instead, and reads take the group's set in the union
// of the word's sets. A permit is in its group or in its words' own
// postings, never both, so a posting's size stays exact. The group lasts
// while it holds a permit.
type descGroup struct {
	set   posting
	words []string // the description's distinct words
}

// groupMin is the number of permits of a description from which they
// are grouped (descGroup).
var groupMin = 64

type descTerms struct {
	src   string
	terms []string
	words []string // terms' distinct words, in first-seen order
}

func newTextIndex() textIndex {
	return textIndex{
		postings: map[string]*posting{},
		dict:     btree.NewBTreeGOptions(func(a, b string) bool { return a < b }, btree.Options{NoLocks: true}),
		desc:     map[uint32]descTerms{},
		numbers:  map[string]slotKeys{},
		descN:    map[uint32]int32{},
		groups:   map[uint32]*descGroup{},
	}
}

// posting is an ordered permit set: a slice while small, then a B-tree.
// A word's posting also names the description groups holding the word
// (groups: their permits are not in small or tree).
type posting struct {
	small  slotKeys
	tree   *treeSet
	groups []*descGroup
}

// add adds c: appended with no comparison when last (c sorts after
// every permit in the posting: indexOrder); bulk (an Import's side,
// permits likely in order) appends it when it sorts last, and inserts it
// when it does not.
func (p *posting) add(slab *permitSlab, c *cpermit, bulk, last bool) {
	if p.tree != nil {
		switch {
		case last:
			p.tree.t.appendSorted(c)
		case bulk:
			p.tree.t.load(c)
		default:
			p.tree.set(c)
		}
		return
	}
	if last {
		p.small = append(p.small, keyOf(c))
	} else {
		p.small = insertSorted(slab, p.small, c)
	}
	if len(p.small) > smallPosting {
		t := newTreeSet(slab)
		for _, x := range p.small {
			t.set(slab.at(x.slot))
		}
		p.tree, p.small = &t, nil
	}
}

// post adds c, being indexed on the side, to p (add's cases: appended
// when it sorts last, loaded while the side is bulk loaded, else
// inserted).
func (s *side) post(p *posting, c *cpermit) {
	p.add(s.pi.slab, c, s.bulk, s.pi.order.appends(c))
}

func (p *posting) del(slab *permitSlab, c *cpermit) {
	if p.tree != nil {
		p.tree.delete(c)
		return
	}
	p.small = removeSorted(slab, p.small, c)
}

// own is the number of permits in the posting itself, groups aside.
func (p *posting) own() int {
	if p.tree != nil {
		return p.tree.size()
	}
	return len(p.small)
}

// size is the number of permits of the posting and of its groups.
func (p *posting) size() int {
	n := p.own()
	for _, g := range p.groups {
		n += g.set.own()
	}
	return n
}

func (p *posting) ownSet(slab *permitSlab) iterable {
	if p.tree != nil {
		return *p.tree
	}
	return sliceSet{p.small, slab}
}

// sets appends to dst the posting's own set (when not empty) and its
// groups' sets that dst does not hold yet (seen: groups already added);
// their union is the posting's permits.
func (p *posting) sets(slab *permitSlab, dst []iterable, seen map[*descGroup]bool) []iterable {
	if p.own() > 0 {
		dst = append(dst, p.ownSet(slab))
	}
	for _, g := range p.groups {
		if seen != nil {
			if seen[g] {
				continue
			}
			seen[g] = true
		}
		dst = append(dst, g.set.ownSet(slab))
	}
	return dst
}

// set is the posting's permits as one ordered set.
func (p *posting) set(slab *permitSlab) permitSet { return unionOf(p.sets(slab, nil, nil)) }

// descWords returns the analysed words of a description text and their
// distinct words (the side's writer fills the cache, once per text; a
// live permit's text id is never reused).
func (s *side) descWords(id uint32) descTerms {
	src := s.pi.texts.str(id)
	if d, ok := s.pf.text.desc[id]; ok && d.src == src {
		return d
	}
	terms := readmodel.EnglishTerms(src)
	var words []string
	for _, w := range terms {
		if !containsStr(words, w) {
			words = append(words, w)
		}
	}
	d := descTerms{src: src, terms: terms, words: slices.Clip(words)}
	s.pf.text.desc[id] = d
	return d
}

// permitWords are the distinct words of c's description (the side's
// writer; the cache's slice, not to be changed).
func (s *side) permitWords(c *cpermit) []string { return s.descWords(c.desc).words }

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (s *side) indexText(c *cpermit) {
	s.indexWords(c)
	if n := readmodel.FoldValue(s.permitNumber(c)); n != "" {
		s.pf.text.numbers[n] = s.insertPermit(s.pf.text.numbers[n], c)
	}
}

func (s *side) unindexText(c *cpermit) {
	s.unindexWords(c)
	if n := readmodel.FoldValue(s.permitNumber(c)); n != "" {
		if l := removeSorted(s.pi.slab, s.pf.text.numbers[n], c); len(l) > 0 {
			s.pf.text.numbers[n] = l
		} else {
			delete(s.pf.text.numbers, n)
		}
	}
}

// indexWords adds c to the postings of its description's words, or to
// its description's group (descGroup).
func (s *side) indexWords(c *cpermit) {
	t := &s.pf.text
	if g := t.groups[c.desc]; g != nil {
		s.post(&g.set, c)
		return
	}
	words := s.permitWords(c)
	if len(words) == 0 {
		return
	}
	for _, w := range words {
		p, ok := t.postings[w]
		if !ok {
			p = &posting{}
			t.postings[w] = p
			t.dict.Set(w)
		}
		s.post(p, c)
	}
	t.descN[c.desc]++
	if t.descN[c.desc] >= int32(groupMin) {
		s.groupDesc(c.desc, words)
	}
}

// groupDesc moves the permits of description id, whose distinct words
// are words, from the words' own postings to a new group.
func (s *side) groupDesc(id uint32, words []string) {
	t := &s.pf.text
	delete(t.descN, id)
	var members []*cpermit
	t.postings[words[0]].ownSet(s.pi.slab).ascend(&cpermit{ik: minIK}, func(c *cpermit) bool {
		if c.desc == id {
			members = append(members, c)
		}
		return true
	})
	g := &descGroup{words: slices.Clone(words)}
	for _, c := range members { // in order: each appends
		g.set.add(s.pi.slab, c, true, false)
	}
	for _, w := range words {
		p := t.postings[w]
		for _, c := range members {
			p.del(s.pi.slab, c)
		}
		p.groups = append(p.groups, g)
	}
	t.groups[id] = g
}

// unindexWords removes c from its words' postings or its group; a group
// without permits goes, and so does a word left without any.
func (s *side) unindexWords(c *cpermit) {
	t := &s.pf.text
	if g := t.groups[c.desc]; g != nil {
		g.set.del(s.pi.slab, c)
		if g.set.own() > 0 {
			return
		}
		delete(t.groups, c.desc)
		for _, w := range g.words {
			if p, ok := t.postings[w]; ok {
				p.groups = slices.DeleteFunc(p.groups, func(x *descGroup) bool { return x == g })
				s.dropEmpty(w, p)
			}
		}
		return
	}
	words := s.permitWords(c)
	if len(words) == 0 {
		return
	}
	if t.descN[c.desc]--; t.descN[c.desc] <= 0 {
		delete(t.descN, c.desc)
	}
	for _, w := range words {
		if p, ok := t.postings[w]; ok {
			p.del(s.pi.slab, c)
			s.dropEmpty(w, p)
		}
	}
}

// dropEmpty removes word w's posting p when it holds no permit.
func (s *side) dropEmpty(w string, p *posting) {
	if p.size() == 0 {
		delete(s.pf.text.postings, w)
		s.pf.text.dict.Delete(w)
	}
}

// textMatch checks q on one permit (a reader): its number, or its
// description's words from the cache.
func (s *side) textMatch(q string, tq *readmodel.TextQuery, c *cpermit) bool {
	return tq.Match(s.pf.text.desc[c.desc].terms) || readmodel.IsPermitNumber(q, s.permitNumber(c))
}

// textCandidates returns the smallest candidate set q offers and its
// size, or n = -1 when q offers no set smaller than limit: the permits
// numbered q together with the description candidates (the postings of
// one of q's words, or the union of the postings of the words its prefix
// begins when there are at most maxPrefixTerms).
func (s *side) textCandidates(q string, tq *readmodel.TextQuery, limit int) (set permitSet, n int) {
	if s.lean { // no text index yet (permit_bulk.go): q is checked on each candidate
		return nil, -1
	}
	numbered := sliceSet{s.pf.text.numbers[readmodel.FoldValue(q)], s.pi.slab}
	descSet, descN := s.descCandidates(tq, limit-numbered.size())
	switch {
	case descN < 0:
		return nil, -1
	case descN == 0:
		return numbered, numbered.size()
	case numbered.size() == 0:
		return descSet, descN
	}
	if u, ok := descSet.(unionSet); ok {
		return append(unionSet{numbered}, u...), descN + numbered.size()
	}
	return unionSet{descSet.(iterable), numbered}, descN + numbered.size()
}

// descCandidates: 0 when no description can match, -1 when none of q's
// sets is smaller than limit.
func (s *side) descCandidates(tq *readmodel.TextQuery, limit int) (permitSet, int) {
	if tq.Prefix == "" {
		return nil, 0
	}
	var set permitSet
	n := -1
	for _, w := range tq.Words {
		p := s.pf.text.postings[w]
		if p == nil {
			return nil, 0
		}
		if m := p.size(); m < limit {
			set, n, limit = p.set(s.pi.slab), m, m
		}
	}
	var sets []iterable
	seen := map[*descGroup]bool{}
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
		sets = p.sets(s.pi.slab, sets, seen)
		total += p.size()
		return true
	})
	if terms == 0 {
		return nil, 0
	}
	if terms <= maxPrefixTerms && total < limit {
		if len(sets) == 1 {
			return sets[0], total
		}
		return unionSet(sets), total
	}
	return set, n
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
