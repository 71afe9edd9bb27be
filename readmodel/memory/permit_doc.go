package memory

import (
	"encoding/hex"
	"math"
	"sync"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// cpermit is a permit as the memory backend holds it: about 160 bytes
// plus its id, description and address, instead of a readmodel.Permit's
// ~400 bytes and per-permit link slice. Repeated strings are symbols,
// dates are days since 1970, numbers use NaN for null, and the geo links
// are a shared link set.
//
// A cpermit is immutable once stored: a new version is a new cpermit. The
// indexes hold pointers and order them by (ik, id), so an old version can
// still be found and removed after the table has moved on.
type cpermit struct {
	id      string // permit_id; also the table key
	address string // Address.FullAddress

	version             int64
	valuation, lat, lon float64 // NaN: null

	ik          int32  // index key: -issue day, or undated
	slot        uint32 // in the side's permitSlab once stored; 0 before
	appD, compD int32  // days since 1970, noDate when absent

	// symbols
	number     uint32 // 0: the suffix of id after "<source>:"
	desc       uint32 // descriptions repeat (templates, generated text)
	typ, work  uint32
	status     uint32
	source     uint32
	contractor uint32
	city       uint32
	state      uint32
	zip        uint32
	county     uint32
	jur        uint32
	links      uint32 // link set

	prop propRef
}

// propRef is a property id: prop_ + 32 hex held as 16 bytes, or (for an
// id outside that pattern) a symbol.
type propRef struct {
	key  propKey
	kind uint8 // 0 none, 1 key, 2 symbol in key[0:4]
}

type propKey [16]byte

const (
	noDate  = math.MinInt32
	undated = math.MaxInt32 // ik of a permit without an issue date: after every dated one
)

// parseDay turns YYYY-MM-DD into days since 1970; noDate for "" or a
// malformed date (the projection lets none through).
func parseDay(s string) int32 {
	if d, ok := readmodel.DayNumber(s); ok {
		return d
	}
	return noDate
}

// formatDay is the YYYY-MM-DD of a day (parseDay's), "" for noDate. The
// days of 1900 to 2099 share one string each (dayStrings): an export
// writes three dates a permit, and a snapshot's string table then finds
// each by its address instead of hashing it.
func formatDay(d int32) string {
	if d == noDate {
		return ""
	}
	if days, i := dayStrings(), int64(d)-firstStringDay; i >= 0 && i < int64(len(days)) {
		return days[i]
	}
	return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly)
}

// firstStringDay is 1900-01-01 as a day (days since 1970-01-01).
const firstStringDay = -25567

// dayStrings are the dates of 1900-01-01 to 2099-12-31, day by day from
// firstStringDay, as substrings of one string (1.9 MB in all, made at the
// first call).
var dayStrings = sync.OnceValue(func() []string {
	const years = 200
	b := make([]byte, 0, years*366*len(time.DateOnly))
	for y := 1900; y < 1900+years; y++ {
		for m := time.January; m <= time.December; m++ {
			for d := 1; d <= time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day(); d++ {
				b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10),
					'-', byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10))
			}
		}
	}
	all := string(b)
	out := make([]string, len(all)/len(time.DateOnly))
	for i := range out {
		out[i] = all[i*len(time.DateOnly) : (i+1)*len(time.DateOnly)]
	}
	return out
})

// ikOf is the index key of an issue date.
func ikOf(issueDate string) int32 {
	d := parseDay(issueDate)
	if d == noDate {
		return undated
	}
	return -d
}

func issueOf(ik int32) string {
	if ik == undated {
		return ""
	}
	return formatDay(-ik)
}

func nanOf(f *float64) float64 {
	if f == nil {
		return math.NaN()
	}
	return *f
}

func ptrOf(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return &f
}

// parsePropKey reads a property_id (readmodel.IsPropertyID) as 16 bytes.
func parsePropKey(id string) (propKey, bool) {
	var k propKey
	if !readmodel.IsPropertyID(id) {
		return k, false
	}
	if _, err := hex.Decode(k[:], []byte(id[5:])); err != nil {
		return k, false
	}
	return k, true
}

func (k propKey) String() string { return "prop_" + hex.EncodeToString(k[:]) }

// ref makes the propRef of a property id (the side's writer).
func (s *side) propRefOf(id string) propRef {
	if id == "" {
		return propRef{}
	}
	if k, ok := parsePropKey(id); ok {
		return propRef{key: k, kind: 1}
	}
	var r propRef
	r.kind = 2
	sym := s.pi.syms.id(id)
	r.key[0], r.key[1], r.key[2], r.key[3] = byte(sym), byte(sym>>8), byte(sym>>16), byte(sym>>24)
	return r
}

