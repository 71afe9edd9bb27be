package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"
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

// eventSamples are valid events of every type, in the producers' field
// order and with data before type.
func eventSamples(t testing.TB) [][]byte {
	var out [][]byte
	for i, typ := range Types {
		var data any
		if p := newPayload(typ, false); p != nil {
			data = filled(reflect.TypeOf(p).Elem(), i).Addr().Interface()
		}
		env, err := New(typ, fmt.Sprintf("id-%d", i), int64(i+1), time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), "test", data)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
		if data != nil {
			// The same fields with data first.
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			first := []byte(`{"data":` + string(m["data"]))
			for _, k := range []string{"type", "event_id", "entity_id", "entity_version", "occurred_at", "source", "schema_version"} {
				first = append(first, `,"`+k+`":`+string(m[k])...)
			}
			out = append(out, append(first, '}'))
		}
	}
	return out
}

// TestDecodeEventAgrees holds DecodeEvent to Decode followed by
// DecodeData: the same errors, the same envelope and the same payload.
func TestDecodeEventAgrees(t *testing.T) {
	fast := 0
	for _, raw := range eventSamples(t) {
		env, err := DecodeEvent(raw)
		if err != nil || (env.payload == nil) != env.Type.IsDelete() {
			t.Fatalf("a valid event missed the single pass (err %v): %s", err, raw)
		}
		for _, m := range mutations(raw) {
			if agreeEvent(t, m) {
				fast++
			}
		}
	}
	t.Logf("%d inputs took the single pass", fast)
}

// agreeEvent compares DecodeEvent with Decode+DecodeData on raw and
// reports whether the single pass decoded it.
func agreeEvent(t *testing.T, raw []byte) bool {
	t.Helper()
	got, gotErr := DecodeEvent(raw)
	want, wantErr := Decode(raw)
	if !sameErr(gotErr, wantErr) {
		t.Fatalf("errors differ on %q:\n got %v\nwant %v", raw, gotErr, wantErr)
	}
	if wantErr != nil {
		return false
	}
	if !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("Data differs on %q: got %q want %q", raw, got.Data, want.Data)
	}
	// Lent (WithEvent), the envelope's fields are the same (its event id
	// aliases raw there).
	if err := WithEvent(raw, func(env Envelope) error {
		env.Data, env.payload = nil, nil
		w := want
		w.Data = nil
		if !reflect.DeepEqual(env, w) {
			t.Fatalf("WithEvent decoded %q's envelope differently:\n got %#v\nwant %#v", raw, env, w)
		}
		return nil
	}); err != nil {
		t.Fatalf("WithEvent failed on %q: %v", raw, err)
	}
	single := got.payload != nil
	p := newPayload(want.Type, false)
	if p == nil {
		return single
	}
	wantP, gotP := newPayload(want.Type, false), newPayload(want.Type, false)
	wantPErr := DecodeData(want, wantP)
	gotPErr := DecodeData(got, gotP)
	if !sameErr(gotPErr, wantPErr) {
		t.Fatalf("payload errors differ on %q:\n got %v\nwant %v", raw, gotPErr, wantPErr)
	}
	if single && wantPErr != nil {
		t.Fatalf("the single pass accepted a payload DecodeData rejects (%v): %q", wantPErr, raw)
	}
	got.Data, want.Data, got.payload = nil, nil, nil
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotP, wantP) {
		t.Fatalf("DecodeEvent decoded %q differently:\n got %#v %#v\nwant %#v %#v", raw, got, gotP, want, wantP)
	}
	if single && wantPErr == nil {
		// The lent pass (WithEvent: a pooled payload, its numbers from
		// blocks, its event id aliasing raw) decodes the same event.
		err := WithEvent(raw, func(env Envelope) error {
			if env.payload != nil && !reflect.DeepEqual(env.payload, wantP) {
				t.Fatalf("WithEvent decoded %q differently:\n got %#v\nwant %#v", raw, env.payload, wantP)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("WithEvent failed on %q: %v", raw, err)
		}
	}
	return single
}

// sameErr reports whether two decoding results agree: both succeed, or
// both fail with ErrInvalid and the same message.
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return errors.Is(a, ErrInvalid) && errors.Is(b, ErrInvalid) && a.Error() == b.Error()
}

