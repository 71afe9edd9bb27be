package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/permitd/permitd/readmodel"
)

// The document codec: a compact binary encoding of Go values built from
// their types by reflection, once per type. Every exported field of a
// struct is written in declaration order, so a field added to a read-model
// document is carried without touching this file (the format version
// changes with the document types; see FormatVersion). Unlike gob it
// keeps nil apart from empty (slices, byte slices) and a pointer to zero
// apart from nil, so documents come back exactly.
//
//	string           a tag (uvarint): 0 "", 1 a literal (uvarint length,
//	                 bytes), 2 a new entry of the string table (length,
//	                 bytes), n >= 3 the table's entry n-3
//	[]byte           uvarint length+1 (0: nil), bytes
//	int kinds        zig-zag varint
//	float64          8 bytes, IEEE 754 bits, little endian
//	bool             1 byte
//	pointer          1 byte (0 nil, 1 set), then the value
//	slice            uvarint length+1 (0: nil), the elements
//	time.Time        its MarshalBinary form as a []byte
//	struct           its exported fields in order
//
// The string table (version 4) is one for the whole stream of values (a
// snapshot's frames, in order): a repeated string (a status, a city, a
// geo_id, a link method) is written once and then referred to by its
// index, so the decoder hands out one string for all its occurrences,
// with neither a hash nor a comparison nor an allocation, and the read
// model's interning finds it by its address (memory's symCache; a
// document's whole link list by its strings' addresses: linkCache). The
// encoder tables the strings of up to tableMaxLen bytes, until the table
// holds tableMaxEntries; the fields known to be one per document (ids,
// addresses: uniqueFields) and property ids wherever they are (a
// permit's property link; a property has one or two permits) are
// literals, so they neither fill the table nor cost the writer a map
// entry each.

// tableMaxLen and tableMaxEntries bound the string table.
const (
	tableMaxLen     = 64
	tableMaxEntries = 1 << 19
)

// String tags.
const (
	tagEmpty   = 0
	tagLiteral = 1
	tagNew     = 2
	tagRef     = 3 // and up
)

// encTable is the encoder's string table. Its strings are found by the
// address of their bytes first (fast), then by value (ids): the read
// model hands out one string per symbol, description and day, so most
// of a snapshot's strings are ones written before at the same address,
// and hashing each against a map of up to tableMaxEntries keys was half
// of a snapshot write's CPU. A slot holds its string, so the address
// cannot be reused for other bytes while the slot names it. There are
// as many slots as the table holds strings (2^19, 12.6 MB a write): with
// 2^17 the geo ids, names and contractors of a 1M-permit store evicted
// each other, and 1.1M of a write's strings (1.8M in serve, after a
// replay) went to the map again; 0.41M with 2^19.
type encTable struct {
	ids  map[string]uint32
	fast *[encFastSlots]encSlot
	// lists is the list table (codec_links.go), by the key of each list
	// (its links' strings, length first, and confidences; a property
	// link's GeoID left out); listKey is the scratch space of the key.
	lists   map[string]uint32
	listKey []byte
}

type encSlot struct {
	s  string // "": empty slot
	id uint32
}

const encFastBits = 19
const encFastSlots = 1 << encFastBits

func newEncTable() *encTable {
	return &encTable{ids: map[string]uint32{}, fast: new([encFastSlots]encSlot), lists: map[string]uint32{}}
}

// slot is s's slot in fast, by the address of its bytes.
func (t *encTable) slot(s string) *encSlot {
	h := uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) * 0x9e3779b97f4a7c15
	return &t.fast[h>>(64-encFastBits)]
}

type encoder struct {
	b   []byte
	tab *encTable
}

func (e *encoder) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }

func (e *encoder) bytes(p []byte, isNil bool) {
	if isNil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(p)) + 1)
	e.b = append(e.b, p...)
}

