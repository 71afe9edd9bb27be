package events

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strconv"
	"time"
	"unsafe"
)

// decodeStrict's fast path: this file (the decoder and its composites),
// fastshape.go (what it knows of each Go type), fastscalar.go (strings,
// numbers, times) and fastevent.go (DecodeEvent's single pass). A general strict decoder
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
// event type, a control character, large integers, unusual kinds, input
// that is not valid UTF-8: each string is checked as it is passed over,
// the only place such bytes can be in input it accepts) it gives
// up and the input goes through the stream decoder as before, which also
// produces every error message: the fast path never rejects anything
// itself, so it cannot change what is accepted. TestFastDecodeAgrees,
// FuzzFastDecodeAgrees and TestUnescapeAgrees hold the two to the same
// results.

// fastDecode decodes raw into the zero value v points to and reports
// whether it did; false leaves *v zero.
func fastDecode(raw []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
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
	// lent: the value is lent for a call (WithEvent, Parse), and its
	// pointers to numbers and its lists of strings are taken from strs's
	// blocks (strCache.float, strCache.list).
	lent bool
}

const maxDepth = 32

func (d *decoder) ws() {
	// Whitespace is at most ' ': one comparison passes what follows it,
	// which is mostly no whitespace at all (producers write none).
	for d.i < len(d.b) && d.b[d.i] <= ' ' {
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
		if s.sub == subType {
			str, ok := d.str()
			if !ok {
				return false // an escaped type: the stream decoder says what it is
			}
			*(*Type)(p) = internType(str)
			return true
		}
		v, ok := d.string()
		if ok {
			*(*string)(p) = v
		}
		return ok
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
		var e unsafe.Pointer
		if s.elem.kind == shapeFloat && d.lent {
			e = d.strs.float()
		} else {
			e = reflect.New(s.elem.typ).UnsafePointer()
		}
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

// string decodes a string value (plain, cached, or with escapes).
func (d *decoder) string() (string, bool) {
	start := d.i
	str, ok := d.str()
	if !ok {
		// An escape (or a control character: unescape gives up too).
		d.i = start
		return d.unescape()
	}
	return d.strs.str(str), true
}

func (d *decoder) slice(s *shape, p unsafe.Pointer, depth int) bool {
	if d.peek() != '[' || s.elem.kind == shapeUnsupported {
		return false
	}
	d.i++
	if s.sub == subStrings {
		return d.strings((*[]string)(p), depth+1)
	}
	sv := reflect.NewAt(s.typ, p).Elem()
	sv.Set(reflect.MakeSlice(s.typ, 0, 0))
	d.ws()
	if d.peek() == ']' {
		d.i++
		return true
	}
	for {
		d.ws()
		e := reflect.New(s.elem.typ)
		if !d.value(s.elem, e.UnsafePointer(), depth+1) {
			return false
		}
		sv.Set(reflect.Append(sv, e.Elem()))
		if last, ok := d.next(']'); last || !ok {
			return ok
		}
	}
}

// strings decodes the elements of a []string, after its '[', into *out:
// gathered on the stack and then copied into one slice of their number,
// lent from the goroutine's block (strCache.list); decoding each through
// value moved it to the heap, and appending grew the slice a step at a
// time. Elements are at depth: beyond maxDepth
// an element gives up, as value does; null is "" (encoding/json leaves
// the element zero). [] is an empty, non-nil slice, as encoding/json
// makes it.
func (d *decoder) strings(out *[]string, depth int) bool {
	var buf [8]string
	elems := buf[:0]
	d.ws()
	if d.peek() == ']' {
		d.i++
		*out = []string{}
		return true
	}
	if depth > maxDepth {
		return false
	}
	for {
		d.ws()
		var e string
		if d.peek() == 'n' {
			if !d.lit("null") {
				return false
			}
		} else {
			v, ok := d.string()
			if !ok {
				return false
			}
			e = v
		}
		elems = append(elems, e)
		if last, ok := d.next(']'); last || !ok {
			if ok && d.lent {
				*out = append(d.strs.list(len(elems)), elems...)
			} else if ok {
				*out = append(make([]string, 0, len(elems)), elems...)
			}
			return ok
		}
	}
}

// next passes over the whitespace after a member or element of the
// object or array that end closes and then its ',' (last false) or end
// (last true); ok is false, passing over nothing more, when neither
// comes.
func (d *decoder) next(end byte) (last, ok bool) {
	d.ws()
	switch d.peek() {
	case ',':
		d.i++
		return false, true
	case end:
		d.i++
		return true, true
	}
	return false, false
}

// member reads an object member's key and colon (and the whitespace
// around them) and returns the index of the key's field in s, -1 when it
// names none (or is not a plain string). The field hint is tried first by
// comparing the input with its key and colon directly, which is what
// producers write (in declaration order, without whitespace).
func (d *decoder) member(s *shape, hint int) int {
	if hint < len(s.fields) {
		f := &s.fields[hint]
		if n := len(f.member); n <= 16 && len(d.b)-d.i >= 16 {
			// Two words of input against the key's, masked to its length.
			if binary.LittleEndian.Uint64(d.b[d.i:])&f.mask[0] == f.word[0] &&
				binary.LittleEndian.Uint64(d.b[d.i+8:])&f.mask[1] == f.word[1] {
				d.i += n
				d.ws()
				return hint
			}
		} else if len(d.b)-d.i >= n && string(d.b[d.i:d.i+n]) == f.member {
			d.i += n
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
		if last, ok := d.next('}'); last || !ok {
			return ok
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
			if last, ok := d.next(end); last || !ok {
				return ok
			}
		}
	}
	return false
}
