package snapshot

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// fill sets every field reachable from v to a non-zero value derived
// from seed, so a field the codec dropped would show.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch {
	case v.Type() == timeT:
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, *seed, time.UTC)))
	case v.Kind() == reflect.String:
		v.SetString("s" + string(rune('a'+*seed%26)))
	case v.Kind() == reflect.Int64 || v.Kind() == reflect.Int:
		v.SetInt(int64(*seed) * -7)
	case v.Kind() == reflect.Float64:
		v.SetFloat(float64(*seed) + 0.25)
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.Kind() == reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed)
		v.Set(p)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		v.SetBytes([]byte(`{"k":1}`))
	case v.Kind() == reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), seed)
		fill(s.Index(1), seed)
		v.Set(s)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed)
			}
		}
	}
}

// requireCutsFail checks that raw, a batch encoded with a table of its
// own, cut after its first byte, at 1/part of its length and before its
// last byte, fails to decode as truncated.
func requireCutsFail(t *testing.T, raw []byte, part int) {
	t.Helper()
	for _, cut := range []int{1, len(raw) / part, len(raw) - 1} {
		require.ErrorIs(t, decodeValue(raw[:cut], &readmodel.Batch{}), errShort, "cut at %d", cut)
	}
}

// Every field of every document survives, and so do the distinctions
// gob loses: nil against empty slices, a pointer to zero against nil.
func TestCodecKeepsEveryField(t *testing.T) {
	var b readmodel.Batch
	seed := 0
	fill(reflect.ValueOf(&b).Elem(), &seed)
	got := readmodel.Batch{}
	require.NoError(t, decodeValue(appendValue(nil, &b), &got))
	require.Equal(t, b, got)

	zero := 0.0
	empty := readmodel.Batch{
		Permits:    []readmodel.Permit{{Valuation: &zero, GeoLinks: []readmodel.GeoLink{}}},
		GeoSignals: []readmodel.GeoSignal{{Reasons: []string{}, Value: []byte{}}},
		Leads:      []readmodel.Lead{{Confidence: &zero, ReasonCodes: []string{}}, {}},
	}
	got = readmodel.Batch{}
	require.NoError(t, decodeValue(appendValue(nil, &empty), &got))
	require.Equal(t, empty, got)
	require.NotNil(t, got.Permits[0].Valuation)
	require.NotNil(t, got.GeoSignals[0].Reasons)
	require.Nil(t, got.Leads[1].ReasonCodes)

	raw := appendValue(nil, &b)
	requireCutsFail(t, raw, 2)
}

// tabledRound is two batches encoded with one table and decoded with one.
type tabledRound struct {
	enc        *encTable
	dec        *decTable
	raw1, raw2 []byte
	got1, got2 readmodel.Batch
}

// tabledRoundTrip encodes b1 then b2 with one table, decodes them in
// order with one, and requires the same batches back.
func tabledRoundTrip(t *testing.T, b1, b2 readmodel.Batch) tabledRound {
	t.Helper()
	rt := tabledRound{enc: newEncTable(), dec: newDecTable()}
	rt.raw1 = appendTabled(nil, &b1, rt.enc)
	rt.raw2 = appendTabled(nil, &b2, rt.enc)
	require.NoError(t, decodeTabled(rt.raw1, &rt.got1, rt.dec))
	require.NoError(t, decodeTabled(rt.raw2, &rt.got2, rt.dec))
	require.Equal(t, b1, rt.got1)
	require.Equal(t, b2, rt.got2)
	return rt
}

