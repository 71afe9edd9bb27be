package snapshot

import (
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
	for _, cut := range []int{1, len(raw) / 2, len(raw) - 1} {
		require.Error(t, decodeValue(raw[:cut], &readmodel.Batch{}), "cut at %d", cut)
	}
}

// Decoding through a string cache gives the same documents, whatever the
// cache held before (a slot another string took, strings too long to
// cache, empty ones), and a repeated short string comes back as one
// string, its bytes shared.
func TestCodecStringCache(t *testing.T) {
	long := strings.Repeat("x", stringCacheMax+1)
	b := readmodel.Batch{Permits: []readmodel.Permit{
		{PermitID: "a:1", Status: "Issued", Address: readmodel.Address{City: "Springfield"}, RawDescription: long},
		{PermitID: "a:2", Status: "Issued", Address: readmodel.Address{City: "Shelbyville"}, RawDescription: long},
		{PermitID: "a:3", Status: "Issued", Address: readmodel.Address{}},
	}}
	cache := newStringCache()
	for i := range cache.slots { // every slot taken by another string
		cache.slots[i] = "other"
	}
	raw := appendValue(nil, &b)
	for range 2 { // cold, then warm
		var got readmodel.Batch
		require.NoError(t, decodeCached(raw, &got, cache))
		require.Equal(t, b, got)
		require.Same(t, unsafe.StringData(got.Permits[0].Status), unsafe.StringData(got.Permits[2].Status))
		require.NotSame(t, unsafe.StringData(got.Permits[0].RawDescription), unsafe.StringData(got.Permits[1].RawDescription), "long strings are not cached")
	}
	var got readmodel.Batch
	require.Error(t, decodeCached(raw[:len(raw)/2], &got, cache))
}