func (s *side) propString(r propRef) string {
	switch r.kind {
	case 1:
		return r.key.String()
	case 2:
		return s.pi.syms.str(uint32(r.key[0]) | uint32(r.key[1])<<8 | uint32(r.key[2])<<16 | uint32(r.key[3])<<24)
	}
	return ""
}

// compactPermit converts a document (the side's writer), whose links'
// shape is shape (readmodel.LinkShapes; 0: none known). The result holds
// its texts; releaseTexts lets them go when the store drops it.
func (s *side) compactPermit(p readmodel.Permit, shape uint32) *cpermit {
	sy := s.pi.syms
	c := &cpermit{
		id:         p.PermitID,
		version:    p.Version,
		desc:       s.pi.texts.acquire(p.RawDescription),
		address:    p.Address.FullAddress,
		valuation:  nanOf(p.Valuation),
		lat:        nanOf(p.Lat),
		lon:        nanOf(p.Lon),
		ik:         ikOf(p.IssueDate),
		appD:       parseDay(p.ApplicationDate),
		compD:      parseDay(p.CompletionDate),
		typ:        sy.id(p.PermitType),
		work:       sy.id(p.WorkType),
		status:     sy.id(p.Status),
		source:     sy.id(p.Source),
		contractor: sy.id(p.Contractor),
		city:       sy.id(p.Address.City),
		state:      sy.id(p.Address.State),
		zip:        sy.id(p.Address.Zipcode),
		county:     sy.id(p.Address.County),
		jur:        sy.id(p.Address.Jurisdiction),
		prop:       s.propRefOf(p.PropertyID),
	}
	if p.PermitNumber == "" || !events.IsPermitDocID(p.PermitID, p.Source, p.PermitNumber) {
		c.number = s.pi.texts.acquire(p.PermitNumber)
	}
	c.links = s.pi.links.shaped(sy, p.GeoLinks, p.PropertyID, shape)
	return c
}

// releaseTexts lets go of the texts c holds (the side's writer).
func (s *side) releaseTexts(c *cpermit) {
	s.pi.texts.release(c.desc)
	s.pi.texts.release(c.number)
}

// permitNumber is the permit's source number.
func (s *side) permitNumber(c *cpermit) string {
	if c.number != 0 {
		return s.pi.texts.str(c.number)
	}
	return c.id[len(s.pi.syms.str(c.source))+1:]
}

// expandPermit rebuilds the document (a reader of the side); the result shares
// nothing mutable with the store.
func (s *side) expandPermit(c *cpermit) readmodel.Permit {
	sy := s.pi.syms
	prop := s.propString(c.prop)
	return readmodel.Permit{
		PermitID:        c.id,
		PermitNumber:    s.permitNumber(c),
		PermitType:      sy.str(c.typ),
		WorkType:        sy.str(c.work),
		Status:          sy.str(c.status),
		ApplicationDate: formatDay(c.appD),
		IssueDate:       issueOf(c.ik),
		CompletionDate:  formatDay(c.compD),
		RawDescription:  s.pi.texts.str(c.desc),
		Contractor:      sy.str(c.contractor),
		Valuation:       ptrOf(c.valuation),
		Source:          sy.str(c.source),
		Address: readmodel.Address{
			FullAddress:  c.address,
			City:         sy.str(c.city),
			State:        sy.str(c.state),
			Zipcode:      sy.str(c.zip),
			County:       sy.str(c.county),
			Jurisdiction: sy.str(c.jur),
		},
		Lat:        ptrOf(c.lat),
		Lon:        ptrOf(c.lon),
		PropertyID: prop,
		GeoLinks:   s.pi.links.expand(sy, c.links, prop),
		Version:    c.version,
	}
}

// link returns the permit's link to geo (a symbol, or selfProperty).
func (s *side) link(c *cpermit, geo uint32) (readmodel.GeoLink, bool) {
	for _, l := range s.pi.links.get(c.links) {
		if l.geo == geo {
			id := s.propString(c.prop)
			if geo != selfProperty {
				id = s.pi.syms.str(geo)
			}
			return readmodel.GeoLink{GeoID: id, GeoType: readmodel.GeoType(s.pi.syms.str(l.typ)), Confidence: fromMillionths(l.conf), Method: s.pi.syms.str(l.method)}, true
		}
	}
	return readmodel.GeoLink{}, false
}