// Values encoded with one string table decode, in order, with one: the
// same documents, a repeated short string as one string (its bytes
// shared, also across values), long strings, one-per-document fields
// and property ids as literals. A value decoded without the table its stream built is an
// error, as is a truncated one; past tableMaxEntries new strings are
// literals.
func TestCodecStringTable(t *testing.T) {
	long := strings.Repeat("x", tableMaxLen+1)
	b1 := readmodel.Batch{Permits: []readmodel.Permit{
		{PermitID: "a:1", Status: "Issued", Address: readmodel.Address{City: "Springfield", FullAddress: "1 Main St"}, RawDescription: long},
		{PermitID: "a:2", Status: "Issued", Address: readmodel.Address{City: "Shelbyville", FullAddress: "1 Main St"}, RawDescription: long},
	}}
	prop := readmodel.GeoLink{GeoID: "prop_0123456789abcdef0123456789abcdef", GeoType: readmodel.GeoProperty, Method: "property_id"}
	b1.Permits[0].GeoLinks = []readmodel.GeoLink{prop}
	b1.Permits[1].GeoLinks = []readmodel.GeoLink{prop}
	b2 := readmodel.Batch{Permits: []readmodel.Permit{{PermitID: "a:3", Status: "Issued", Address: readmodel.Address{City: "Springfield"}}}}
	rt := tabledRoundTrip(t, b1, b2)
	enc, dec, raw1, raw2, got1, got2 := rt.enc, rt.dec, rt.raw1, rt.raw2, rt.got1, rt.got2
	p1, p2, p3 := got1.Permits[0], got1.Permits[1], got2.Permits[0]
	require.Same(t, unsafe.StringData(p1.Status), unsafe.StringData(p3.Status))
	require.Same(t, unsafe.StringData(p1.Address.City), unsafe.StringData(p3.Address.City))
	require.NotSame(t, unsafe.StringData(p1.RawDescription), unsafe.StringData(p2.RawDescription), "long strings are literals")
	require.NotSame(t, unsafe.StringData(p1.Address.FullAddress), unsafe.StringData(p2.Address.FullAddress), "addresses are literals")
	require.NotSame(t, unsafe.StringData(p1.GeoLinks[0].GeoID), unsafe.StringData(p2.GeoLinks[0].GeoID), "property ids are literals")
	require.Same(t, unsafe.StringData(p1.GeoLinks[0].Method), unsafe.StringData(p2.GeoLinks[0].Method))
	require.Len(t, dec.strs, len(enc.ids))

	require.ErrorContains(t, decodeTabled(raw2, &readmodel.Batch{}, newDecTable()), "string table")
	requireCutsFail(t, raw1, 2)

	full := newEncTable()
	requireFullTableWritesLiterals(t, b1, full, full.ids, tableMaxEntries)
}

// requireFullTableWritesLiterals fills table (full's string or list
// table) to most entries, encodes b with full and checks that the table
// took no entry more and that b decodes as it was; it returns the
// decoder's table.
func requireFullTableWritesLiterals(t *testing.T, b readmodel.Batch, full *encTable, table map[string]uint32, most int) *decTable {
	t.Helper()
	for i := range most {
		table[fmt.Sprint("k", i)] = uint32(i)
	}
	raw := appendTabled(nil, &b, full)
	require.Len(t, table, most)
	var got readmodel.Batch
	dt := newDecTable()
	require.NoError(t, decodeTabled(raw, &got, dt), "a full table writes literals")
	require.Equal(t, b, got)
	return dt
}

