package memory

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/readmodel"
)

// symbols interns repeated strings (permit types, statuses, sources,
// cities, geo_ids, link methods) as uint32 handles, so a million permits
// hold a handful of copies of "Issued". Handle 0 is "". Symbols are never
// freed: their number is bounded by the vocabulary, not by the documents
// (strings that are not, such as descriptions, are texts). Guarded by the
// the side's single writer; read only by readers of that side.
type symbols struct {
	ids  map[string]uint32
	strs []string
	fast *symCache // once a side's symbols are many (cached); nil before
	// cached: a side's own symbols, which take a symCache once they hold
	// cacheFrom strings (a view's copy for another goroutine takes none).
	cached bool
	ncity  []uint32 // ncity[id]-1 is the handle of address.NormalizeCity(strs[id]); 0: not known yet (normCity)
}

// symCache finds the handle of a string by the address of its bytes
// before the map is asked: an Import's documents come from a snapshot
// decoder that shares repeated short strings (indexer/snapshot), so most
// of a permit's symbols (its type, status, city, the geo_ids, methods and
// types of its links) are strings seen before, at the same address, and
// a slot's pointer comparison replaces a hash of the string and a
// comparison of its bytes. Applied documents share them too: the event
// decoder hands out one string for a recent short value (events'
// strCache), and the projection's links name the indexer's location
// table's geo_ids (indexer/locations.go). So every side, an Import's as
// a live one, takes its caches once it holds cacheFrom symbols or link
// lists, and keeps them (a small store, as most tests make, takes none:
// the two are 5 MB a side). A slot keeps its string, so the
// address cannot be reused for other bytes while the slot holds it;
// strings are immutable, so the same address and length are the same
// string.
type symCache [symCacheSlots]symSlot

type symSlot struct {
	s  string
	id uint32
}

const symCacheBits = 17
const symCacheSlots = 1 << symCacheBits

// cacheFrom is the number of symbols (link lists) from which a side's
// symbols (link sets) take their address cache.
const cacheFrom = 1024

func newSymbols() *symbols {
	return &symbols{ids: map[string]uint32{"": 0}, strs: []string{""}}
}

// id interns s (the side's writer).
func (t *symbols) id(s string) uint32 {
	if t.fast == nil && t.cached && len(t.strs) >= cacheFrom {
		t.fast = new(symCache)
	}
	if t.fast != nil && len(s) > 0 {
		slot := &t.fast[(strAddr(s)*0x9e3779b97f4a7c15)>>(64-symCacheBits)]
		if sameStr(slot.s, s) {
			return slot.id
		}
		id := t.intern(s)
		slot.s, slot.id = s, id
		return id
	}
	return t.intern(s)
}

func (t *symbols) intern(s string) uint32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	s = strings.Clone(s) // do not pin the caller's buffer
	id := uint32(len(t.strs))
	t.strs = append(t.strs, s)
	t.ids[s] = id
	return id
}

// normCity interns address.NormalizeCity of the symbol id (the side's
// writer). Each city is normalized once: a property's write normalized
// its city every time (a new string, then a hash of it), about an eighth
// of putProperty in a snapshot load's profile.
func (t *symbols) normCity(id uint32) uint32 {
	if int(id) < len(t.ncity) {
		if n := t.ncity[id]; n != 0 {
			return n - 1
		}
	} else {
		t.ncity = append(t.ncity, make([]uint32, int(id)+1-len(t.ncity))...)
	}
	n := t.intern(address.NormalizeCity(t.strs[id]))
	t.ncity[id] = n + 1
	return n
}

// lookup returns the handle of s without interning it.
func (t *symbols) lookup(s string) (uint32, bool) {
	id, ok := t.ids[s]
	return id, ok
}

func (t *symbols) str(id uint32) string { return t.strs[id] }

// is reports whether id is the handle of s.
func (t *symbols) is(id uint32, s string) bool { return t.strs[id] == s }

// texts interns strings that are nearly one per document (permit
// descriptions, permit numbers) with reference counts, so permits with the
// same text share it and a text no permit holds any more is freed: a
// long-running process that sees permits change and go does not keep every
// description it ever saw. Handle 0 is "". Written only by the side's writer.
type texts struct {
	ids  map[string]uint32
	strs []string
	refs []uint32
	free []uint32 // handles of freed texts, for reuse
}

func newTexts() *texts {
	return &texts{ids: map[string]uint32{"": 0}, strs: []string{""}, refs: []uint32{0}}
}