// str writes s: as a literal when unique, else through the table.
func (e *encoder) str(s string, unique bool) {
	if s == "" {
		e.uvarint(tagEmpty)
		return
	}
	if !unique && len(s) <= tableMaxLen {
		sl := e.tab.slot(s)
		if len(sl.s) == len(s) && unsafe.StringData(sl.s) == unsafe.StringData(s) {
			e.uvarint(uint64(sl.id) + tagRef) // the same string as the slot's
			return
		}
		if readmodel.IsPropertyID(s) {
			e.literal(tagLiteral, s)
			return
		}
		if id, ok := e.tab.ids[s]; ok {
			sl.s, sl.id = s, id
			e.uvarint(uint64(id) + tagRef)
			return
		}
		if len(e.tab.ids) < tableMaxEntries {
			id := uint32(len(e.tab.ids))
			e.tab.ids[s] = id
			sl.s, sl.id = s, id
			e.literal(tagNew, s)
			return
		}
	}
	e.literal(tagLiteral, s)
}

func (e *encoder) literal(tag uint64, s string) {
	e.uvarint(tag)
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

type decoder struct {
	b     []byte
	err   error
	tab   *decTable
	links []readmodel.GeoLink // decodePermit's shared array
	// list is the shape of the last list geoLinks read (its table
	// entry's index + 1; 0: a list of no entry); shapes, when set,
	// collects it for each permit and property (decodeShaped).
	list   uint32
	shapes *readmodel.LinkShapes
	// lent, when set, lends the decoded batch arrays that the caller
	// gives back (LoadLent): decodePermit's link arrays come from it and
	// are recorded in it.
	lent *lent
}

// decTable is the decoder's string table: the strings of the stream's
// tagNew entries, in order; and its list table (codec_links.go). The
// stream's strings are copied into chunks of strArenaChunk bytes (arena),
// one allocation for hundreds of strings rather than one each: a
// snapshot of 1M permits holds about 7M of them, and their allocations
// were a tenth of its decoding and most of the load's heap objects, all
// for the collector to mark at every cycle after it. A chunk stays while
// any of its strings does (a document replaced since holds its chunk's
// bytes until the chunk's last string goes): at most the strings of one
// snapshot, the size the documents it loaded had anyway.
type decTable struct {
	strs  []string
	lists []listEntry
	arena []byte // the current chunk: strings are appended, never changed
}

// strArenaChunk is the size of a string chunk; a string longer than
// strArenaMax has its own allocation.
const (
	strArenaChunk = 64 << 10
	strArenaMax   = 1 << 10
)

// str copies p into the table's current chunk (a new one when it is
// full) and returns it as a string.
func (t *decTable) str(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	if len(p) > strArenaMax {
		return string(p)
	}
	if cap(t.arena)-len(t.arena) < len(p) {
		t.arena = make([]byte, 0, strArenaChunk)
	}
	i := len(t.arena)
	t.arena = append(t.arena, p...)
	return unsafe.String(&t.arena[i], len(p))
}

func newDecTable() *decTable { return &decTable{} }

// string reads a string (any tag).
func (d *decoder) string() string {
	tag := d.uvarint()
	switch {
	case tag == tagEmpty:
		return ""
	case tag >= tagRef:
		if i := tag - tagRef; i < uint64(len(d.tab.strs)) {
			return d.tab.strs[i]
		}
		d.fail(errors.New("snapshot: string table reference out of range"))
		return ""
	}
	s := d.tab.str(d.take(d.uvarint()))
	if tag == tagNew && d.err == nil {
		d.tab.strs = append(d.tab.strs, s)
	}
	return s
}

var (
	errShort   = errors.New("snapshot: document truncated")
	errListRef = errors.New("snapshot: link list table reference out of range")
	// errListLong: a new entry of the link list table longer than
	// listMaxLinks, which no writer of this format makes (an entry's
	// property links are counted in a byte each).
	errListLong = errors.New("snapshot: link list table entry longer than the format allows")
)

func (d *decoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) take(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.fail(errShort)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

type fieldCodec struct {
	enc func(e *encoder, v reflect.Value)
	dec func(d *decoder, v reflect.Value)
}

var (
	codecMu sync.Mutex
	codecs  = map[reflect.Type]*fieldCodec{}
	timeT   = reflect.TypeFor[time.Time]()
)

// codecOf returns the codec of t, building it once.
func codecOf(t reflect.Type) *fieldCodec {
	codecMu.Lock()
	defer codecMu.Unlock()
	return build(t)
}

func build(t reflect.Type) *fieldCodec {
	if c, ok := codecs[t]; ok {
		return c
	}
	if t == geoLinksT && geoLinkFits() {
		codecs[t] = listCodec
		return listCodec
	}
	c := &fieldCodec{}
	codecs[t] = c // before the elements: recursive types end here
	switch {
	case t == timeT:
		c.enc = func(e *encoder, v reflect.Value) {
			p, _ := v.Interface().(time.Time).MarshalBinary()
			e.bytes(p, false)
		}
		c.dec = func(d *decoder, v reflect.Value) {
			n := d.uvarint()
			if n == 0 {
				return
			}
			var tm time.Time
			if err := tm.UnmarshalBinary(d.take(n - 1)); err != nil {
				d.fail(err)
				return
			}
			v.Set(reflect.ValueOf(tm))
		}
	case t.Kind() == reflect.String:
		c.enc = func(e *encoder, v reflect.Value) { e.str(v.String(), false) }
		c.dec = func(d *decoder, v reflect.Value) {
			if s := d.string(); s != "" {
				v.SetString(s)
			}
		}
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64 || t.Kind() == reflect.Int32:
		c.enc = func(e *encoder, v reflect.Value) { e.b = binary.AppendVarint(e.b, v.Int()) }
		c.dec = func(d *decoder, v reflect.Value) {
			x, n := binary.Varint(d.b)
			if n <= 0 {
				d.fail(errShort)
				return
			}
			d.b = d.b[n:]
			v.SetInt(x)
		}
	case t.Kind() == reflect.Float64:
		c.enc = func(e *encoder, v reflect.Value) {
			e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v.Float()))
		}
		c.dec = func(d *decoder, v reflect.Value) {
			if p := d.take(8); p != nil {
				v.SetFloat(math.Float64frombits(binary.LittleEndian.Uint64(p)))
			}
		}
	case t.Kind() == reflect.Bool:
		c.enc = func(e *encoder, v reflect.Value) {
			if v.Bool() {
				e.b = append(e.b, 1)
			} else {
				e.b = append(e.b, 0)
			}
		}
		c.dec = func(d *decoder, v reflect.Value) {
			if p := d.take(1); p != nil {
				v.SetBool(p[0] == 1)
			}
		}
	case t.Kind() == reflect.Pointer:
		elem := build(t.Elem())
		c.enc = func(e *encoder, v reflect.Value) {
			if v.IsNil() {
				e.b = append(e.b, 0)
				return
			}
			e.b = append(e.b, 1)
			elem.enc(e, v.Elem())
		}
		c.dec = func(d *decoder, v reflect.Value) {
			p := d.take(1)
			if p == nil || p[0] == 0 {
				return
			}
			nv := reflect.New(t.Elem())
			elem.dec(d, nv.Elem())
			v.Set(nv)
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		c.enc = func(e *encoder, v reflect.Value) { e.bytes(v.Bytes(), v.IsNil()) }
		c.dec = func(d *decoder, v reflect.Value) {
			n := d.uvarint()
			if n == 0 {
				return
			}
			p := d.take(n - 1)
			v.SetBytes(append(make([]byte, 0, len(p)), p...))
		}
	case t.Kind() == reflect.Slice:
		elem := build(t.Elem())
		c.enc = func(e *encoder, v reflect.Value) {
			if v.IsNil() {
				e.uvarint(0)
				return
			}
			e.uvarint(uint64(v.Len()) + 1)
			for i := range v.Len() {
				elem.enc(e, v.Index(i))
			}
		}
		c.dec = func(d *decoder, v reflect.Value) {
			n := d.uvarint()
			if n == 0 {
				return
			}
			n--
			if n > uint64(len(d.b)) { // every element takes at least a byte
				d.fail(errShort)
				return
			}
			var s reflect.Value
			if !v.IsNil() && v.Cap() >= int(n) { // a lent array given back (LoadLent)
				s = v.Slice(0, int(n))
				s.Clear()
			} else {
				s = reflect.MakeSlice(t, int(n), int(n))
			}
			for i := range int(n) {
				elem.dec(d, s.Index(i))
			}
			v.Set(s)
		}
	case t.Kind() == reflect.Struct:
		type field struct {
			i int
			c *fieldCodec
		}
		var fs []field
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				c := build(f.Type)
				if uniqueFields[t.String()+"."+f.Name] {
					c = uniqueString
				}
				fs = append(fs, field{i, c})
			}
		}
		c.enc = func(e *encoder, v reflect.Value) {
			for _, f := range fs {
				f.c.enc(e, v.Field(f.i))
			}
		}
		c.dec = func(d *decoder, v reflect.Value) {
			for _, f := range fs {
				f.c.dec(d, v.Field(f.i))
			}
		}
	default:
		panic(fmt.Sprintf("snapshot: no codec for %s", t))
	}
	switch {
	case t == permitT && permitDecoderFits():
		permitReflective = c.dec
		c.dec = decodePermit // the same bytes, read faster (codec_permit.go)
	case t == propertyT && propertyDecoderFits():
		propertyReflective = c.dec
		c.dec = decodeProperty
	}
	return c
}

