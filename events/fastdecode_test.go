package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// fastTargets are the types decodeStrict decodes: the envelope and every
// payload.
var fastTargets = []reflect.Type{
	reflect.TypeFor[Envelope](), reflect.TypeFor[Location](), reflect.TypeFor[Permit](),
	reflect.TypeFor[Property](), reflect.TypeFor[GeoSignal](), reflect.TypeFor[Lead](),
	reflect.TypeFor[CatalogEntry](),
}

// filled returns a value of t with every field set (pointers non-nil,
// slices of two), so its JSON exercises every field.
func filled(t reflect.Type, seed int) reflect.Value {
	v := reflect.New(t).Elem()
	switch {
	case t == rawType:
		v.SetBytes([]byte(fmt.Sprintf(`{"k":[%d,"v",true,null,{"x":1.5e3}]}`, seed)))
		return v
	case t == timeType:
		v.Set(reflect.ValueOf(time.Date(2024, 5, 6, 7, 8, 9, seed*1000, time.UTC)))
		return v
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d é, long enough to cross 8-byte words", seed))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed*7 - 3))
	case reflect.Float64:
		v.SetFloat(float64(seed) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(filled(t.Elem(), seed).Addr())
	case reflect.Slice:
		v.Set(reflect.Append(reflect.MakeSlice(t, 0, 2), filled(t.Elem(), seed), filled(t.Elem(), seed+1)))
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(filled(t.Field(i).Type, seed+i))
			}
		}
	}
	return v
}

// mutations yields raw and variants of it that probe the fast path's
// edges: every byte dropped, duplicated or replaced, keys case-folded,
// strings escaped, values nulled.
func mutations(raw []byte) [][]byte {
	out := [][]byte{raw}
	add := func(b []byte) { out = append(out, b) }
	for i := range raw {
		add(append(bytes.Clone(raw[:i]), raw[i+1:]...))
		add(append(bytes.Clone(raw[:i+1]), raw[i:]...))
		for _, c := range []byte{'"', ',', '}', ']', '0', '-', '.', 'e', ' ', 0, '\\', 'n', 0xff} {
			m := bytes.Clone(raw)
			m[i] = c
			add(m)
		}
	}
	add(bytes.ToUpper(raw))
	add(bytes.Replace(raw, []byte(`":"`), []byte(`":"\u0041`), 1))
	add(bytes.Replace(raw, []byte(`":`), []byte(`":null,"x":`), 1))
	add(append(bytes.Clone(raw), " {}"...))
	add(append(bytes.Clone(raw), "\n\t "...))
	add(append([]byte(" \n"), raw...))
	add([]byte("null"))
	add([]byte("{}"))
	add([]byte(`{"data":null}`))
	add([]byte(`{"entity_version":1e2}`))
	add([]byte(`{"entity_version":123456789012345678901}`))
	add([]byte(`{"entity_version":-0}`))
	add([]byte(`{"occurred_at":"2024-13-01T00:00:00Z"}`))
	add([]byte(`{"aliases":[]}`))
	add([]byte(`{"aliases":null,"lat":-0.0}`))
	add([]byte(`{"housing_units":null,"valuation":1E-2}`))
	return out
}

// TestFastDecodeAgrees holds fastDecode to the strict stream decoder:
// whatever the fast path accepts, the stream decoder accepts too and
// decodes to the same value.
func TestFastDecodeAgrees(t *testing.T) {
	for _, typ := range fastTargets {
		t.Run(typ.Name(), func(t *testing.T) {
			raw, err := json.Marshal(filled(typ, 1).Interface())
			if err != nil {
				t.Fatal(err)
			}
			fast := 0
			for _, m := range mutations(raw) {
				if agreeOnce(t, typ, m) {
					fast++
				}
			}
			if !agreeOnce(t, typ, raw) {
				t.Fatalf("the fast path gave up on a plain %s: %s", typ, raw)
			}
			t.Logf("%d inputs took the fast path", fast)
		})
	}
}

func agreeOnce(t *testing.T, typ reflect.Type, raw []byte) bool {
	t.Helper()
	got := reflect.New(typ)
	if !fastDecode(raw, got.Interface()) {
		if !got.Elem().IsZero() {
			t.Fatalf("fast path gave up but left a value: %q", raw)
		}
		return false
	}
	want := reflect.New(typ)
	if err := decodeStream(raw, want.Interface()); err != nil {
		t.Fatalf("fast path accepted what the stream decoder rejects (%v): %q", err, raw)
	}
	if !reflect.DeepEqual(got.Interface(), want.Interface()) {
		t.Fatalf("fast path decoded %q differently:\n got %#v\nwant %#v", raw, got.Elem().Interface(), want.Elem().Interface())
	}
	return true
}

// FuzzFastDecodeAgrees extends the test to arbitrary input.
func FuzzFastDecodeAgrees(f *testing.F) {
	for _, typ := range fastTargets {
		raw, err := json.Marshal(filled(typ, 1).Interface())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, typ := range fastTargets {
			agreeOnce(t, typ, raw)
		}
	})
}