// acquire interns s and counts one more holder (the side's writer).
func (t *texts) acquire(s string) uint32 {
	if s == "" {
		return 0
	}
	if id, ok := t.ids[s]; ok {
		t.refs[id]++
		return id
	}
	s = strings.Clone(s) // do not pin the caller's buffer
	var id uint32
	if n := len(t.free); n > 0 {
		id, t.free = t.free[n-1], t.free[:n-1]
		t.strs[id], t.refs[id] = s, 1
	} else {
		id = uint32(len(t.strs))
		t.strs, t.refs = append(t.strs, s), append(t.refs, 1)
	}
	t.ids[s] = id
	return id
}

// release counts one holder less and frees the text when none is left
// (the side's writer).
func (t *texts) release(id uint32) {
	if id == 0 {
		return
	}
	if t.refs[id]--; t.refs[id] == 0 {
		delete(t.ids, t.strs[id])
		t.strs[id] = ""
		t.free = append(t.free, id)
	}
}

func (t *texts) str(id uint32) string { return t.strs[id] }

// live is the number of texts held.
func (t *texts) live() int { return len(t.ids) - 1 }

// clink is a geo link in compact form.
type clink struct {
	geo    uint32 // symbol of the geo_id; selfProperty for the permit's own property
	conf   uint32 // confidence in millionths
	method uint32 // symbol
	typ    uint32 // symbol of the geo type
}

// selfProperty marks a link to the document's own PropertyID, so that the
// link sets of permits of different properties can be shared.
const selfProperty = ^uint32(0)

// linkSets interns whole link lists: every permit of one ZIP with the same
// ZIP source shares one list. Handle 0 is the empty list.
type linkSets struct {
	byHash map[uint64]uint32   // lists of up to 8 links by linkHash
	small  map[smallSet]uint32 // lists of up to 8 links whose hash another list holds
	ids    map[string]uint32   // longer lists
	sets   [][]clink
	fast   *linkCache // once the side holds cacheFrom lists (cached); nil before
	cached bool       // a side's own link sets (symbols.cached)
	// byShape holds, by the shape of a list (readmodel.LinkShapes,
	// while an Import builds the side), its handle + 1 for a document
	// whose property links are all to its own property (shaped).
	byShape []uint32
}

// linkCache finds the handle of a document's link list by the addresses
// of its strings, before they are interned one by one: as symCache for
// single strings, since a snapshot decoder hands out one string for all
// occurrences of a geo_id, a type and a method. A permit's list of five
// links took fifteen symbol lookups, a hash and a map lookup; a list seen
// before now takes one slot's comparison. A link to the document's own
// property (a new string for every document) is compared as that, not
// by address, as the list's handle records it (selfProperty). A slot
// keeps its list's strings, so their addresses cannot be reused for
// other bytes while it holds them.
type linkCache [linkCacheSlots]linkSlot

type linkSlot struct {
	links []readmodel.GeoLink // a copy; nil: empty slot
	self  uint8               // bit i: link i is a link to the document's own property
	id    uint32
}

const linkCacheBits = 16
const linkCacheSlots = 1 << linkCacheBits

// isSelf reports whether l is a link to prop, the document's own
// property (compact's selfProperty).
func isSelf(l *readmodel.GeoLink, prop string) bool {
	return l.GeoType == readmodel.GeoProperty && l.GeoID == prop && prop != ""
}

func strAddr(s string) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) }