// uniqueFields are the string fields that are one per document, written
// as literals (type.Field).
var uniqueFields = map[string]bool{
	"readmodel.Permit.PermitID": true, "readmodel.Permit.PermitNumber": true, "readmodel.Permit.PropertyID": true,
	"readmodel.Address.FullAddress": true,
	"readmodel.Property.PropertyID": true, "readmodel.Property.CanonicalAddress": true,
	"readmodel.Property.NormalizedAddress": true, "readmodel.Property.ParcelID": true,
}

// uniqueString is the codec of a uniqueFields field (a string type).
var uniqueString = &fieldCodec{
	enc: func(e *encoder, v reflect.Value) { e.str(v.String(), true) },
	dec: func(d *decoder, v reflect.Value) {
		if s := d.string(); s != "" {
			v.SetString(s)
		}
	},
}

// appendValue encodes *p after b, with a string table of its own.
func appendValue[T any](b []byte, p *T) []byte {
	return appendTabled(b, p, newEncTable())
}

// appendTabled encodes *p after b, with tab as its string table (the
// table of a stream of values: decode them in order with one decTable).
func appendTabled[T any](b []byte, p *T, tab *encTable) []byte {
	e := encoder{b: b, tab: tab}
	codecOf(reflect.TypeFor[T]()).enc(&e, reflect.ValueOf(p).Elem())
	return e.b
}

