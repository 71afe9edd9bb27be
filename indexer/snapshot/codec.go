package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"reflect"
	"sync"
	"time"

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
//	string, []byte   uvarint length+1 (0: nil []byte), bytes
//	int kinds        zig-zag varint
//	float64          8 bytes, IEEE 754 bits, little endian
//	bool             1 byte
//	pointer          1 byte (0 nil, 1 set), then the value
//	slice            uvarint length+1 (0: nil), the elements
//	time.Time        its MarshalBinary form as a []byte
//	struct           its exported fields in order

type encoder struct{ b []byte }

func (e *encoder) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }

func (e *encoder) bytes(p []byte, isNil bool) {
	if isNil {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(len(p)) + 1)
	e.b = append(e.b, p...)
}

type decoder struct {
	b     []byte
	err   error
	cache *stringCache        // nil: every string is a new one
	links []readmodel.GeoLink // decodePermit's shared array
}

// stringCache lets the documents of one Load share their repeated short
// strings (statuses, cities, geo_ids, link methods, ...): a string read
// again while its slot still holds it is the same string, not a new
// allocation. Slots are picked by hash and overwritten, so the cache
// stays this size whatever the snapshot holds (unique strings such as
// permit ids only evict). Less to allocate and a smaller heap for the
// collector to mark while the load runs; equal strings that share their
// bytes also compare at once in the read model's interning maps.
// Strings are immutable, so sharing them changes no document.
type stringCache struct {
	seed  maphash.Seed
	slots [stringCacheSlots]string
}

const (
	stringCacheSlots = 1 << 16 // a power of two
	stringCacheMax   = 64      // longer strings are not cached
)

func newStringCache() *stringCache { return &stringCache{seed: maphash.MakeSeed()} }

// str returns p as a string, shared with an earlier equal one if the
// cache still holds it.
func (d *decoder) str(p []byte) string {
	c := d.cache
	if c == nil || len(p) == 0 || len(p) > stringCacheMax {
		return string(p)
	}
	slot := &c.slots[maphash.Bytes(c.seed, p)&(stringCacheSlots-1)]
	if *slot == string(p) { // no allocation: a comparison
		return *slot
	}
	s := string(p)
	*slot = s
	return s
}

var errShort = errors.New("snapshot: document truncated")

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
		c.enc = func(e *encoder, v reflect.Value) {
			s := v.String()
			e.uvarint(uint64(len(s)) + 1)
			e.b = append(e.b, s...)
		}
		c.dec = func(d *decoder, v reflect.Value) {
			n := d.uvarint()
			if n > 0 {
				v.SetString(d.str(d.take(n - 1)))
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
			s := reflect.MakeSlice(t, int(n), int(n))
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
				fs = append(fs, field{i, build(f.Type)})
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

// appendValue encodes *p after b.
func appendValue[T any](b []byte, p *T) []byte {
	e := encoder{b: b}
	codecOf(reflect.TypeFor[T]()).enc(&e, reflect.ValueOf(p).Elem())
	return e.b
}

// decodeValue decodes b into *p; the whole of b must be used.
func decodeValue[T any](b []byte, p *T) error {
	return decodeCached(b, p, nil)
}

// decodeCached is decodeValue sharing repeated strings through cache
// (nil: none).
func decodeCached[T any](b []byte, p *T, cache *stringCache) error {
	d := decoder{b: b, cache: cache}
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
