package cursor

import (
	"errors"
	"strings"
	"testing"
)

type key struct {
	Date string `json:"d"`
	ID   string `json:"i"`
}

func TestRoundTrip(t *testing.T) {
	c := New([]byte("0123456789abcdef0123"))
	b := Binding("geo_id", "g1", "order", "desc")
	tok, err := c.Encode("permits", b, key{"2024-01-02", "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(tok, "+/=?&% ") {
		t.Fatalf("token %q is not URL-safe", tok)
	}
	var k key
	if err := c.Decode(tok, "permits", b, &k); err != nil {
		t.Fatal(err)
	}
	if k != (key{"2024-01-02", "p1"}) {
		t.Fatalf("got %+v", k)
	}
}

func TestRejects(t *testing.T) {
	c := New([]byte("0123456789abcdef0123"))
	b := Binding("geo_id", "g1")
	tok, _ := c.Encode("permits", b, key{"2024-01-02", "p1"})
	other, _ := New([]byte("another-secret-0123456")).Encode("permits", b, key{"2024-01-02", "p1"})
	body := strings.Split(tok, ".")[1]
	flipped := []byte(body)
	flipped[3] ^= 1
	cases := map[string]struct{ tok, endpoint, binding string }{
		"tampered payload":  {strings.Replace(tok, body, string(flipped), 1), "permits", b},
		"truncated":         {tok[:len(tok)-5], "permits", b},
		"no signature":      {"c1." + body, "permits", b},
		"foreign secret":    {other, "permits", b},
		"other endpoint":    {tok, "leads", b},
		"other query":       {tok, "permits", Binding("geo_id", "g2")},
		"garbage":           {"hello", "permits", b},
		"empty":             {"", "permits", b},
		"unknown version":   {"c2." + strings.TrimPrefix(tok, "c1."), "permits", b},
		"oversized":         {tok + strings.Repeat("A", MaxLen), "permits", b},
		"binary":            {"c1.\x00\xff.\x01", "permits", b},
		"sig not base64url": {"c1." + body + ".***", "permits", b},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var k key
			err := c.Decode(tc.tok, tc.endpoint, tc.binding, &k)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
		})
	}
}

func TestBindingOrderMatters(t *testing.T) {
	if Binding("a", "b", "c", "d") == Binding("a", "bc", "", "d") {
		t.Fatal("length-prefixing must keep distinct pairs distinct")
	}
}

func FuzzDecode(f *testing.F) {
	c := New([]byte("0123456789abcdef0123"))
	tok, _ := c.Encode("permits", "b", key{"2024-01-02", "p1"})
	f.Add(tok)
	f.Add("c1..")
	f.Fuzz(func(t *testing.T, s string) {
		var k key
		if err := c.Decode(s, "permits", "b", &k); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("non-ErrInvalid error %v", err)
		}
	})
}