// decodeValue decodes b, encoded by appendValue, into *p; the whole of b
// must be used.
func decodeValue[T any](b []byte, p *T) error {
	return decodeTabled(b, p, newDecTable())
}

// decodeTabled decodes b, encoded by appendTabled, into *p; tab is the
// stream's string table, as the values before b left it.
func decodeTabled[T any](b []byte, p *T, tab *decTable) error {
	return decodeShaped(b, p, tab, nil)
}

// decodeShaped is decodeTabled that also appends to shapes the shape of
// each permit's and property's links (readmodel.LinkShapes: the index + 1
// of the list table's entry the links were read from, or 0), when the
// documents are read by decodePermit and decodeProperty.
func decodeShaped[T any](b []byte, p *T, tab *decTable, shapes *readmodel.LinkShapes) error {
	return decodeLent(b, p, tab, shapes, nil)
}

// decodeLent is decodeShaped into arrays lent (LoadLent), when not nil.
func decodeLent[T any](b []byte, p *T, tab *decTable, shapes *readmodel.LinkShapes, l *lent) error {
	d := decoder{b: b, tab: tab, shapes: shapes, lent: l}
	codecOf(reflect.TypeFor[T]()).dec(&d, reflect.ValueOf(p).Elem())
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("snapshot: %d bytes after a document", len(d.b))
	}
	return nil
}

// The codecs of the file's values are built at start, so a document type
// the codec cannot carry fails every test (and every start) at once,
// never a snapshot write in production.
func init() {
	codecOf(reflect.TypeFor[fileHeader]())
	codecOf(reflect.TypeFor[readmodel.Batch]())
}
