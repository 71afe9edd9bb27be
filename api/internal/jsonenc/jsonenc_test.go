package jsonenc

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

var stringCases = []string{
	"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\b\f\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "caf\u00e9 \u6771\u4eac \U0001F600", "\u2028\u2029", "bad \xff utf8 \xe2\x80",
	"\xe2\x80\xa8 raw separator", "King County", "1234 5th Ave NE #12",
}

func TestStringAgrees(t *testing.T) {
	for _, s := range stringCases {
		require.Equal(t, marshal(t, s), string(String(nil, s)), "%q", s)
	}
}

func FuzzStringAgrees(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, marshal(t, s), string(String(nil, s)))
	})
}

func TestFloatAgrees(t *testing.T) {
	cases := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.1234, 1e-6, 9.99e-7, 1e-7, 1.5e-9, 1e20, 1e21, 1.2e21,
		-1e21, 123456789.123, 47.6062, -122.3321, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-300, 5e-324}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		cases = append(cases, math.Float64frombits(r.Uint64()), r.Float64(), r.NormFloat64()*1e6, math.Round(r.Float64()*1e4)/1e4)
	}
	for _, f := range cases {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			require.Equal(t, "null", string(Float(nil, f)))
			continue
		}
		require.Equal(t, marshal(t, f), string(Float(nil, f)), "%v", f)
	}
}

func TestRawAgrees(t *testing.T) {
	cases := []string{
		`{}`, `{"a":1}`, " { \"a\" : [ 1 , 2.5 , \"x y\" ] ,\n\t\"b\" : null } ",
		`{"html":"<b>&</b>","sep":"` + "\u2028\u2029" + `","esc":"a\"b\\\" c","u":"\u00e9"}`,
		`[true,false,null,"  spaced  ",{"k":"\\"}]`, `"just a string"`, `12.5`,
	}
	for _, c := range cases {
		require.Equal(t, marshal(t, json.RawMessage(c)), string(Raw(nil, []byte(c), "{}")), "%s", c)
	}
	require.Equal(t, "{}", string(Raw(nil, nil, "{}")))
}

func FuzzRawAgrees(f *testing.F) {
	f.Add(`{"a":" <x> "}`)
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		require.Equal(t, marshal(t, json.RawMessage(s)), string(Raw(nil, []byte(s), "{}")))
	})
}

func TestNullables(t *testing.T) {
	require.Equal(t, "null", string(NullString(nil, "")))
	require.Equal(t, `"x"`, string(NullString(nil, "x")))
	require.Equal(t, "[]", string(Strings(nil, nil)))
	require.Equal(t, `["a","\u003c"]`, string(Strings(nil, []string{"a", "<"})))
	n := 7
	require.Equal(t, "7", string(NullInt(nil, &n)))
	require.Equal(t, "null", string(NullInt(nil, nil)))
	require.Equal(t, "null", string(NullFloat(nil, nil)))
}

func BenchmarkString(b *testing.B) {
	s := "1234 Northeast Martin Luther King Jr Way, Seattle, WA 98122"
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = String(buf[:0], s)
	}
}

// TestStringEveryByteEveryLane puts every byte value in every lane of the
// eight-byte fast path (and after it) and compares with encoding/json.
func TestStringEveryByteEveryLane(t *testing.T) {
	for b := range 256 {
		for pos := range 17 {
			s := []byte("abcdefghijklmnopq")
			s[pos] = byte(b)
			require.Equal(t, marshal(t, string(s)), string(String(nil, string(s))), "byte %#x at %d", b, pos)
			two := append([]byte("0123456"), byte(b), 0xe2, 0x80, 0xa8, 'x', '<', 'y')
			require.Equal(t, marshal(t, string(two)), string(String(nil, string(two))), "byte %#x", b)
		}
	}
}