// FuzzDecodeEventAgrees extends TestDecodeEventAgrees to arbitrary input.
func FuzzDecodeEventAgrees(f *testing.F) {
	for _, raw := range eventSamples(f) {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { agreeEvent(t, raw) })
}

// TestDecodeTimeAgrees holds decodeTime to time.Time's UnmarshalJSON.
func TestDecodeTimeAgrees(t *testing.T) {
	in := []string{
		`"2024-05-06T07:08:09Z"`, `"2024-02-29T23:59:59Z"`, `"2023-02-29T00:00:00Z"`, `"2024-04-31T00:00:00Z"`,
		`"2024-13-01T00:00:00Z"`, `"2024-00-01T00:00:00Z"`, `"2024-01-00T00:00:00Z"`, `"2024-01-01T24:00:00Z"`,
		`"2024-01-01T00:60:00Z"`, `"2024-01-01T00:00:60Z"`, `"0000-01-01T00:00:00Z"`, `"9999-12-31T23:59:59Z"`,
		`"2024-01-01t00:00:00Z"`, `"2024-01-01T00:00:00z"`, `"2024-01-01T00:00:00+01:00"`, `"2024-01-01T00:00:00.5Z"`,
		`"2024-01-0aT00:00:00Z"`, `"+024-01-01T00:00:00Z"`, `"-024-01-01T00:00:00Z"`, `"2024-1-01T00:00:00Z"`, `null`,
	}
	for _, s := range in {
		var want time.Time
		wantErr := want.UnmarshalJSON([]byte(s))
		var got time.Time
		ok := decodeTime([]byte(s), &got)
		if ok != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decodeTime %v %#v, UnmarshalJSON %v %#v", s, ok, got, wantErr, want)
		}
	}
}

