package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"strings"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/address"
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
	permits []*cpermit // sorted by permitLess

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

func propRefIfKey(id string) (propRef, bool) {
	k, ok := parsePropKey(id)
	return propRef{key: k, kind: 1}, ok
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

func houseNumber(street string) string {
	n, _, _ := strings.Cut(street, " ")
	if n == "" || n[0] < '0' || n[0] > '9' {
		return ""
	}
	return n
}

func (t *propertyTable) link(e *propEntry) {
	k := t.hash(e.doc.norm)
	e.nextStreet = t.byStreet[k]
	t.byStreet[k] = e
	k = t.hash2(e.doc.norm, e.doc.ncity)
	e.nextStreetCity = t.byStreetCity[k]
	t.byStreetCity[k] = e
	if h := houseNumber(e.doc.norm); h != "" {
		k = t.hash2(h, e.doc.ncity)
		e.nextHouse = t.byHouse[k]
		t.byHouse[k] = e
	}
}

func (t *propertyTable) unlink(e *propEntry) {
	unchain(t.byStreet, t.hash(e.doc.norm), e, func(x *propEntry) **propEntry { return &x.nextStreet })
	unchain(t.byStreetCity, t.hash2(e.doc.norm, e.doc.ncity), e, func(x *propEntry) **propEntry { return &x.nextStreetCity })
	if h := houseNumber(e.doc.norm); h != "" {
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

// putProperty stores a property (write lock held); true when it took.
func (s *Store) putProperty(p readmodel.Property) bool {
	ref := s.propRefOf(p.PropertyID)
	t := s.props
	e := t.entry(ref, true)
	if e.state != propNone && p.Version <= e.version {
		return false
	}
	c := &cproperty{
		canonical: p.CanonicalAddress,
		norm:      p.NormalizedAddress,
		parcel:    p.ParcelID,
		lat:       nanOf(p.Lat),
		lon:       nanOf(p.Lon),
		city:      s.pi.syms.id(p.City),
		ncity:     s.pi.syms.id(address.NormalizeCity(p.City)),
		state:     s.pi.syms.id(p.State),
		zip:       s.pi.syms.id(p.Zipcode),
	}
	if strings.HasPrefix(c.canonical, c.norm) {
		c.norm = c.canonical[:len(c.norm)]
	}
	c.links = s.pi.links.id(s.pi.syms, p.GeoLinks, p.PropertyID)
	if e.state == propLive {
		t.unlink(e)
	} else {
		t.live++
	}
	e.state, e.version, e.doc = propLive, p.Version, c
	t.link(e)
	return true
}

func (s *Store) delProperty(id string, version int64) bool {
	t := s.props
	e := t.entry(s.propRefOf(id), true)
	if e.state != propNone && version <= e.version {
		return false
	}
	if e.state == propLive {
		t.unlink(e)
		t.live--
	}
	e.state, e.version, e.doc = propDeleted, version, nil
	return true
}

func (s *Store) expandProperty(e *propEntry) readmodel.Property {
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

// Property search confidences.
const (
	confExact      = 1.0
	confNormalized = 0.95
	confFuzzyMax   = 0.85
	confFuzzyMin   = 0.5
	fuzzyMinSim    = 0.75 // street similarity below this is not plausible
	ambiguity      = 0.8  // factor when several properties match equally well
	maxFuzzyScan   = 20000
)

type propertyHit struct {
	e      *propEntry
	conf   float64
	typ    string
	fields []string
}

// SearchProperties implements readmodel.Reader.
//
// The address is normalised with package address (USPS Publication 28),
// its locality tail ("..., Seattle, WA 98101") read as hints; q.City,
// q.State and q.Zipcode override those. Matching, best first:
//
//   - exact (1.0): the input, upper-cased with whitespace collapsed, is the
//     canonical address or the normalised street line;
//   - normalized (0.95): the normalised street lines are equal;
//   - fuzzy (0.5..0.85): same house number and city, street similarity
//     (edit distance ratio) at least 0.75; only when nothing matched
//     above and a city is known.
//
// City, state and ZIP hints are filters (a property without a ZIP passes
// the ZIP filter). When several properties match at the best level the
// confidence of each is multiplied by 0.8: the input is ambiguous. An
// input without a house number matches nothing.
func (s *Store) SearchProperties(ctx context.Context, q readmodel.PropertyQuery) ([]readmodel.PropertyMatch, error) {
	if q.Limit < 1 || q.Limit > 20 {
		return nil, fmt.Errorf("%w: property limit %d", readmodel.ErrInvalidQuery, q.Limit)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.searchProperties(q), nil
}

// searchProperties runs a property search (read lock held).
func (s *Store) searchProperties(q readmodel.PropertyQuery) []readmodel.PropertyMatch {
	in := address.Normalize(q.Address)
	city := address.NormalizeCity(q.City)
	if city == "" {
		city = in.City
	}
	state := address.NormalizeState(q.State)
	if state == "" {
		state = in.State
	}
	zip := strings.TrimSpace(q.Zipcode)
	if len(zip) > 5 {
		zip = zip[:5]
	}
	if zip == "" {
		zip = in.Zip
	}
	street := in.Street()
	normInput := address.Canonical(in.Line(), city, state, zip)
	typed := strings.Join(strings.Fields(strings.ToUpper(q.Address)), " ")
	if in.Number == "" || in.Name == "" {
		return []readmodel.PropertyMatch{}
	}

	// Hints as symbols: a hint no property has matches nothing.
	citySym, ok1 := s.pi.syms.lookup(city)
	stateSym, ok2 := s.pi.syms.lookup(state)
	zipSym, ok3 := s.pi.syms.lookup(zip)
	if !ok1 || !ok2 || !ok3 {
		return []readmodel.PropertyMatch{}
	}
	filter := func(c *cproperty) ([]string, bool) {
		fields := []string{"address"}
		if city != "" {
			if c.ncity != citySym {
				return nil, false
			}
			fields = append(fields, "city")
		}
		if state != "" {
			if c.state != stateSym {
				return nil, false
			}
			fields = append(fields, "state")
		}
		if zip != "" {
			if c.zip != 0 && c.zip != zipSym {
				return nil, false
			}
			if c.zip == zipSym {
				fields = append(fields, "zipcode")
			}
		}
		return fields, true
	}

	var hits []propertyHit
	head, next := s.props.byStreet[s.props.hash(street)], func(e *propEntry) *propEntry { return e.nextStreet }
	if city != "" {
		head, next = s.props.byStreetCity[s.props.hash2(street, citySym)], func(e *propEntry) *propEntry { return e.nextStreetCity }
	}
	for e := head; e != nil; e = next(e) {
		if e.doc.norm != street {
			continue
		}
		fields, ok := filter(e.doc)
		if !ok {
			continue
		}
		h := propertyHit{e: e, conf: confNormalized, typ: "normalized", fields: fields}
		if typed == e.doc.canonical || typed == e.doc.norm {
			h.conf, h.typ = confExact, "exact"
		}
		hits = append(hits, h)
	}
	if len(hits) == 0 && city != "" {
		rest := strings.TrimPrefix(street, in.Number+" ")
		n := 0
		for e := s.props.byHouse[s.props.hash2(in.Number, citySym)]; e != nil && n < maxFuzzyScan; e = e.nextHouse {
			n++
			if houseNumber(e.doc.norm) != in.Number {
				continue
			}
			fields, ok := filter(e.doc)
			if !ok {
				continue
			}
			sim := similarity(rest, strings.TrimPrefix(e.doc.norm, in.Number+" "))
			if sim < fuzzyMinSim {
				continue
			}
			conf := confFuzzyMin + (confFuzzyMax-confFuzzyMin)*(sim-fuzzyMinSim)/(1-fuzzyMinSim)
			hits = append(hits, propertyHit{e: e, conf: math.Round(conf*1e4) / 1e4, typ: "fuzzy", fields: fields})
		}
	}
	if len(hits) > 1 {
		best := 0.0
		for _, h := range hits {
			best = max(best, h.conf)
		}
		tied := 0
		for _, h := range hits {
			if h.conf >= best-0.05 {
				tied++
			}
		}
		if tied > 1 {
			for i := range hits {
				hits[i].conf = math.Round(hits[i].conf*ambiguity*1e4) / 1e4
			}
		}
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = s.propString(h.e.ref)
	}
	idx := make([]int, len(hits))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		ha, hb := hits[idx[a]], hits[idx[b]]
		if ha.conf != hb.conf {
			return ha.conf > hb.conf
		}
		return ids[idx[a]] < ids[idx[b]]
	})
	out := make([]readmodel.PropertyMatch, 0, min(len(hits), q.Limit))
	for _, i := range idx[:min(len(idx), q.Limit)] {
		h := hits[i]
		out = append(out, readmodel.PropertyMatch{
			Property:          s.expandProperty(h.e),
			MatchConfidence:   h.conf,
			MatchType:         h.typ,
			NormalizedInput:   normInput,
			MatchedFields:     h.fields,
			InputAddressShown: q.Address,
		})
	}
	return out
}

// similarity is 1 - edit distance / length of the longer string.
func similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 || len(rb) == 0 {
		return 0
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(rb)])/float64(max(len(ra), len(rb)))
}

// looksLikeAddress reports whether resolve text starts with a house
// number.
func looksLikeAddress(text string) bool {
	text = strings.TrimSpace(text)
	return text != "" && text[0] >= '0' && text[0] <= '9' && address.Normalize(text).Addressable()
}

// propertyCandidates ranks properties for address-like resolve text (read
// lock held): geo_type property, geo_id the property_id, match_method
// address; decision accept at confidence >= 0.9, else review.
func (s *Store) propertyCandidates(q readmodel.ResolveQuery) []readmodel.Candidate {
	if !looksLikeAddress(q.Text) {
		return nil
	}
	matches := s.searchProperties(readmodel.PropertyQuery{Address: q.Text, State: q.State, Limit: q.Limit})
	out := make([]readmodel.Candidate, 0, len(matches))
	for _, m := range matches {
		e := s.props.entry(propRef{key: mustKey(m.Property.PropertyID), kind: 1}, false)
		decision := "review"
		if m.MatchConfidence >= 0.9 {
			decision = "accept"
		}
		out = append(out, readmodel.Candidate{
			Location:    s.propertyLocation(e),
			Score:       m.MatchConfidence,
			Confidence:  m.MatchConfidence,
			MatchMethod: "address",
			Decision:    decision,
			Reasons:     []string{"address_" + m.MatchType},
		})
	}
	return out
}

func mustKey(id string) propKey {
	k, _ := parsePropKey(id)
	return k
}

// propertyLocation presents a live property as a location of the property
// scope (read lock held), its hierarchy taken from its links.
func (s *Store) propertyLocation(e *propEntry) readmodel.Location {
	p := s.expandProperty(e)
	l := readmodel.Location{
		GeoID:       p.PropertyID,
		GeoType:     readmodel.GeoProperty,
		Name:        p.NormalizedAddress,
		DisplayName: p.CanonicalAddress,
		FullAddress: p.CanonicalAddress,
		State:       p.State,
		City:        p.City,
		Zipcode:     p.Zipcode,
		PermitCount: int64(len(e.permits)),
		Version:     p.Version,
	}
	if p.Lat != nil && p.Lon != nil {
		l.Lat, l.Lon = *p.Lat, *p.Lon
	}
	if len(e.permits) > 0 {
		l.LatestPermitDate = latest(sliceSet(e.permits))
	}
	for _, g := range p.GeoLinks {
		loc, ok := s.locations.get(g.GeoID)
		if !ok {
			continue
		}
		switch g.GeoType {
		case readmodel.GeoState:
			l.StateGeoID, l.StateName = g.GeoID, loc.StateName
		case readmodel.GeoCounty:
			l.CountyGeoID, l.County = g.GeoID, loc.Name
		case readmodel.GeoCity:
			l.CityGeoID = g.GeoID
			if loc.Name != "" {
				l.City = loc.Name
			}
		case readmodel.GeoJurisdiction:
			l.JurisdictionGeoID, l.Jurisdiction = g.GeoID, loc.Name
		}
	}
	return l
}

// mergeCandidates ranks property and location candidates together: score
// descending, population descending, geo_id ascending.
func mergeCandidates(a, b []readmodel.Candidate, limit int) []readmodel.Candidate {
	out := append(a, b...)
	sort.SliceStable(out, func(i, j int) bool {
		x, y := out[i], out[j]
		switch {
		case x.Score != y.Score:
			return x.Score > y.Score
		case x.Location.Population != y.Location.Population:
			return x.Location.Population > y.Location.Population
		}
		return x.Location.GeoID < y.Location.GeoID
	})
	return out[:min(len(out), limit)]
}
