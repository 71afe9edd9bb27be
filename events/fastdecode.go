package events

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"
)

// This file is decodeStrict's fast path. A general strict decoder
// (encoding/json, or goccy/go-json before) reads byte by byte through
// reflection and allocates at every step; it was most of the indexer's
// CPU. The fast path decodes the common case in one pass over the bytes and only
// accepts input it can prove the stream decoder accepts and decodes to the
// same value: one well-formed JSON value, every object key an exact
// (byte-equal, unescaped, not repeated) field name of the target type, every
// value of the kind its field takes. String values may carry the escapes
// encoding/json decodes the same way (\" \\ \/ \b \f \n \r \t and \uXXXX
// outside the surrogate range; see unescape). Whenever it is unsure
// (case-folded, escaped or repeated keys, a surrogate escape, an escaped
// event type, a control character, large integers, unusual kinds) it gives
// up and the input goes through the stream decoder as before, which also
// produces every error message: the fast path never rejects anything
// itself, so it cannot change what is accepted. TestFastDecodeAgrees,
// FuzzFastDecodeAgrees and TestUnescapeAgrees hold the two to the same
// results.

// shape is what the fast path knows of a Go type.
type shape struct {
	kind   shapeKind
	sub    shapeSub // which type of its kind, so decoding compares no reflect.Type
	typ    reflect.Type
	elem   *shape       // pointer target, slice element
	fields []fieldShape // struct fields; the index is the bit in the duplicate-key mask
}

type fieldShape struct {
	name   string // exact JSON name
	member string // the name as a JSON string, and a colon: how an object member starts
	offset uintptr
	shape  *shape
}

// field finds the field named key, trying hint (the field after the
// previous key) first: producers write the fields in declaration order,
// so that is nearly always a hit. Otherwise a linear scan, which beats
// hashing for the few fields of an event.
func (s *shape) field(key []byte, hint int) int {
	if hint < len(s.fields) && s.fields[hint].name == string(key) {
		return hint
	}
	for i := range s.fields {
		if s.fields[i].name == string(key) {
			return i
		}
	}
	return -1
}

type shapeKind uint8

const (
	shapeUnsupported shapeKind = iota // the fast path always gives up
	shapeString
	shapeInt // int, int64: an integer literal of at most 18 digits
	shapeFloat
	shapeBool
	shapeUnmarshaler // json.RawMessage, time.Time: the value's bytes go to UnmarshalJSON, as encoding/json does
	shapePtr
	shapeSlice
	shapeStruct
)

// shapeSub tells apart the types that share a kind.
type shapeSub uint8

const (
	subNone    shapeSub = iota
	subType             // events.Type: interned
	subInt              // int (shapeInt is int64 otherwise)
	subTime             // time.Time (shapeUnmarshaler is json.RawMessage otherwise)
	subStrings          // []string
)

var (
	shapes    sync.Map // reflect.Type -> *shape
	rawType   = reflect.TypeFor[json.RawMessage]()
	timeType  = reflect.TypeFor[time.Time]()
	typeType  = reflect.TypeFor[Type]()
	jsonUnm   = reflect.TypeFor[json.Unmarshaler]()
	textUnm   = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
	maxFields = 64
)

// shapeOf returns the cached shape of t.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s, _ := shapes.LoadOrStore(t, buildShape(t, map[reflect.Type]*shape{}))
	return s.(*shape)
}

func buildShape(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	if s, ok := seen[t]; ok {
		return s
	}
	s := &shape{typ: t}
	seen[t] = s
	switch {
	case t == rawType || t == timeType:
		s.kind = shapeUnmarshaler
		if t == timeType {
			s.sub = subTime
		}
		return s
	case t.Kind() != reflect.Pointer && (t.Implements(jsonUnm) || reflect.PointerTo(t).Implements(jsonUnm) ||
		t.Implements(textUnm) || reflect.PointerTo(t).Implements(textUnm)):
		return s // other custom decoding: leave it to the stream decoder
	}
	switch t.Kind() {
	case reflect.String:
		s.kind = shapeString
		if t == typeType {
			s.sub = subType
		}
	case reflect.Int, reflect.Int64:
		s.kind = shapeInt
		if t.Kind() == reflect.Int {
			s.sub = subInt
		}
	case reflect.Float64:
		s.kind = shapeFloat
	case reflect.Bool:
		s.kind = shapeBool
	case reflect.Pointer:
		s.kind, s.elem = shapePtr, buildShape(t.Elem(), seen)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return s // []byte is base64 in JSON
		}
		s.kind, s.elem = shapeSlice, buildShape(t.Elem(), seen)
		if t == reflect.TypeFor[[]string]() {
			s.sub = subStrings
		}
	case reflect.Struct:
		var fields []fieldShape
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				return s // embedded fields are flattened; events have none
			}
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(opts, "string") {
				return s
			}
			if name == "" {
				name = f.Name
			}
			if slices.ContainsFunc(fields, func(f fieldShape) bool { return f.name == name }) || len(fields) == maxFields {
				return s
			}
			fields = append(fields, fieldShape{name: name, member: strconv.Quote(name) + ":", offset: f.Offset, shape: buildShape(f.Type, seen)})
		}
		s.kind, s.fields = shapeStruct, fields
	}
	return s
}