// TestExactFloatAgrees holds exactFloat to strconv.ParseFloat, bit for bit.
func TestExactFloatAgrees(t *testing.T) {
	in := []string{"0", "-0", "0.0", "-0.0", "47.6062", "-122.3321", "0.1", "0.3", "1.5", "123456789012345",
		"1234567890123456", "0.000000000000000000001", "0.0000000000000000000001", "0.00000000000000000000001",
		"999999999999999.9", "99999999999999.99", "125000", "1e3", "0.30000000000000004", "9007199254740993"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		in = append(in, strconv.FormatFloat((r.Float64()-0.5)*math.Pow(10, float64(r.IntN(12)-4)), 'f', r.IntN(12), 64))
	}
	fast := 0
	for _, s := range in {
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := exactFloat([]byte(s))
		if !ok {
			continue
		}
		fast++
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: exactFloat %v (%#x), ParseFloat %v (%#x)", s, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	t.Logf("%d of %d took the exact path", fast, len(in))
}

// TestWithEventLends: the payload WithEvent lends comes back zeroed for
// the next event once fn returned, and what fn copied out of it stays as
// it was.
func TestWithEventLends(t *testing.T) {
	for i := range 100 {
		var kept Location
		lend(t, locationRaw(t, fmt.Sprint("a", i), []string{"x", "y"}), func(p *Location) { kept = *p }) // what a projection copies
		var q Location
		lend(t, locationRaw(t, fmt.Sprint("b", i), nil), func(p *Location) { q = *p })
		if kept.Name != fmt.Sprint("a", i) || !reflect.DeepEqual(kept.Aliases, []string{"x", "y"}) {
			t.Fatalf("a copy changed after its payload was reused: %+v", kept)
		}
		if q.Name != fmt.Sprint("b", i) || q.Aliases != nil {
			t.Fatalf("a reused payload kept old fields: %+v", q)
		}
	}
}

// TestDecodeEventIsTheCallers: what DecodeEvent returns shares nothing
// with raw or with the payloads WithEvent lends and reuses.
func TestDecodeEventIsTheCallers(t *testing.T) {
	raw := locationRaw(t, "Seattle", []string{"x"})
	env, err := DecodeEvent(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Payload[Location](env)
	if err != nil {
		t.Fatal(err)
	}
	data := string(env.Data)
	for i := range raw {
		raw[i] = ' ' // the caller's buffer, reused for the next message
	}
	for i := range 50 {
		lend(t, locationRaw(t, fmt.Sprint("other", i), nil), func(*Location) {})
	}
	if string(env.Data) != data {
		t.Fatalf("Data aliases the input: %q", env.Data)
	}
	if p.Name != "Seattle" || !reflect.DeepEqual(p.Aliases, []string{"x"}) {
		t.Fatalf("the payload was reused: %+v", p)
	}
}

func locationRaw(t *testing.T, name string, aliases []string) []byte {
	t.Helper()
	return rawEvent(t, LocationUpserted, "city-"+name, 1, time.Unix(0, 0), "test", &Location{
		GeoType: "city", Name: name, DisplayName: name + ", WA", State: "WA", StateName: "Washington", Aliases: aliases,
	})
}

// rawEvent is the message of an event New makes.
func rawEvent(t *testing.T, typ Type, entityID string, version int64, at time.Time, source string, data any) []byte {
	t.Helper()
	env, err := New(typ, entityID, version, at, source, data)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// lend runs fn on the payload WithEvent lends for raw.
func lend(t *testing.T, raw []byte, fn func(*Location)) {
	t.Helper()
	err := WithEvent(raw, func(env Envelope) error {
		p, err := Payload[Location](env)
		if err != nil {
			return err
		}
		fn(p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnescapeAgrees: escaped strings take the fast path and decode as
// encoding/json decodes them; the escapes it cannot reproduce give up.
func TestUnescapeAgrees(t *testing.T) {
	fast := 0
	for _, lit := range []string{
		`"plain"`, `"a\"b"`, `"back\\slash"`, `"a\/b"`, `"\b\f\n\r\t"`, `"caf\u00e9"`, `"\u00E9\u4e2d"`,
		`"nul\u0000"`, `"x\u0041y"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, `"\u12"`, `"\u12g4"`, `"\x"`,
		`"tab	raw"`, `"end\"`, `"é\n"`, `"<b>\u0026amp;</b>"`,
	} {
		raw := []byte(`{"geo_type":"city","name":` + lit + `,"state":"WA"}`)
		if agreeOnce(t, reflect.TypeFor[Location](), raw) {
			fast++
		}
	}
	if fast != 11 {
		t.Fatalf("%d escaped strings took the fast path, want 11", fast)
	}
	t.Logf("%d took the fast path", fast)
}

// TestInvalidUTF8GivesUp: the fast paths check UTF-8 in the strings as
// they pass over them (no pass of their own over the input), so input
// that is not valid UTF-8 anywhere, in a plain, long, escaped or skipped
// string or between tokens, gives up to Decode, which rejects it; valid
// multi-byte text takes the fast path and decodes as Decode decodes it.
func TestInvalidUTF8GivesUp(t *testing.T) {
	loc := string(locationRaw(t, "NAME", nil))
	sigRaw := rawEvent(t, GeoSignalUpserted, "sig-1", 1, time.Unix(0, 0), "SOURCE", &GeoSignal{
		GeoID: "zip-98101", SignalKey: "permit_velocity", Value: json.RawMessage(`{"note":"VALUE"}`), Decision: "neutral", Reasons: []string{"A"},
	})
	signal := string(sigRaw)
	for _, c := range []struct{ name, raw string }{
		{"short string", strings.Replace(loc, "NAME", "Se\xfft", 1)},
		{"long string", strings.Replace(loc, "NAME", "Seattle, Washington \xff and more", 1)},
		{"truncated sequence at the end", strings.Replace(loc, "NAME", "Z\xc3", 1)},
		{"truncated sequence in the eight-byte loop", strings.Replace(loc, "NAME", "Z\xe6\x9dabcdefghijk", 1)},
		{"surrogate as UTF-8", strings.Replace(loc, "NAME", "x\xed\xa0\x80", 1)},
		{"escaped string", strings.Replace(loc, "NAME", `Se\n`+"\xfftle", 1)},
		{"envelope string", strings.Replace(signal, "SOURCE", "so\xc0\xafrce", 1)},
		{"skipped value", strings.Replace(signal, "VALUE", "v\xffalue", 1)},
		{"between tokens", strings.Replace(loc, `,"state"`, ",\xff\"state\"", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := []byte(c.raw)
			if raw2 := []byte(c.raw); bytes.Equal(raw2, []byte(loc)) || bytes.Equal(raw2, sigRaw) {
				t.Fatal("the case changed nothing")
			}
			if _, ok := fastEvent(raw, false); ok {
				t.Fatalf("the single pass took input that is not valid UTF-8: %q", raw)
			}
			var env Envelope
			if fastDecode(raw, &env) {
				t.Fatalf("fastDecode took input that is not valid UTF-8: %q", raw)
			}
			if _, err := DecodeEvent(raw); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
				t.Fatalf("DecodeEvent: %v, want not valid UTF-8", err)
			}
		})
	}
	for _, name := range []string{"Zürich", "東京", "Kraków 😀 Łódź, long enough for the eight-byte loop", `caf\u00e9 é`} {
		raw := []byte(strings.Replace(loc, "NAME", name, 1))
		env, ok := fastEvent(raw, false)
		if !ok {
			t.Fatalf("valid UTF-8 missed the single pass: %q", raw)
		}
		want, err := DecodeEvent(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := env.payload.(*Location)
		if w, _ := want.payload.(*Location); got == nil || w == nil || got.Name != w.Name {
			t.Fatalf("decoded %q differently: %+v against %+v", raw, got, w)
		}
		agreeEvent(t, raw)
	}
}

// TestStringListsAgree: string lists decode on the fast path as
// encoding/json decodes them (null elements, escapes, more elements than
// the stack holds), and a list of n strings costs n+1 allocations: its
// strings and one slice of n (one more past eight elements).
func TestStringListsAgree(t *testing.T) {
	long := make([]string, 20)
	for i := range long {
		long[i] = strconv.Quote(fmt.Sprint("alias number ", i))
	}
	fast := 0
	for _, list := range []string{
		`[]`, `[ ]`, `null`, `[null]`, `["a"]`, `["a","b"]`, `[ "a" , null , "b" ]`,
		`["1","2","3","4","5","6","7","8"]`, `["1","2","3","4","5","6","7","8","9"]`, "[" + strings.Join(long, ",") + "]",
		`["a\n","caf\u00e9"]`, `["a",]`, `[1]`, `["a" "b"]`, `[,"a"]`, `["a"`, `[[]]`, `[{}]`, `["\ud800"]`,
	} {
		raw := []byte(`{"geo_type":"city","name":"x","aliases":` + list + `,"state":"WA"}`)
		if agreeOnce(t, reflect.TypeFor[Location](), raw) {
			fast++
		}
	}
	if fast != 11 {
		t.Fatalf("%d lists took the fast path, want 11", fast)
	}
	allocs := func(n int) float64 {
		aliases := make([]string, n)
		for i := range aliases {
			aliases[i] = fmt.Sprintf("%q", fmt.Sprint("alias ", i))
		}
		raw := []byte(`{"geo_type":"city","name":"x","aliases":[` + strings.Join(aliases, ",") + `],"state":"WA"}`)
		return testing.AllocsPerRun(100, func() {
			var l Location
			if !fastDecode(raw, &l) {
				t.Fatalf("the fast path gave up on %s", raw)
			}
		})
	}
	base := allocs(0)
	for _, n := range []int{1, 3, 8, 12} {
		want := n + 1
		if n > 8 {
			want++ // the elements outgrew the stack
		}
		if got := allocs(n) - base; got != float64(want) {
			t.Fatalf("a list of %d strings took %v allocations, want %d", n, got, want)
		}
	}
}

// TestLentNumbersFromBlocks: a lent permit's pointers to numbers come
// from a block (strCache.float) and keep their values while many more
// events are decoded after it (a block is never handed out twice), each
// its own, and cost one allocation a block instead of one each; an owned
// one (DecodeEvent) allocates each as before.
func TestLentNumbersFromBlocks(t *testing.T) {
	at := time.Date(2025, 11, 6, 0, 0, 0, 0, time.UTC)
	permit := func(i int) []byte {
		v, lat, lon := float64(1000+i), 40+float64(i)/1000, -100-float64(i)/1000
		return rawEvent(t, PermitUpserted, PermitDocID("src", fmt.Sprint("P", i)), 1, at, "src", &Permit{
			PermitNumber: fmt.Sprint("P", i), Valuation: &v, Lat: &lat, Lon: &lon, Source: "src",
			Address: PermitAddress{Line: "1 MAIN ST", City: "SEATTLE", State: "WA", Zipcode: "98117"},
		})
	}
	const n = 3 * floatBlock
	raws := make([][]byte, n)
	for i := range raws {
		raws[i] = permit(i)
	}
	type held struct{ v, lat, lon *float64 }
	kept := make([]held, n)
	seen := map[*float64]bool{}
	for i, raw := range raws {
		err := WithEvent(raw, func(env Envelope) error {
			p, err := Payload[Permit](env)
			if err != nil {
				return err
			}
			kept[i] = held{p.Valuation, p.Lat, p.Lon} // the pointers, as a projection may hold them
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []*float64{kept[i].v, kept[i].lat, kept[i].lon} {
			if f == nil || seen[f] {
				t.Fatalf("event %d: a number's pointer %p nil or handed out before", i, f)
			}
			seen[f] = true
		}
	}
	for i, h := range kept {
		if *h.v != float64(1000+i) || *h.lat != 40+float64(i)/1000 || *h.lon != -100-float64(i)/1000 {
			t.Fatalf("event %d's numbers changed after later events: %v %v %v", i, *h.v, *h.lat, *h.lon)
		}
	}
	allocs := func(decode func([]byte)) float64 {
		return testing.AllocsPerRun(floatBlock*4, func() { decode(raws[0]) })
	}
	lent := allocs(func(raw []byte) {
		if err := WithEvent(raw, func(Envelope) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	owned := allocs(func(raw []byte) {
		if _, err := DecodeEvent(raw); err != nil {
			t.Fatal(err)
		}
	})
	// Three numbers each: lent, about 3/floatBlock of a block per event;
	// owned, three more than its own payload's other allocations.
	if owned-lent < 2.9 {
		t.Fatalf("lent %v allocations an event, owned %v: want about three fewer lent", lent, owned)
	}
}

// TestLentSharesLongerValues: a lent permit's repeated values up to
// maxCached bytes (a 30-byte work type, a 43-byte contractor) are the
// same string in every event that carries them, as short ones are, so
// the read model's interning finds them by address; a longer value (a
// description) is each event's own.
func TestLentSharesLongerValues(t *testing.T) {
	at := time.Date(2025, 11, 6, 0, 0, 0, 0, time.UTC)
	const work, contractor = "Mechanical/Electrical/Plumbing", "Granite State Construction and Remodel Inc."
	desc := strings.Repeat("replace the water heater and the furnace ", 2)
	var works, contractors, descs []*byte
	for i := range 3 {
		raw := rawEvent(t, PermitUpserted, PermitDocID("src", fmt.Sprint("P", i)), 1, at, "src", &Permit{
			PermitNumber: fmt.Sprint("P", i), WorkType: work, Contractor: contractor, Description: desc, Source: "src",
			Address: PermitAddress{Line: "1 MAIN ST", City: "SEATTLE", State: "WA", Zipcode: "98117"},
		})
		err := WithEvent(raw, func(env Envelope) error {
			p, err := Payload[Permit](env)
			if err != nil {
				return err
			}
			if p.WorkType != work || p.Contractor != contractor || p.Description != desc {
				t.Fatalf("event %d decoded as %q, %q, %q", i, p.WorkType, p.Contractor, p.Description)
			}
			works = append(works, unsafe.StringData(p.WorkType))
			contractors = append(contractors, unsafe.StringData(p.Contractor))
			descs = append(descs, unsafe.StringData(p.Description))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(desc) <= maxCached || len(contractor) > maxCached {
		t.Fatalf("the values' lengths (%d, %d) no longer straddle maxCached %d", len(contractor), len(desc), maxCached)
	}
	for i := 1; i < 3; i++ {
		if works[i] != works[0] || contractors[i] != contractors[0] {
			t.Fatalf("event %d: its work type or contractor is a new string, not the cached one", i)
		}
		if descs[i] == descs[0] {
			t.Fatalf("event %d: its %d-byte description is shared", i, len(desc))
		}
	}
}

// TestStrCacheTwoWays: values that hash alike (same length, same first
// and last eight bytes) keep a slot each when two of them recur, so
// neither is allocated again; a third one replaces the one of the two
// handed out least recently; and a hit allocates nothing.
func TestStrCacheTwoWays(t *testing.T) {
	const a, b, c = "VELOCITY_ABOVE_BASELINE", "VELOCITY_BELOW_BASELINE", "VELOCITY_LEVEL_BASELINE"
	if shortHash([]byte(a)) != shortHash([]byte(b)) || shortHash([]byte(a)) != shortHash([]byte(c)) {
		t.Fatal("the three values no longer hash alike")
	}
	sc := new(strCache)
	at := func(s string) *byte { return unsafe.StringData(sc.str([]byte(s))) }
	pa, pb := at(a), at(b)
	for range 3 {
		if at(a) != pa || at(b) != pb {
			t.Fatal("two values that hash alike took turns in one slot")
		}
	}
	at(a) // a is the more recent
	at(c) // replaces b
	if at(a) != pa {
		t.Fatal("the most recently used value was replaced")
	}
	if at(b) == pb {
		t.Fatal("the least recently used value was kept")
	}
	if n := testing.AllocsPerRun(100, func() { sc.str([]byte(a)) }); n != 0 {
		t.Fatalf("a hit took %v allocations", n)
	}
}

// TestLentListsFromBlocks: a lent payload's lists of strings come from a
// block (strCache.list) and keep their contents while many more events
// are decoded after them, each its own (no two share an element), full
// (an append copies); a list too long for the block takes its own
// array; an owned one (DecodeEvent) allocates each as before.
func TestLentListsFromBlocks(t *testing.T) {
	const n = 3 * listBlock / 2 // lists of two, past several blocks
	raws := make([][]byte, n)
	for i := range raws {
		raws[i] = locationRaw(t, fmt.Sprint("town", i), []string{fmt.Sprint("a", i), fmt.Sprint("b", i)})
	}
	kept := make([][]string, n)
	seen := map[*string]bool{}
	for i, raw := range raws {
		lend(t, raw, func(p *Location) { kept[i] = p.Aliases })
		if len(kept[i]) != 2 || cap(kept[i]) != 2 {
			t.Fatalf("event %d: aliases %q with room for %d", i, kept[i], cap(kept[i]))
		}
		for j := range kept[i] {
			if e := &kept[i][j]; seen[e] {
				t.Fatalf("event %d: an alias's element %p handed out before", i, e)
			} else {
				seen[e] = true
			}
		}
	}
	for i, l := range kept {
		if !reflect.DeepEqual(l, []string{fmt.Sprint("a", i), fmt.Sprint("b", i)}) {
			t.Fatalf("event %d's aliases changed after later events: %q", i, l)
		}
	}
	grown := append(kept[0], "c")
	if kept[1][0] != "a1" || &grown[0] == &kept[0][0] {
		t.Fatal("an append to a lent list wrote into the block")
	}
	long := make([]string, listBlock/8+1)
	for i := range long {
		long[i] = fmt.Sprint("alias", i)
	}
	lend(t, locationRaw(t, "big", long), func(p *Location) {
		if !reflect.DeepEqual(p.Aliases, long) || cap(p.Aliases) != len(long) {
			t.Fatalf("a long list decoded as %d aliases with room for %d", len(p.Aliases), cap(p.Aliases))
		}
	})
	// The list costs a lent event about 2/listBlock of an allocation, an
	// owned one an allocation (the aliases' strings are cached).
	allocs := func(raw []byte, lent bool) float64 {
		return testing.AllocsPerRun(listBlock, func() {
			if lent {
				lend(t, raw, func(*Location) {})
			} else if _, err := DecodeEvent(raw); err != nil {
				t.Fatal(err)
			}
		})
	}
	without := locationRaw(t, "town0", nil)
	if l := allocs(raws[0], true) - allocs(without, true); l > 0.1 {
		t.Fatalf("a lent list of two took %v allocations", l)
	}
	if o := allocs(raws[0], false) - allocs(without, false); o < 0.9 {
		t.Fatalf("an owned list of two took %v allocations, want one", o)
	}
}

// TestStrEveryPlace: decoder.str passes eight bytes at a time until a
// word holds a quote, a backslash or a control character, and stops at
// the first of them in that word (the last bytes, fewer than eight, one
// at a time). For strings of every length up to three words, read
// from every alignment, with one byte of each kind that matters at every
// place (a quote that ends the string early, a backslash, control
// characters, bytes that are not valid UTF-8 and a valid two-byte one), it
// returns what a byte-at-a-time reading returns.
func TestStrEveryPlace(t *testing.T) {
	// want is str's contract read one byte at a time.
	want := func(b []byte, at int) ([]byte, int, bool) {
		if at >= len(b) || b[at] != '"' {
			return nil, at, false
		}
		for i := at + 1; i < len(b); i++ {
			switch c := b[i]; {
			case c == '"':
				s := b[at+1 : i]
				return s, i + 1, utf8.Valid(s)
			case c < 0x20 || c == '\\':
				return nil, 0, false
			}
		}
		return nil, 0, false
	}
	special := []string{`"`, `\`, "\x00", "\x1f", "\n", "\xff", "\xc3", "\x80", "é", "\x7f", " "}
	cases := 0
	for n := 0; n <= 24; n++ {
		for j := -1; j < n; j++ {
			for _, sp := range special {
				body := []byte(strings.Repeat("a", n))
				if j >= 0 {
					body = append(body[:j:j], append([]byte(sp), body[j+1:]...)...)
				}
				for pad := range 8 {
					for _, tail := range []string{``, `,"next":"x"}`} {
						b := []byte(strings.Repeat(" ", pad) + `"` + string(body) + `"` + tail)
						d := decoder{b: b, i: pad}
						got, ok := d.str()
						w, end, wok := want(b, pad)
						if ok != wok || ok && (!bytes.Equal(got, w) || d.i != end) {
							t.Fatalf("str of %q from %d: %q, %v, at %d; want %q, %v, at %d", b, pad, got, ok, d.i, w, wok, end)
						}
						cases++
					}
				}
				if j < 0 {
					break // no byte replaced: one case for every special
				}
			}
		}
	}
	t.Logf("%d cases", cases)
}