// sameStr reports whether a and b are one string by address and length.
func sameStr(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// slot returns the cache slot of links and their self-link bits.
func (c *linkCache) slot(links []readmodel.GeoLink, prop string) (*linkSlot, uint8) {
	h := uint64(len(links)) * 0x9e3779b97f4a7c15
	var self uint8
	for i := range links {
		l := &links[i]
		g := strAddr(l.GeoID) ^ uint64(len(l.GeoID))<<48
		if isSelf(l, prop) {
			self |= 1 << i
			g = 1
		}
		h = (h ^ g) * 0xbf58476d1ce4e5b9
		h = (h ^ strAddr(l.Method) ^ strAddr(string(l.GeoType))<<17 ^ math.Float64bits(l.Confidence)) * 0x94d049bb133111eb
		h ^= h >> 29
	}
	return &c[h>>(64-linkCacheBits)], self
}

// matches reports whether the slot holds links (with the self bits self).
func (sl *linkSlot) matches(links []readmodel.GeoLink, self uint8) bool {
	if sl.links == nil || len(sl.links) != len(links) || sl.self != self {
		return false
	}
	for i := range links {
		a, b := &sl.links[i], &links[i]
		if self&(1<<i) == 0 && !sameStr(a.GeoID, b.GeoID) {
			return false
		}
		if !sameStr(a.Method, b.Method) || !sameStr(string(a.GeoType), string(b.GeoType)) ||
			math.Float64bits(a.Confidence) != math.Float64bits(b.Confidence) {
			return false
		}
	}
	return true
}

type smallSet struct {
	n     int
	links [8]clink
}

func newLinkSets() *linkSets {
	return &linkSets{byHash: map[uint64]uint32{}, small: map[smallSet]uint32{}, ids: map[string]uint32{}, sets: [][]clink{nil}}
}

// linkHash hashes a short link list in a few multiplications: a map
// keyed by the whole smallSet hashed and compared its 136 bytes for
// every document (a tenth of a snapshot load's permit conversion).
func linkHash(links []clink) uint64 {
	h := uint64(len(links)) * 0x9e3779b97f4a7c15
	for _, l := range links {
		h = (h ^ (uint64(l.geo) | uint64(l.conf)<<32)) * 0xbf58476d1ce4e5b9
		h = (h ^ (uint64(l.method) | uint64(l.typ)<<32)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// id interns links of a document whose property is prop (the side's writer).
func (ls *linkSets) id(syms *symbols, links []readmodel.GeoLink, prop string) uint32 {
	if len(links) == 0 {
		return 0
	}
	if ls.fast == nil && ls.cached && len(ls.sets) >= cacheFrom {
		ls.fast = new(linkCache)
	}
	if ls.fast != nil && len(links) <= 8 {
		sl, self := ls.fast.slot(links, prop)
		if sl.matches(links, self) {
			return sl.id
		}
		id := ls.intern(syms, links, prop)
		sl.links, sl.self, sl.id = slices.Clone(links), self, id
		return id
	}
	return ls.intern(syms, links, prop)
}

// shaped is id for links of the given shape (readmodel.LinkShapes; 0:
// none known). Documents of one shape have the same links but for the
// GeoIDs of their property links; when every property link is to the
// document's own property (compacted as selfProperty), they have the
// same compact list, so it is looked up once per shape and then found
// by the shape alone. A document with a link to another property has
// its links interned as id does.
func (ls *linkSets) shaped(syms *symbols, links []readmodel.GeoLink, prop string, shape uint32) uint32 {
	if shape == 0 || !allSelf(links, prop) {
		return ls.id(syms, links, prop)
	}
	if int(shape) < len(ls.byShape) {
		if h := ls.byShape[shape]; h != 0 {
			return h - 1
		}
	} else {
		ls.byShape = append(ls.byShape, make([]uint32, int(shape)+1-len(ls.byShape))...)
		ls.byShape = ls.byShape[:cap(ls.byShape)]
	}
	id := ls.id(syms, links, prop)
	ls.byShape[shape] = id + 1
	return id
}

// allSelf reports whether every property link of links is to prop, the
// document's own property.
func allSelf(links []readmodel.GeoLink, prop string) bool {
	for i := range links {
		if l := &links[i]; l.GeoType == readmodel.GeoProperty && !isSelf(l, prop) {
			return false
		}
	}
	return true
}

// intern interns links of a document whose property is prop.
func (ls *linkSets) intern(syms *symbols, links []readmodel.GeoLink, prop string) uint32 {
	compact := func(l readmodel.GeoLink) clink {
		g := selfProperty
		if !isSelf(&l, prop) {
			g = syms.id(l.GeoID)
		}
		return clink{geo: g, conf: toMillionths(l.Confidence), method: syms.id(l.Method), typ: syms.id(string(l.GeoType))}
	}
	if len(links) <= 8 {
		k := smallSet{n: len(links)}
		for i, l := range links {
			k.links[i] = compact(l)
		}
		h := linkHash(k.links[:k.n])
		first, hashed := ls.byHash[h]
		if hashed && slices.Equal(ls.sets[first], k.links[:k.n]) {
			return first
		}
		if hashed { // another list of the same hash
			if id, ok := ls.small[k]; ok {
				return id
			}
		}
		id := uint32(len(ls.sets))
		ls.sets = append(ls.sets, append([]clink(nil), k.links[:k.n]...))
		if hashed {
			ls.small[k] = id
		} else {
			ls.byHash[h] = id
		}
		return id
	}
	cl := make([]clink, len(links))
	var key strings.Builder
	for i, l := range links {
		cl[i] = compact(l)
		g := cl[i].geo
		key.WriteString(strconv.FormatUint(uint64(g), 36))
		key.WriteByte(',')
		key.WriteString(strconv.FormatUint(uint64(cl[i].conf), 36))
		key.WriteByte(',')
		key.WriteString(strconv.FormatUint(uint64(cl[i].method), 36))
		key.WriteByte(',')
		key.WriteString(strconv.FormatUint(uint64(cl[i].typ), 36))
		key.WriteByte(';')
	}
	k := key.String()
	if id, ok := ls.ids[k]; ok {
		return id
	}
	id := uint32(len(ls.sets))
	ls.sets = append(ls.sets, cl)
	ls.ids[k] = id
	return id
}

func (ls *linkSets) get(id uint32) []clink { return ls.sets[id] }

// expand rebuilds the links of a document whose property is prop.
func (ls *linkSets) expand(syms *symbols, id uint32, prop string) []readmodel.GeoLink {
	cl := ls.sets[id]
	if len(cl) == 0 {
		return nil
	}
	out := make([]readmodel.GeoLink, len(cl))
	for i, c := range cl {
		g := prop
		if c.geo != selfProperty {
			g = syms.str(c.geo)
		}
		out[i] = readmodel.GeoLink{GeoID: g, GeoType: readmodel.GeoType(syms.str(c.typ)), Confidence: fromMillionths(c.conf), Method: syms.str(c.method)}
	}
	return out
}

func toMillionths(f float64) uint32 {
	switch {
	case !(f > 0): // also NaN
		return 0
	case f >= 1:
		return 1e6
	}
	return uint32(f*1e6 + 0.5)
}

func fromMillionths(u uint32) float64 { return float64(u) / 1e6 }

// permitIndexes are a side's permit and property indexes beyond the
// tables: interned strings and link sets shared by permits and properties,
// and the permits linked to each geo_id (permits.go).
type permitIndexes struct {
	syms   *symbols
	texts  *texts // descriptions and permit numbers
	links  *linkSets
	geoIdx map[uint32]treeSet
	// deferred holds the geo sets instead of geoIdx while an Import
	// defers its geo indexes (permit_bulk.go).
	deferred *geoLists
	order    *indexOrder // shared with the side's views (import_stages.go)
	slab     *permitSlab // the stored permits' slots (permit_slab.go)
}

func newPermitIndexes() permitIndexes {
	syms, links := newSymbols(), newLinkSets()
	syms.cached, links.cached = true, true
	return permitIndexes{syms: syms, texts: newTexts(), links: links, geoIdx: map[uint32]treeSet{}, order: &indexOrder{sorted: true}, slab: newPermitSlab()}
}

// indexOrder follows the order in which a side's permits are indexed
// (indexPermit). Every sorted list of the side's permits (a geo's set, a
// property's permits, a map cell's, a permit number's, a text posting)
// holds only permits indexed on the side. So while the permit being
// indexed sorts after every permit indexed before it, as each of a
// snapshot's does (memory.Export writes them in index order), it sorts
// after everything in those lists: it is appended to them with no
// comparison, which in a large store is a cache miss on the permit it
// would be compared with. A permit that does not (Apply's new permits
// sort first) is inserted as before. The permits of a deferred geo list
// (permit_bulk.go) are then in order too, unless one ever was not
// (sorted).
type indexOrder struct {
	max    *cpermit // the greatest permit indexed so far
	last   bool     // max is the permit being indexed, and sorts after every earlier one
	sorted bool     // every permit indexed so far sorted after the ones before it
}

// next records c as the permit being indexed (the side's writer).
func (o *indexOrder) next(c *cpermit) {
	o.last = o.max == nil || permitLess(o.max, c)
	if o.last {
		o.max = c
	} else {
		o.sorted = false
	}
}

// appends reports whether c, being indexed, sorts after every permit
// indexed on the side before it.
func (o *indexOrder) appends(c *cpermit) bool { return o.last && o.max == c }

// insertPermit adds c, being indexed, to the sorted list l.
func (s *side) insertPermit(l slotKeys, c *cpermit) slotKeys {
	if s.pi.order.appends(c) {
		k := keyOf(c)
		if n := len(l); n > 0 && l[n-1] == k {
			return l // added already
		}
		return append(l, k)
	}
	return insertSorted(s.pi.slab, l, c)
}