// fastDecode decodes raw into the zero value v points to and reports
// whether it did; false leaves *v zero.
func fastDecode(raw []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !utf8.Valid(raw) {
		return false
	}
	target := rv.Elem()
	s := shapeOf(target.Type())
	if s.kind == shapeUnsupported || !allZero(rv.UnsafePointer(), target.Type().Size()) {
		return false // decoding into a non-zero value merges; leave that to the stream decoder
	}
	d := decoder{b: raw}
	d.ws()
	ok := d.value(s, rv.UnsafePointer(), 0)
	d.ws()
	if !ok || d.i != len(d.b) {
		target.SetZero()
		return false
	}
	return true
}

// allZero reports whether the n bytes at p are zero, which they are for
// a zero value (reflect.Value.IsZero walks the fields and costs more).
func allZero(p unsafe.Pointer, n uintptr) bool {
	b := unsafe.Slice((*byte)(p), n)
	for len(b) > len(zeros) {
		if !bytes.Equal(b[:len(zeros)], zeros[:]) {
			return false
		}
		b = b[len(zeros):]
	}
	return bytes.Equal(b, zeros[:len(b)])
}

var zeros [512]byte

type decoder struct {
	b    []byte
	i    int
	strs *strCache // nil: every string is allocated
}

// strCache hands out the strings it decoded recently instead of
// allocating them again: an event's short strings (states, types,
// statuses, sources, cities) mostly repeat from one event to the next. It
// is direct-mapped by hash and used by one goroutine at a time (fastEvent
// takes one from strCaches).
type strCache struct {
	slots [1 << 9]string
	// env is fastEvent's envelope while it decodes: decoding through
	// unsafe pointers would move a local one to the heap.
	env Envelope
}

// maxCached is the longest string strCache keeps; longer ones are mostly
// unique (ids, names, descriptions).
const maxCached = 24

var strCaches = sync.Pool{New: func() any { return new(strCache) }}

// shortHash mixes the length and the first and last eight bytes of b
// (all of it when shorter): cheap, and good enough to spread a cache's
// strings; a collision only costs a miss.
func shortHash(b []byte) uint64 {
	var h uint64
	if len(b) >= 8 {
		h = binary.LittleEndian.Uint64(b) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(b[len(b)-8:]), 29)
	} else {
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
	}
	return (h ^ uint64(len(b))) * 0x9e3779b97f4a7c15
}

// str returns b as a string, from the cache when it holds it.
func (c *strCache) str(b []byte) string {
	if c == nil || len(b) > maxCached {
		return string(b)
	}
	slot := &c.slots[shortHash(b)>>(64-9)]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}

const maxDepth = 32

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) lit(s string) bool {
	if len(d.b)-d.i < len(s) || string(d.b[d.i:d.i+len(s)]) != s {
		return false
	}
	d.i += len(s)
	return true
}

