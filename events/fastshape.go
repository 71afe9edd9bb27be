package events

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fast decoder's knowledge of the Go types it decodes into (see
// fastdecode.go): each type's shape, built once by reflection and cached.

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
	// member's first sixteen bytes as two little-endian words (zero past
	// its end) and the masks of its bytes in them, when it has at most
	// sixteen (decoder.member compares them without a call).
	word, mask [2]uint64
	offset     uintptr
	shape      *shape
}

// memberWords sets f's word and mask from f.member.
func (f *fieldShape) memberWords() {
	if len(f.member) > 16 {
		return
	}
	for i := range len(f.member) {
		f.word[i/8] |= uint64(f.member[i]) << (8 * (i % 8))
		f.mask[i/8] |= 0xff << (8 * (i % 8))
	}
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
			fs := fieldShape{name: name, member: strconv.Quote(name) + ":", offset: f.Offset, shape: buildShape(f.Type, seen)}
			fs.memberWords()
			fields = append(fields, fs)
		}
		s.kind, s.fields = shapeStruct, fields
	}
	return s
}