// The table finds a string by its address before its value (encTable's
// fast slots): that changes no byte. Strings shared among documents, as
// the read model hands them out, encode exactly as copies of them do,
// substrings of one string included (memory's dates).
func TestCodecStringTableByAddress(t *testing.T) {
	days := "2024-05-012024-05-02"
	city, status, method := "Springfield", "Issued", "zip_source"
	prop := "prop_0123456789abcdef0123456789abcdef"
	var shared readmodel.Batch
	for i := range 50 {
		p := readmodel.Permit{
			PermitID: fmt.Sprint("a:", i), Status: status, Address: readmodel.Address{City: city},
			ApplicationDate: days[:10], IssueDate: days[10:], CompletionDate: days[:10][:7],
			PropertyID: prop, GeoLinks: []readmodel.GeoLink{{GeoID: prop, GeoType: readmodel.GeoProperty, Method: method}, {GeoID: city, GeoType: readmodel.GeoCity, Method: method}},
		}
		if i%3 == 0 {
			p.Status = "Expired"
		}
		shared.Permits = append(shared.Permits, p)
	}
	copies := readmodel.Batch{Permits: make([]readmodel.Permit, len(shared.Permits))}
	for i, p := range shared.Permits {
		copyStrings(reflect.ValueOf(&p).Elem())
		copies.Permits[i] = p
	}
	require.NotSame(t, unsafe.StringData(copies.Permits[0].Status), unsafe.StringData(copies.Permits[1].Status))
	enc := newEncTable()
	raw := appendTabled(nil, &shared, enc)
	require.Equal(t, appendTabled(nil, &copies, newEncTable()), raw)
	var got readmodel.Batch
	require.NoError(t, decodeTabled(raw, &got, newDecTable()))
	require.Equal(t, shared, got)
}

