package snapshot

import (
	"encoding/binary"
	"math"
	"reflect"

	"github.com/permitd/permitd/readmodel"
)

// Geo link lists (version 6) have a table of their own, beside the
// string table: a permit's links (its ZIP, city, county, state and so on)
// are the same list as many other permits' but for the link to its own
// property, so a list is written out once and then referred to by its
// index, followed by the GeoIDs of its property links (one per document,
// literals). Decoding a permit's links is then one reference and a copy
// instead of three string references and a float per link (each string
// reference a random read of a table of up to 2^19 strings), and the
// file is smaller.
//
//	0          nil
//	1          empty
//	2 n links  a literal list of n links (more than listMaxLinks, or a
//	           full table)
//	3 n links  a new entry of the list table: the list as a literal, kept
//	           by the decoder with its property links' GeoIDs left out
//	k >= 4     the table's entry k-4, then the GeoID (a string) of each
//	           of its property links, in order
//
// A link is its GeoID, GeoType and Method as strings (codec.go) and its
// Confidence as 8 bytes. The codec is used while GeoLink's exported
// fields are the ones it was written for (geoLinkFields, checked when the
// codec is built); otherwise lists go through the reflective slice codec,
// which carries any field, until this one is brought up to date.

const (
	listNil     = 0
	listEmpty   = 1
	listLiteral = 2
	listNew     = 3
	listRef     = 4 // and up
)

// listMaxLinks and listMaxEntries bound the list table.
const (
	listMaxLinks   = 16
	listMaxEntries = 1 << 18
)

var geoLinksT = reflect.TypeFor[[]readmodel.GeoLink]()

// geoLinkFields are GeoLink's exported fields as the list codec writes them.
var geoLinkFields = []string{"GeoID string", "GeoType readmodel.GeoType", "Confidence float64", "Method string"}

func geoLinkFits() bool {
	return reflect.DeepEqual(fieldList(reflect.TypeFor[readmodel.GeoLink]()), geoLinkFields)
}

// listEntry is a list of the decoder's table: its links with the
// property links' GeoIDs left out, and which those are.
type listEntry struct {
	links []readmodel.GeoLink
	props []uint8 // indexes of the property links
}

// listCodec is the codec of []readmodel.GeoLink.
var listCodec = &fieldCodec{
	enc: func(e *encoder, v reflect.Value) {
		e.geoLinks(v.Interface().([]readmodel.GeoLink))
	},
	dec: func(d *decoder, v reflect.Value) {
		if ls := d.geoLinks(); ls != nil {
			v.Set(reflect.ValueOf(ls))
		}
	},
}

// isPropertyLink reports whether l's GeoID is the document's own (written
// after a table reference, not in the table).
func isPropertyLink(l *readmodel.GeoLink) bool { return l.GeoType == readmodel.GeoProperty }

// geoLinks writes a list.
func (e *encoder) geoLinks(ls []readmodel.GeoLink) {
	switch {
	case ls == nil:
		e.uvarint(listNil)
		return
	case len(ls) == 0:
		e.uvarint(listEmpty)
		return
	case len(ls) > listMaxLinks:
		e.linkList(listLiteral, ls)
		return
	}
	t := e.tab
	key := t.listKey[:0]
	for i := range ls {
		l := &ls[i]
		if !isPropertyLink(l) {
			key = appendKeyString(key, l.GeoID)
		} else {
			key = append(key, 0xff) // no length starts so: the GeoID is left out
		}
		key = appendKeyString(key, string(l.GeoType))
		key = binary.LittleEndian.AppendUint64(key, math.Float64bits(l.Confidence))
		key = appendKeyString(key, l.Method)
	}
	t.listKey = key
	if id, ok := t.lists[string(key)]; ok {
		e.uvarint(uint64(id) + listRef)
		for i := range ls {
			if isPropertyLink(&ls[i]) {
				e.str(ls[i].GeoID, false)
			}
		}
		return
	}
	if len(t.lists) < listMaxEntries {
		t.lists[string(key)] = uint32(len(t.lists))
		e.linkList(listNew, ls)
		return
	}
	e.linkList(listLiteral, ls)
}

func appendKeyString(key []byte, s string) []byte {
	key = binary.AppendUvarint(key, uint64(len(s)))
	return append(key, s...)
}

func (e *encoder) linkList(tag uint64, ls []readmodel.GeoLink) {
	e.uvarint(tag)
	e.uvarint(uint64(len(ls)))
	for i := range ls {
		l := &ls[i]
		e.str(l.GeoID, false)
		e.str(string(l.GeoType), false)
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(l.Confidence))
		e.str(l.Method, false)
	}
}

// geoLinks reads a list, a non-empty one into the shared array.
func (d *decoder) geoLinks() []readmodel.GeoLink {
	d.list = 0
	tag := d.uvarint()
	switch {
	case tag == listNil:
		return nil
	case tag == listEmpty:
		return []readmodel.GeoLink{} // empty, not nil
	case tag >= listRef:
		i := tag - listRef
		if i >= uint64(len(d.tab.lists)) {
			d.fail(errListRef)
			return nil
		}
		ent := &d.tab.lists[i]
		d.list = uint32(i) + 1
		ls := d.linkSlots(uint64(len(ent.links)))
		copy(ls, ent.links)
		for _, j := range ent.props {
			ls[j].GeoID = d.string()
		}
		return ls
	}
	n := d.uvarint()
	if n == 0 || n > uint64(len(d.b)) { // every link takes at least a byte
		d.fail(errShort)
		return nil
	}
	if tag == listNew && n > listMaxLinks {
		d.fail(errListLong)
		return nil
	}
	ls := d.linkSlots(n)
	for j := range ls {
		l := &ls[j]
		l.GeoID = d.string()
		l.GeoType = readmodel.GeoType(d.string())
		l.Confidence = d.float()
		l.Method = d.string()
	}
	if tag == listNew && d.err == nil {
		ent := listEntry{links: append([]readmodel.GeoLink(nil), ls...)}
		for j := range ent.links {
			if isPropertyLink(&ent.links[j]) {
				ent.links[j].GeoID = ""
				ent.props = append(ent.props, uint8(j))
			}
		}
		d.tab.lists = append(d.tab.lists, ent)
		d.list = uint32(len(d.tab.lists))
	}
	return ls
}

// linkSlots is n links of the shared array, their capacity their length
// (an append to one list cannot overwrite the next).
func (d *decoder) linkSlots(n uint64) []readmodel.GeoLink {
	if uint64(cap(d.links)-len(d.links)) < n {
		d.links = d.lent.linkArray(max(linkArena, n))
	}
	i := len(d.links)
	d.links = d.links[:i+int(n)]
	return d.links[i : i+int(n) : i+int(n)]
}