// value decodes one value of shape s into p.
func (d *decoder) value(s *shape, p unsafe.Pointer, depth int) bool {
	if depth > maxDepth {
		return false
	}
	if s.kind == shapeUnmarshaler {
		start := d.i
		if !d.skip(depth) {
			return false
		}
		// Both keep no reference to their argument: RawMessage copies it.
		if s.sub == subTime {
			return decodeTime(d.b[start:d.i], (*time.Time)(p))
		}
		return (*json.RawMessage)(p).UnmarshalJSON(d.b[start:d.i]) == nil
	}
	if d.peek() == 'n' {
		// null leaves a value at zero and a pointer or slice nil, in both decoders.
		return d.lit("null")
	}
	switch s.kind {
	case shapeString:
		start := d.i
		str, ok := d.str()
		if !ok {
			// An escape (or a control character: unescape gives up too).
			d.i = start
			v, ok := d.unescape()
			if !ok || s.sub == subType {
				return false
			}
			*(*string)(p) = v
			return true
		}
		if s.sub == subType {
			*(*Type)(p) = internType(str)
		} else {
			*(*string)(p) = d.strs.str(str)
		}
		return true
	case shapeInt:
		start := d.i
		digits, integer, ok := d.number()
		if !ok || !integer || digits > 18 {
			return false
		}
		n, neg := int64(0), false
		for _, c := range d.b[start:d.i] {
			if c == '-' {
				neg = true
				continue
			}
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		if s.sub == subInt {
			if int64(int(n)) != n {
				return false
			}
			*(*int)(p) = int(n)
		} else {
			*(*int64)(p) = n
		}
		return true
	case shapeFloat:
		start := d.i
		if _, _, ok := d.number(); !ok {
			return false
		}
		if f, ok := exactFloat(d.b[start:d.i]); ok {
			*(*float64)(p) = f
			return true
		}
		f, err := strconv.ParseFloat(unsafe.String(&d.b[start], d.i-start), 64)
		if err != nil {
			return false
		}
		*(*float64)(p) = f
		return true
	case shapeBool:
		switch {
		case d.lit("true"):
			*(*bool)(p) = true
		case d.lit("false"):
			*(*bool)(p) = false
		default:
			return false
		}
		return true
	case shapePtr:
		if s.elem.kind == shapeUnsupported {
			return false
		}
		e := reflect.New(s.elem.typ).UnsafePointer()
		if !d.value(s.elem, e, depth+1) {
			return false
		}
		*(*unsafe.Pointer)(p) = e
		return true
	case shapeSlice:
		return d.slice(s, p, depth)
	case shapeStruct:
		return d.object(s, p, depth)
	}
	return false
}

func (d *decoder) slice(s *shape, p unsafe.Pointer, depth int) bool {
	if d.peek() != '[' || s.elem.kind == shapeUnsupported {
		return false
	}
	d.i++
	var sv reflect.Value
	strs := (*[]string)(p)
	if s.sub == subStrings {
		*strs = make([]string, 0, 2) // encoding/json makes [] an empty, non-nil slice
	} else {
		sv = reflect.NewAt(s.typ, p).Elem()
		sv.Set(reflect.MakeSlice(s.typ, 0, 0))
	}
	d.ws()
	if d.peek() == ']' {
		d.i++
		return true
	}
	for {
		d.ws()
		if s.sub == subStrings {
			var e string
			if !d.value(s.elem, unsafe.Pointer(&e), depth+1) {
				return false
			}
			*strs = append(*strs, e)
		} else {
			e := reflect.New(s.elem.typ)
			if !d.value(s.elem, e.UnsafePointer(), depth+1) {
				return false
			}
			sv.Set(reflect.Append(sv, e.Elem()))
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// member reads an object member's key and colon (and the whitespace
// around them) and returns the index of the key's field in s, -1 when it
// names none (or is not a plain string). The field hint is tried first by
// comparing the input with its key and colon directly, which is what
// producers write (in declaration order, without whitespace).
func (d *decoder) member(s *shape, hint int) int {
	if hint < len(s.fields) {
		m := s.fields[hint].member
		if len(d.b)-d.i >= len(m) && string(d.b[d.i:d.i+len(m)]) == m {
			d.i += len(m)
			d.ws()
			return hint
		}
	}
	d.ws()
	k, ok := d.str()
	if !ok {
		return -1
	}
	d.ws()
	if d.peek() != ':' {
		return -1
	}
	d.i++
	d.ws()
	return s.field(k, hint)
}

func (d *decoder) object(s *shape, p unsafe.Pointer, depth int) bool {
	if d.peek() != '{' {
		return false
	}
	d.i++
	d.ws()
	if d.peek() == '}' {
		d.i++
		return true
	}
	var seen uint64
	f := -1
	for {
		f = d.member(s, f+1)
		if f < 0 || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		fs := &s.fields[f]
		if !d.value(fs.shape, unsafe.Add(p, fs.offset), depth+1) {
			return false
		}
		if d.i < len(d.b) && d.b[d.i] == ',' {
			d.i++
			continue
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// skip passes over any well-formed JSON value.
func (d *decoder) skip(depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch c := d.peek(); {
	case c == '"':
		_, ok := d.str()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, ok := d.number()
		return ok
	case c == 't':
		return d.lit("true")
	case c == 'f':
		return d.lit("false")
	case c == 'n':
		return d.lit("null")
	case c == '[' || c == '{':
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		d.i++
		d.ws()
		if d.peek() == end {
			d.i++
			return true
		}
		for {
			d.ws()
			if c == '{' {
				if _, ok := d.str(); !ok {
					return false
				}
				d.ws()
				if d.peek() != ':' {
					return false
				}
				d.i++
				d.ws()
			}
			if !d.skip(depth + 1) {
				return false
			}
			d.ws()
			switch d.peek() {
			case ',':
				d.i++
			case end:
				d.i++
				return true
			default:
				return false
			}
		}
	}
	return false
}

// str passes over a string without escapes or control characters and
// returns its contents (an escaped string gives up: ok is false).
func (d *decoder) str() (s []byte, ok bool) {
	if d.peek() != '"' {
		return nil, false
	}
	d.i++
	start := d.i
	// Eight bytes at a time while none is a quote, a backslash or a
	// control character.
	for d.i+8 <= len(d.b) {
		x := binary.LittleEndian.Uint64(d.b[d.i:])
		if hasZeroByte(x^(lsb*'"'))|hasZeroByte(x^(lsb*'\\'))|((x-lsb*0x20)&^x&msb) != 0 {
			break
		}
		d.i += 8
	}
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			d.i++
			return d.b[start : d.i-1], true
		}
		if c < 0x20 || c == '\\' {
			return nil, false
		}
		d.i++
	}
	return nil, false
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZeroByte is non-zero when one of x's bytes is zero.
func hasZeroByte(x uint64) uint64 { return (x - lsb) &^ x & msb }

// number passes over a JSON number; digits counts the integer part,
// integer is false when it has a fraction or exponent.
func (d *decoder) number() (digits int, integer, ok bool) {
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
		digits = 1
	case c >= '1' && c <= '9':
		digits = d.digits()
	default:
		return 0, false, false
	}
	integer = true
	if d.peek() == '.' {
		integer = false
		d.i++
		if d.digits() == 0 {
			return 0, false, false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		integer = false
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if d.digits() == 0 {
			return 0, false, false
		}
	}
	// A number ends at a delimiter: "1x" is not a number.
	if d.i == len(d.b) {
		return digits, integer, true
	}
	switch d.b[d.i] {
	case ' ', '\t', '\n', '\r', ',', ']', '}':
		return digits, integer, true
	}
	return 0, false, false
}

// digits passes over a run of decimal digits and returns its length.
func (d *decoder) digits() int {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// internType returns the constant for a known event type, saving an
// allocation per event.
func internType(b []byte) Type {
	for _, t := range Types {
		if string(t) == string(b) {
			return t
		}
	}
	return Type(b)
}

// decodeTime decodes a JSON time like time.Time's UnmarshalJSON, which it
// leaves every form but the common one to: "YYYY-MM-DDTHH:MM:SSZ" with
// every part in range.
func decodeTime(b []byte, t *time.Time) bool {
	if len(b) != 22 || b[0] != '"' || b[5] != '-' || b[8] != '-' || b[11] != 'T' ||
		b[14] != ':' || b[17] != ':' || b[20] != 'Z' || b[21] != '"' {
		return t.UnmarshalJSON(b) == nil
	}
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(b[1:5]), num(b[6:8]), num(b[9:11])
	hour, minute, sec := num(b[12:14]), num(b[15:17]), num(b[18:20])
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 ||
		minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return t.UnmarshalJSON(b) == nil
	}
	v := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if v.Day() != day { // the 31st of a 30-day month, say: normalised, so not this form
		return t.UnmarshalJSON(b) == nil
	}
	*t = v
	return true
}

// fastEvent is DecodeEvent's single pass: the envelope as fastDecode
// decodes it, and an upsert's data straight into its payload type (once
// the type is known: data before type is decoded after the object), with
// Data aliasing raw. It gives up, returning false, wherever fastDecode of
// the envelope or of Data would, and on data that is missing, null or on
// a type without a payload, so Decode and DecodeData produce the errors.
func fastEvent(raw []byte) (Envelope, bool) {
	if !utf8.Valid(raw) {
		return Envelope{}, false
	}
	strs := strCaches.Get().(*strCache)
	env, ok := strs.event(raw)
	strs.env = Envelope{}
	strCaches.Put(strs)
	return env, ok
}

func (strs *strCache) event(raw []byte) (Envelope, bool) {
	env := &strs.env
	s, dataField := envelopeShape(), envelopeData()
	d := decoder{b: raw, strs: strs}
	d.ws()
	if d.peek() != '{' {
		return Envelope{}, false
	}
	d.i++
	d.ws()
	dataStart, dataEnd := -1, -1
	var payload any
	var seen uint64
	f := -1
	for d.peek() != '}' {
		f = d.member(s, f+1)
		if f < 0 || seen&(1<<f) != 0 {
			return Envelope{}, false
		}
		seen |= 1 << f
		if f == dataField {
			if d.peek() != '{' {
				return Envelope{}, false // null, or not an object: Decode says why
			}
			dataStart = d.i
			if payload = newPayload(env.Type); payload != nil {
				if !decodePayload(&d, payload) {
					return Envelope{}, false
				}
			} else if !d.skip(0) { // the type comes later (or has no payload)
				return Envelope{}, false
			}
			dataEnd = d.i
		} else {
			fs := &s.fields[f]
			if !d.value(fs.shape, unsafe.Add(unsafe.Pointer(env), fs.offset), 1) {
				return Envelope{}, false
			}
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
			d.ws()
			if d.peek() == '}' {
				return Envelope{}, false // a trailing comma
			}
		case '}':
		default:
			return Envelope{}, false
		}
	}
	d.i++
	d.ws()
	if d.i != len(d.b) {
		return Envelope{}, false
	}
	if dataStart < 0 {
		return *env, env.Type.IsDelete() // an upsert without data: Decode says why
	}
	if payload == nil {
		if payload = newPayload(env.Type); payload == nil {
			return Envelope{}, false
		}
		pd := decoder{b: raw[:dataEnd], i: dataStart, strs: strs}
		if !decodePayload(&pd, payload) || pd.i != dataEnd {
			return Envelope{}, false
		}
	}
	env.Data = raw[dataStart:dataEnd:dataEnd]
	env.payload = payload
	return *env, true
}

var (
	envelopeShape = sync.OnceValue(func() *shape { return shapeOf(reflect.TypeFor[Envelope]()) })
	envelopeData  = sync.OnceValue(func() int { return envelopeShape().field([]byte("data"), 0) }) // the field index of Data
)

// decodePayload decodes the object at d into payload, a pointer to a zero
// payload struct, as fastDecode would.
func decodePayload(d *decoder, payload any) bool {
	v := reflect.ValueOf(payload)
	return d.value(shapeOf(v.Type().Elem()), v.UnsafePointer(), 0)
}

// exactFloat converts a plain decimal (no exponent) of at most 15
// significant digits and 22 fraction digits, a JSON number already
// checked: its digits and its power of ten are exact float64s, so one
// IEEE division rounds it correctly, as strconv.ParseFloat does (which
// takes the same path after more parsing). ok is false for anything else.
func exactFloat(b []byte) (f float64, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var mant uint64
	digits, frac, point := 0, 0, false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if mant != 0 || c != '0' {
				digits++
			}
			mant = mant*10 + uint64(c-'0')
			if point {
				frac++
			}
		case c == '.' && !point:
			point = true
		default:
			return 0, false // an exponent
		}
	}
	if digits > 15 || frac > 22 {
		return 0, false
	}
	f = float64(mant) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// unescape reads a string value with escapes as encoding/json does, for
// the escapes it can reproduce exactly: \" \\ \/ \b \f \n \r \t and
// \uXXXX outside the surrogate range (a surrogate, paired or not, gives
// up: encoding/json pairs or replaces them). A control character gives up
// too. The input is valid UTF-8 (fastEvent and fastDecode check).
func (d *decoder) unescape() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	d.i++
	var out []byte
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if d.i+4 > len(d.b) {
				return "", false
			}
			var r rune
			for _, h := range d.b[d.i : d.i+4] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				return "", false
			}
			d.i += 4
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return "", false
}
