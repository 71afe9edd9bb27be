package memory

import (
	"context"
	"encoding/hex"
	"hash/maphash"
	"strings"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
)

// Properties are kept per property id (16 bytes, not a 37-byte string) in
// one entry that also holds the property's permits, so a permit may arrive
// before its property. Three address indexes chain the live entries under
// a 64-bit hash (entries are checked against the key, so collisions only
// lengthen a chain):
//
//   - byStreet: normalised street line ("600 UNIVERSITY ST"), for inputs
//     without a city;
//   - byStreetCity: street line and normalised city, the usual lookup (a
//     street name such as "100 MAIN ST" recurs in thousands of cities);
//   - byHouse: house number and city, the candidates of a fuzzy match.

const (
	propNone    uint8 = iota // no document yet (permits only)
	propLive                 // a live document
	propDeleted              // a tombstone
)

// cproperty is a property document in compact form; immutable once stored.
type cproperty struct {
	canonical string
	norm      string // shares canonical's bytes when it is its prefix
	parcel    string
	lat, lon  float64 // NaN: null
	links     uint32
	city      uint32 // symbols
	ncity     uint32 // address.NormalizeCity(city)
	state     uint32
	zip       uint32
}

type propEntry struct {
	ref     propRef
	state   uint8
	version int64
	doc     *cproperty // nil unless live
	permits slotKeys   // sorted by permitLess

	// address index chains
	nextStreet, nextStreetCity, nextHouse *propEntry
}

// propertyTable is the versioned property table: the same version rule
// and tombstones as table, keyed by propRef.
type propertyTable struct {
	m            map[propRef]*propEntry
	live         int
	seed         maphash.Seed
	byStreet     map[uint64]*propEntry
	byStreetCity map[uint64]*propEntry
	byHouse      map[uint64]*propEntry
}

func newPropertyTable() *propertyTable {
	return &propertyTable{
		m:    map[propRef]*propEntry{},
		seed: maphash.MakeSeed(), byStreet: map[uint64]*propEntry{},
		byStreetCity: map[uint64]*propEntry{}, byHouse: map[uint64]*propEntry{},
	}
}

func (t *propertyTable) hash(a string) uint64 { return maphash.String(t.seed, a) }

func (t *propertyTable) hash2(a string, b uint32) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	h.WriteString(a)
	h.WriteByte(0)
	h.WriteByte(byte(b))
	h.WriteByte(byte(b >> 8))
	h.WriteByte(byte(b >> 16))
	h.WriteByte(byte(b >> 24))
	return h.Sum64()
}

// liveProperty is the entry of the property geo names (geo.IsProperty),
// nil when that property is not live.
func (s *side) liveProperty(geo readmodel.GeoRef) *propEntry {
	var k propKey
	if !geo.IsProperty() {
		return nil
	}
	if _, err := hex.Decode(k[:], []byte(geo.ID()[len("prop_"):])); err != nil {
		return nil // IsProperty holds only for prop_ and 32 hex digits
	}
	e := s.props.entry(propRef{key: k, kind: 1}, false)
	if e == nil || e.state != propLive {
		return nil
	}
	return e
}

// entry returns the entry of ref, creating it when create is set.
func (t *propertyTable) entry(ref propRef, create bool) *propEntry {
	e := t.m[ref]
	if e == nil && create {
		e = &propEntry{ref: ref}
		t.m[ref] = e
	}
	return e
}

// gc drops an entry that holds nothing: no document, no tombstone, no
// permits.
func (t *propertyTable) gc(e *propEntry) {
	if e.state == propNone && len(e.permits) == 0 {
		delete(t.m, e.ref)
	}
}

// each calls fn for every live property.
func (t *propertyTable) each(fn func(e *propEntry)) {
	for _, e := range t.m {
		if e.state == propLive {
			fn(e)
		}
	}
}

func (t *propertyTable) link(e *propEntry) { t.linkKeys(e, t.chainKeys(e)) }

// chainKeys are a property's keys in the three address chains.
type chainKeys struct {
	street, streetCity, house uint64
	hasHouse                  bool
}

func (t *propertyTable) chainKeys(e *propEntry) chainKeys {
	k := chainKeys{street: t.hash(e.doc.norm), streetCity: t.hash2(e.doc.norm, e.doc.ncity)}
	if h := propmatch.HouseNumber(e.doc.norm); h != "" {
		k.house, k.hasHouse = t.hash2(h, e.doc.ncity), true
	}
	return k
}

func (t *propertyTable) linkKeys(e *propEntry, k chainKeys) {
	e.nextStreet = t.byStreet[k.street]
	t.byStreet[k.street] = e
	e.nextStreetCity = t.byStreetCity[k.streetCity]
	t.byStreetCity[k.streetCity] = e
	if k.hasHouse {
		e.nextHouse = t.byHouse[k.house]
		t.byHouse[k.house] = e
	}
}