// Geo link lists go through their own table (version 6): a list seen
// before, but for its property links' GeoIDs, is a reference followed by
// those GeoIDs, in any document type and across the values of a stream;
// each decoded list is a slice of its own (an append to one leaves the
// next alone). Longer lists and lists past a full table are literals; a
// reference the table does not hold is an error, as is a truncated one.
func TestCodecLinkListTable(t *testing.T) {
	area := []readmodel.GeoLink{
		{GeoID: "zip:98101", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"},
		{GeoID: "city:wa:seattle", GeoType: readmodel.GeoCity, Confidence: 0.9, Method: "source_city"},
	}
	withProps := func(props ...string) []readmodel.GeoLink {
		ls := []readmodel.GeoLink{{GeoID: props[0], GeoType: readmodel.GeoProperty, Confidence: 1, Method: "property_id"}}
		ls = append(ls, area...)
		for _, p := range props[1:] { // a property link at the end too
			ls = append(ls, readmodel.GeoLink{GeoID: p, GeoType: readmodel.GeoProperty, Confidence: 0.5, Method: "nearby"})
		}
		return ls
	}
	var long []readmodel.GeoLink
	for i := range listMaxLinks + 1 {
		long = append(long, readmodel.GeoLink{GeoID: fmt.Sprint("zip:", i), GeoType: readmodel.GeoZip})
	}
	b1 := readmodel.Batch{
		Permits: []readmodel.Permit{
			{PermitID: "a:1", GeoLinks: withProps("prop_1", "prop_2")},
			{PermitID: "a:2", GeoLinks: withProps("prop_3", "prop_4")},
			{PermitID: "a:3", GeoLinks: area},
			{PermitID: "a:4", GeoLinks: long},
			{PermitID: "a:5", GeoLinks: []readmodel.GeoLink{}},
		},
		Properties: []readmodel.Property{{PropertyID: "prop_5", GeoLinks: withProps("prop_5", "prop_6")}},
	}
	b2 := readmodel.Batch{
		Permits:    []readmodel.Permit{{PermitID: "a:6", GeoLinks: area}, {PermitID: "a:7", GeoLinks: long}},
		Properties: []readmodel.Property{{PropertyID: "prop_7", GeoLinks: withProps("prop_7", "prop_8")}},
	}
	rt := tabledRoundTrip(t, b1, b2)
	enc, dec, raw1, raw2, got1 := rt.enc, rt.dec, rt.raw1, rt.raw2, rt.got1
	require.Len(t, enc.lists, 2, "one entry per list but for its property GeoIDs; the long list is a literal")
	require.Len(t, dec.lists, 2)
	for _, e := range dec.lists {
		for _, j := range e.props {
			require.Empty(t, e.links[j].GeoID, "the table keeps no document's property")
		}
	}
	one := got1.Permits[0].GeoLinks
	require.Equal(t, len(one), cap(one))
	_ = append(one, readmodel.GeoLink{GeoID: "x"})
	require.Equal(t, b1.Permits[1].GeoLinks, got1.Permits[1].GeoLinks, "a list ends where its own links do")
	alone := appendValue(nil, &readmodel.Batch{Permits: []readmodel.Permit{{GeoLinks: area}}})
	again := appendTabled(nil, &readmodel.Batch{Permits: []readmodel.Permit{{GeoLinks: area}}}, enc)
	require.Less(t, len(again), len(alone), "a list seen before is a reference")

	require.ErrorIs(t, decodeTabled(raw2, &readmodel.Batch{}, newDecTable()), errListRef)
	requireCutsFail(t, raw1, 2)

	full := newEncTable()
	dt := requireFullTableWritesLiterals(t, b1, full, full.lists, listMaxEntries)
	require.Empty(t, dt.lists)
}

// A new entry of the list table longer than listMaxLinks is refused:
// the writer makes none, and the entry's property links are counted in a
// byte each, so one past the 255th would be put back in the wrong link.
func TestCodecRefusesALongListEntry(t *testing.T) {
	for _, n := range []int{listMaxLinks + 1, 300} {
		var long []readmodel.GeoLink
		for i := range n {
			long = append(long, readmodel.GeoLink{GeoID: fmt.Sprint("zip:", i), GeoType: readmodel.GeoZip, Method: "m"})
		}
		long[n-1].GeoType = readmodel.GeoProperty
		e := encoder{tab: newEncTable()}
		e.linkList(listNew, long)
		d := decoder{b: e.b, tab: newDecTable()}
		d.geoLinks()
		require.ErrorIs(t, d.err, errListLong, "%d links", n)

		e = encoder{tab: newEncTable()}
		e.linkList(listLiteral, long) // a literal of any length is the format's
		d = decoder{b: e.b, tab: newDecTable()}
		require.Equal(t, long, d.geoLinks())
		require.NoError(t, d.err)
	}
}

// A decoder given LinkShapes gives each permit and property the shape of
// its links: the index + 1 of the list table's entry they were read
// from (a new entry or a reference to one), 0 for a literal, nil or
// empty list; a document of the next frame refers to the same entry.
func TestCodecLinkShapes(t *testing.T) {
	area := []readmodel.GeoLink{
		{GeoID: "zip:98101", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"},
		{GeoID: "city:wa:seattle", GeoType: readmodel.GeoCity, Confidence: 0.9, Method: "source_city"},
	}
	withProp := func(prop string) []readmodel.GeoLink {
		return append([]readmodel.GeoLink{{GeoID: prop, GeoType: readmodel.GeoProperty, Confidence: 1, Method: "property_id"}}, area...)
	}
	var long []readmodel.GeoLink
	for i := range listMaxLinks + 1 {
		long = append(long, readmodel.GeoLink{GeoID: fmt.Sprint("zip:", i), GeoType: readmodel.GeoZip})
	}
	b1 := readmodel.Batch{
		Permits: []readmodel.Permit{
			{PermitID: "a:1", GeoLinks: withProp("prop_1")},
			{PermitID: "a:2", GeoLinks: area},
			{PermitID: "a:3", GeoLinks: withProp("prop_3")},
			{PermitID: "a:4", GeoLinks: long},
			{PermitID: "a:5", GeoLinks: []readmodel.GeoLink{}},
			{PermitID: "a:6"},
		},
		Properties: []readmodel.Property{{PropertyID: "prop_5", GeoLinks: withProp("prop_5")}},
	}
	b2 := readmodel.Batch{
		Permits:    []readmodel.Permit{{PermitID: "a:7", GeoLinks: area}, {PermitID: "a:8", GeoLinks: long}},
		Properties: []readmodel.Property{{PropertyID: "prop_7", GeoLinks: area}},
	}
	enc := newEncTable()
	raw1 := appendTabled(nil, &b1, enc)
	raw2 := appendTabled(nil, &b2, enc)
	dec := newDecTable()
	var got1, got2 readmodel.Batch
	var s1, s2 readmodel.LinkShapes
	require.NoError(t, decodeShaped(raw1, &got1, dec, &s1))
	require.NoError(t, decodeShaped(raw2, &got2, dec, &s2))
	require.Equal(t, b1, got1)
	require.Equal(t, b2, got2)
	require.Equal(t, readmodel.LinkShapes{Permits: []uint32{1, 2, 1, 0, 0, 0}, Properties: []uint32{1}}, s1)
	require.Equal(t, readmodel.LinkShapes{Permits: []uint32{2, 0}, Properties: []uint32{2}}, s2)

	var plain readmodel.Batch
	require.NoError(t, decodeTabled(raw1, &plain, newDecTable()), "without shapes")
	require.Equal(t, b1, plain)
}

// copyStrings replaces every string reachable from v by a copy of it.
func copyStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(strings.Clone(v.String()))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				copyStrings(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := range c.Len() {
			copyStrings(c.Index(i))
		}
		v.Set(c)
	case reflect.Pointer:
		if !v.IsNil() {
			copyStrings(v.Elem())
		}
	}
}

// decodePermit reads what the reflective codec writes, as the reflective
// decoder does: every field, nil apart from empty, and a truncated permit
// is an error; it is in use for Permit as the type is now.
func TestPermitDecoder(t *testing.T) {
	require.True(t, permitDecoderFits(), "readmodel.Permit changed: bring decodePermit and permitFields up to date")
	zero := 0.0
	ps := []readmodel.Permit{{}, {Valuation: &zero, GeoLinks: []readmodel.GeoLink{}}}
	for range 3 {
		var p readmodel.Permit
		seed := len(ps)
		fill(reflect.ValueOf(&p).Elem(), &seed)
		ps = append(ps, p)
	}
	ps[3].Lat = nil
	for i := range linkArena + 10 { // more links than one shared array holds
		ps[4].GeoLinks = append(ps[4].GeoLinks, readmodel.GeoLink{GeoID: fmt.Sprint("zip:", i), Confidence: 0.5})
	}
	raw := appendValue(nil, &readmodel.Batch{Permits: ps})
	var got readmodel.Batch
	require.NoError(t, decodeValue(raw, &got))
	require.Equal(t, ps, got.Permits)
	require.NotNil(t, got.Permits[1].GeoLinks)
	require.Nil(t, got.Permits[0].GeoLinks)
	got.Permits[2].GeoLinks = append(got.Permits[2].GeoLinks, readmodel.GeoLink{GeoID: "x"})
	require.Equal(t, ps[3].GeoLinks, got.Permits[3].GeoLinks, "a permit's links end where its own do")

	d := decoder{b: appendValue(nil, &ps[3]), tab: newDecTable()}
	var viaReflection readmodel.Permit
	permitReflective(&d, reflect.ValueOf(&viaReflection).Elem())
	require.NoError(t, d.err)
	require.Equal(t, ps[3], viaReflection)
	requireCutsFail(t, raw, 3)
}

// decodeProperty, likewise.
func TestPropertyDecoder(t *testing.T) {
	require.True(t, propertyDecoderFits(), "readmodel.Property changed: bring decodeProperty and propertyFields up to date")
	zero := 0.0
	ps := []readmodel.Property{{}, {Lat: &zero, GeoLinks: []readmodel.GeoLink{}}}
	for range 3 {
		var p readmodel.Property
		seed := len(ps)
		fill(reflect.ValueOf(&p).Elem(), &seed)
		ps = append(ps, p)
	}
	ps[3].Lon = nil
	raw := appendValue(nil, &readmodel.Batch{Properties: ps})
	var got readmodel.Batch
	require.NoError(t, decodeValue(raw, &got))
	require.Equal(t, ps, got.Properties)
	require.NotNil(t, got.Properties[1].GeoLinks)
	require.Nil(t, got.Properties[0].GeoLinks)

	d := decoder{b: appendValue(nil, &ps[4]), tab: newDecTable()}
	var viaReflection readmodel.Property
	propertyReflective(&d, reflect.ValueOf(&viaReflection).Elem())
	require.NoError(t, d.err)
	require.Equal(t, ps[4], viaReflection)
	requireCutsFail(t, raw, 3)
}

// BenchmarkDecodePermits decodes 4,096 permits with the written-out
// decoder ("written") and the reflective one ("reflective").
func BenchmarkDecodePermits(b *testing.B) {
	ps := make([]readmodel.Permit, 4096)
	for i := range ps {
		v, lat := float64(i)*10, 47.6
		ps[i] = readmodel.Permit{PermitID: fmt.Sprint("src:", i), PermitNumber: fmt.Sprint(i), PermitType: "Building", WorkType: "New", Status: "Issued",
			IssueDate: "2024-01-02", RawDescription: "Remodel the kitchen", Source: "src", Valuation: &v, Lat: &lat, Lon: &lat,
			Address:  readmodel.Address{FullAddress: fmt.Sprint(i, " MAIN ST"), City: "Seattle", State: "WA", Zipcode: "98101"},
			GeoLinks: []readmodel.GeoLink{{GeoID: "zip:98101", GeoType: "zip", Confidence: 1, Method: "source_zip"}, {GeoID: "city:wa:seattle", GeoType: "city", Confidence: 1, Method: "zip_city"}, {GeoID: "state:wa", GeoType: "state", Confidence: 1, Method: "source_state"}},
			Version:  1}
	}
	c := codecOf(permitT)
	e := encoder{tab: newEncTable()}
	for i := range ps {
		c.enc(&e, reflect.ValueOf(&ps[i]).Elem())
	}
	for _, tc := range []struct {
		name string
		dec  func(*decoder, reflect.Value)
	}{{"written", c.dec}, {"reflective", permitReflective}} {
		b.Run(tc.name, func(b *testing.B) {
			got := make([]readmodel.Permit, len(ps))
			for b.Loop() {
				d := decoder{b: e.b, tab: newDecTable()}
				for i := range got {
					got[i] = readmodel.Permit{}
					tc.dec(&d, reflect.ValueOf(&got[i]).Elem())
				}
				require.NoError(b, d.err)
			}
			require.Equal(b, ps, got)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ps)), "ns/permit")
		})
	}
}

