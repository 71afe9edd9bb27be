package readmodel

import (
	"math/rand/v2"
	"testing"
)

// TestNormNameASCIIPathMatchesRunes holds NormName's byte-at-a-time path
// to the rune path on random ASCII names (letters of both cases, digits,
// spaces, punctuation, control bytes), and a few with other letters.
func TestNormNameASCIIPathMatchesRunes(t *testing.T) {
	const alphabet = "aZzA09 -.'\t,/()Kq"
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := r.IntN(90) // past the 64-byte buffer too
		b := make([]byte, n)
		for i := range b {
			if r.IntN(8) == 0 {
				b[i] = byte(r.IntN(0x80))
			} else {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
		s := string(b)
		if got, want := NormName(s), normNameRunes(s); got != want {
			t.Fatalf("NormName(%q) = %q, want %q", s, got, want)
		}
	}
	for _, s := range []string{"Ñandú 2", "SÃO PAULO", "İstanbul", "a\u00a0b", "Köln-Süd"} {
		if got, want := NormName(s), normNameRunes(s); got != want {
			t.Fatalf("NormName(%q) = %q, want %q", s, got, want)
		}
	}
}

// BenchmarkNormName: the names a lead's projection normalizes, by each
// path.
func BenchmarkNormName(b *testing.B) {
	names := []string{"Seattle", "King County", "SEDRO-WOOLLEY", "st. john", "seattle"}
	for _, path := range []struct {
		name string
		fn   func(string) string
	}{{"bytes", NormName}, {"runes", normNameRunes}} {
		b.Run(path.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				_ = path.fn(names[i%len(names)])
			}
		})
	}
}
