package events

import (
	"reflect"
	"sync"
	"unsafe"
)

// fastEvent is DecodeEvent's and WithEvent's single pass: the envelope as
// fastDecode decodes it, and an upsert's data straight into its payload
// type (a pooled one when pooled; once the type is known: data before
// type is decoded after the object), with Data aliasing raw. It gives up, returning false, wherever fastDecode of
// the envelope or of Data would (input that is not valid UTF-8 included:
// the decoder checks each string it passes over, decoder.str), and on
// data that is missing, null or on a type without a payload, so Decode
// and DecodeData produce the errors.
func fastEvent(raw []byte, pooled bool) (Envelope, bool) {
	strs := strCaches.Get().(*strCache)
	env, ok := strs.event(raw, pooled)
	strs.env = Envelope{}
	strCaches.Put(strs)
	return env, ok
}

func (strs *strCache) event(raw []byte, pooled bool) (Envelope, bool) {
	env := &strs.env
	s, dataField, eventIDField := envelopeShape(), envelopeData(), envelopeEventID()
	d := decoder{b: raw, strs: strs, lent: pooled}
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
			if payload = newPayload(env.Type, pooled); payload != nil {
				if !decodePayload(&d, payload) {
					return Envelope{}, false
				}
			} else if !d.skip(0) { // the type comes later (or has no payload)
				return Envelope{}, false
			}
			dataEnd = d.i
		} else if f == eventIDField && pooled && d.aliased(&env.EventID) {
			// Lent: the event id aliases raw, as Data does. Nothing reads
			// it but the check that it is there: a string of its own was
			// one allocation of every event (ids are longer than the
			// cache keeps).
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
		if payload = newPayload(env.Type, pooled); payload == nil {
			return Envelope{}, false
		}
		pd := decoder{b: raw[:dataEnd], i: dataStart, strs: strs, lent: pooled}
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
	// envelopeEventID is the field index of EventID.
	envelopeEventID = sync.OnceValue(func() int { return envelopeShape().field([]byte("event_id"), 0) })
)

// aliased decodes a string without escapes into *s as a string aliasing
// d's input, and reports whether it did (an escaped string or any other
// value is left for value, d unmoved).
func (d *decoder) aliased(s *string) bool {
	start := d.i
	b, ok := d.str()
	if !ok {
		d.i = start
		return false
	}
	*s = unsafe.String(unsafe.SliceData(b), len(b))
	return true
}

// decodePayload decodes the object at d into payload, a pointer to a zero
// payload struct, as fastDecode would.
func decodePayload(d *decoder, payload any) bool {
	v := reflect.ValueOf(payload)
	return d.value(shapeOf(v.Type().Elem()), v.UnsafePointer(), 0)
}