// A batch decoded into lent arrays (LoadLent) holds what was encoded and
// nothing of the documents decoded into them before: a field the new
// document leaves empty is empty, whichever decoder writes the kind.
func TestDecodeIntoLentArrays(t *testing.T) {
	v := 1.5
	links := []readmodel.GeoLink{{GeoID: "zip:98101", GeoType: readmodel.GeoZip, Confidence: 1, Method: "zip"}}
	stale := readmodel.Batch{
		Permits: []readmodel.Permit{
			{PermitID: "old", PermitNumber: "1", Status: "Issued", Valuation: &v, Lat: &v, Lon: &v, PropertyID: "prop_1", GeoLinks: links, Version: 3},
			{PermitID: "old2", GeoLinks: links, Version: 3},
		},
		Properties: []readmodel.Property{{PropertyID: "prop_1", CanonicalAddress: "1 MAIN ST", Lat: &v, Lon: &v, GeoLinks: links, Version: 2}},
	}
	fresh := readmodel.Batch{
		Permits:    []readmodel.Permit{{PermitID: "new", Version: 1}},
		Properties: []readmodel.Property{{PropertyID: "prop_2", Version: 1}},
	}
	l := &lent{b: stale}
	got := l.batch()
	require.NoError(t, decodeLent(appendValue(nil, &fresh), &got, newDecTable(), nil, l))
	l.keep(&got)
	require.Same(t, &stale.Permits[0], &got.Permits[0], "decoded into the lent array")
	require.Same(t, &stale.Properties[0], &got.Properties[0], "decoded into the lent array")
	require.Equal(t, fresh, got)
}