// stagedRun is how many lookups into a large map a bulk write makes
// before it uses any of them (linkAll, touchEntries, table.touchRun and the
// Import's compactor, importStages). A lookup into a map of a million
// keys waits for memory, and the next one in the same loop waits behind
// it when the loop uses its answer first; a loop that only looks up lets
// the processor wait for several at once, and the write that follows
// finds them in the cache. A run is short, so what it brought in is
// still in the cache when the write reaches it.
const stagedRun = 32

// linkAll links new properties into the address chains as link does,
// their chains' lookups made a run at a time before the links
// (stagedRun). It returns how many chains it found begun (the staged
// lookups' answers, used so that they are made).
func (t *propertyTable) linkAll(es []*propEntry) (seen int) {
	var keys [stagedRun]chainKeys
	for lo := 0; lo < len(es); lo += stagedRun {
		run := es[lo:min(lo+stagedRun, len(es))]
		for i, e := range run {
			k := t.chainKeys(e)
			keys[i] = k
			if t.byStreet[k.street] != nil {
				seen++
			}
			if t.byStreetCity[k.streetCity] != nil {
				seen++
			}
			if k.hasHouse && t.byHouse[k.house] != nil {
				seen++
			}
		}
		for i, e := range run {
			t.linkKeys(e, keys[i])
		}
	}
	return seen
}

// touchEntries looks up the property entries of permits (a run, before
// they are indexed: stagedRun) and returns how many hold a document.
func (t *propertyTable) touchEntries(run []*cpermit) (seen int) {
	var es [stagedRun]*propEntry
	for i, c := range run {
		if c.prop.kind != 0 {
			es[i] = t.m[c.prop]
		}
	}
	for _, e := range es[:len(run)] { // then the entries themselves
		if e != nil && e.state != propNone {
			seen++
		}
	}
	return seen
}

func (t *propertyTable) unlink(e *propEntry) {
	unchain(t.byStreet, t.hash(e.doc.norm), e, func(x *propEntry) **propEntry { return &x.nextStreet })
	unchain(t.byStreetCity, t.hash2(e.doc.norm, e.doc.ncity), e, func(x *propEntry) **propEntry { return &x.nextStreetCity })
	if h := propmatch.HouseNumber(e.doc.norm); h != "" {
		unchain(t.byHouse, t.hash2(h, e.doc.ncity), e, func(x *propEntry) **propEntry { return &x.nextHouse })
	}
}

func unchain(m map[uint64]*propEntry, key uint64, e *propEntry, next func(*propEntry) **propEntry) {
	head := m[key]
	if head == e {
		if n := *next(e); n != nil {
			m[key] = n
		} else {
			delete(m, key)
		}
		*next(e) = nil
		return
	}
	for x := head; x != nil; x = *next(x) {
		if *next(x) == e {
			*next(x) = *next(e)
			*next(e) = nil
			return
		}
	}
}

// putProperty stores a property (the side's writer); true when it took.
func (s *side) putProperty(p readmodel.Property, shape uint32) bool {
	ref := s.propRefOf(p.PropertyID)
	t := s.props
	e := t.entry(ref, true)
	if e.state != propNone && p.Version <= e.version && !s.relinksProperty(e, p) {
		return false
	}
	c := s.compactProperty(p, shape)
	if e.state == propLive {
		t.unlink(e)
	} else {
		t.live++
	}
	e.state, e.version, e.doc = propLive, p.Version, c
	t.link(e)
	return true
}

// compactProperty converts a document (the side's writer) whose links'
// shape is shape (readmodel.LinkShapes; 0: none known).
func (s *side) compactProperty(p readmodel.Property, shape uint32) *cproperty {
	c := &cproperty{
		canonical: p.CanonicalAddress,
		norm:      p.NormalizedAddress,
		parcel:    p.ParcelID,
		lat:       nanOf(p.Lat),
		lon:       nanOf(p.Lon),
		city:      s.pi.syms.id(p.City),
		state:     s.pi.syms.id(p.State),
		zip:       s.pi.syms.id(p.Zipcode),
	}
	c.ncity = s.pi.syms.normCity(c.city)
	if strings.HasPrefix(c.canonical, c.norm) {
		c.norm = c.canonical[:len(c.norm)]
	}
	c.links = s.pi.links.shaped(s.pi.syms, p.GeoLinks, p.PropertyID, shape)
	return c
}

func (s *side) delProperty(id string, version int64) bool {
	t := s.props
	e := t.entry(s.propRefOf(id), true)
	if e.state != propNone && !readmodel.DeleteTakes(version, e.version, e.state == propDeleted) {
		return false
	}
	if e.state == propLive {
		t.unlink(e)
		t.live--
	}
	e.state, e.version, e.doc = propDeleted, version, nil
	return true
}

func (s *side) expandProperty(e *propEntry) readmodel.Property {
	c := e.doc
	id := s.propString(e.ref)
	return readmodel.Property{
		PropertyID:        id,
		CanonicalAddress:  c.canonical,
		NormalizedAddress: c.norm,
		City:              s.pi.syms.str(c.city),
		State:             s.pi.syms.str(c.state),
		Zipcode:           s.pi.syms.str(c.zip),
		ParcelID:          c.parcel,
		Lat:               ptrOf(c.lat),
		Lon:               ptrOf(c.lon),
		GeoLinks:          s.pi.links.expand(s.pi.syms, c.links, id),
		Version:           e.version,
	}
}

// maxFuzzyScan bounds the entries one fuzzy lookup walks on a house
// number chain.
const maxFuzzyScan = 20000

// SearchProperties implements readmodel.Reader with the rules of package
// propmatch: exact (1.0), normalized (0.95), fuzzy (0.5..0.85, same house
// number and city), city, state and ZIP hints as filters, ambiguity
// factor 0.8. An input without a house number matches nothing.
func (s *side) SearchProperties(ctx context.Context, q readmodel.PropertyQuery) ([]readmodel.PropertyMatch, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	pq, hits := s.propertyHits(q)
	out := make([]readmodel.PropertyMatch, 0, len(hits))
	for _, h := range hits {
		out = append(out, pq.Match(s.expandProperty(h.Property), h.Score))
	}
	return out, nil
}

// propertyHits runs a property search (a reader of the side) and returns the
// parsed query with the ranked entries. The hints become symbols, so the
// filter compares handles; candidates come from the street (or street and
// city) chain and, for the fuzzy fallback, the house number and city
// chain.
func (s *side) propertyHits(pq readmodel.PropertyQuery) (propmatch.Query, []propmatch.Hit[*propEntry]) {
	q, ok := propmatch.Parse(pq)
	if !ok {
		return q, nil
	}
	// Hints as symbols: a hint no property has matches nothing.
	citySym, ok1 := s.pi.syms.lookup(q.City)
	stateSym, ok2 := s.pi.syms.lookup(q.State)
	zipSym, ok3 := s.pi.syms.lookup(q.Zip)
	if !ok1 || !ok2 || !ok3 {
		return q, nil
	}
	hints := propmatch.Locality[uint32]{City: citySym, State: stateSym, Zip: zipSym}
	t := s.props
	var hits []propmatch.Hit[*propEntry]
	head, next := t.byStreet[t.hash(q.Street)], func(e *propEntry) *propEntry { return e.nextStreet }
	if q.City != "" {
		head, next = t.byStreetCity[t.hash2(q.Street, citySym)], func(e *propEntry) *propEntry { return e.nextStreetCity }
	}
	for e := head; e != nil; e = next(e) {
		if sc, ok := propmatch.ScoreStreet(&q, hints, e.doc.candidate()); ok {
			hits = append(hits, propmatch.Hit[*propEntry]{Property: e, ID: s.propString(e.ref), Score: sc})
		}
	}
	if q.Fuzzy(len(hits)) {
		n := 0
		for e := t.byHouse[t.hash2(q.Number, citySym)]; e != nil && n < maxFuzzyScan; e = e.nextHouse {
			n++
			if sc, ok := propmatch.ScoreFuzzy(&q, hints, e.doc.candidate()); ok {
				hits = append(hits, propmatch.Hit[*propEntry]{Property: e, ID: s.propString(e.ref), Score: sc})
			}
		}
	}
	return q, propmatch.Rank(hits, pq.Limit)
}

// candidate is what the property scorer reads, hints as symbols.
func (c *cproperty) candidate() propmatch.Candidate[uint32] {
	return propmatch.Candidate[uint32]{Canonical: c.canonical, Norm: c.norm,
		Locality: propmatch.Locality[uint32]{City: c.ncity, State: c.state, Zip: c.zip}}
}

// propertyCandidates ranks properties for address-like resolve text and
// presents them with propmatch.ResolveCandidate.
func (s *side) propertyCandidates(q readmodel.ResolveQuery) []readmodel.Candidate {
	if !propmatch.LooksLikeAddress(q.Text) {
		return []readmodel.Candidate{}
	}
	pq, hits := s.propertyHits(readmodel.PropertyQuery{Address: q.Text, State: q.State, Limit: q.Limit})
	out := make([]readmodel.Candidate, 0, len(hits))
	for _, h := range hits {
		m := pq.Match(s.expandProperty(h.Property), h.Score)
		out = append(out, propmatch.ResolveCandidate(m, s.propertyLocation(h.Property, m.Property)))
	}
	return out
}

// propertyLocation presents a live property, p its document, as a
// location of the property scope (a reader of the side), its hierarchy taken
// from its links.
func (s *side) propertyLocation(e *propEntry, p readmodel.Property) readmodel.Location {
	return readmodel.PropertyLocation(p, s.locations.get, int64(len(e.permits)), latest(sliceSet{e.permits, s.pi.slab}))
}
