package resolve

import (
	"fmt"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		text       string
		zip, plus4 string
		zipPrefix  string
		cityOf     bool
		state      string // State of the first reading
		first      string // Tokens of the first reading, joined
		county     bool
	}{
		{text: "Seattle", first: "seattle"},
		{text: "  SEATTLE!! ", first: "seattle"},
		{text: "98101", zip: "98101"},
		{text: "98052-1234", zip: "98052", plus4: "1234"},
		{text: "980521234", zip: "98052", plus4: "1234"},
		{text: "Bellevue, WA 98004", zip: "98004", state: "WA", first: "bellevue"},
		{text: "spokane wa", state: "WA", first: "spokane"},
		{text: "Yakima, Washington", state: "WA", first: "yakima"},
		{text: "Raleigh, North Carolina", state: "NC", first: "raleigh"},
		{text: "Washington", first: "washington"},
		{text: "King County", first: "king county", county: true},
		{text: "King Co", state: "CO", first: "king"},
		{text: "City of Seattle", cityOf: true, first: "seattle"},
		{text: "Mt. Vernon", first: "mount vernon"},
		{text: "St. Mary's", first: "saint marys"},
		{text: "Sedro-Woolley", first: "sedro woolley"},
		{text: "Añasco", first: "anasco"},
		{text: "Seattle USA", first: "seattle"},
		{text: "981", zipPrefix: "981"},
		{text: " 9810.", zipPrefix: "9810"},
		{text: "98", first: "98"},
		{text: "Seattle 981", first: "seattle 981"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			q := Parse(tt.text)
			if q.Zip != tt.zip || q.Plus4 != tt.plus4 || q.ZipPrefix != tt.zipPrefix || q.CityOf != tt.cityOf {
				t.Fatalf("zip %q plus4 %q prefix %q cityOf %v; want %q %q %q %v", q.Zip, q.Plus4, q.ZipPrefix, q.CityOf,
					tt.zip, tt.plus4, tt.zipPrefix, tt.cityOf)
			}
			if tt.first == "" {
				if len(q.Readings) != 0 {
					t.Fatalf("readings %+v, want none", q.Readings)
				}
				return
			}
			if len(q.Readings) == 0 {
				t.Fatal("no reading")
			}
			r := q.Readings[0]
			var got []string
			for _, tok := range r.Tokens {
				got = append(got, tok.Text)
			}
			if fmt.Sprint(got) != fmt.Sprint(slices.Collect(func(yield func(string) bool) {
				for _, w := range words(tt.first) {
					if !yield(w) {
						return
					}
				}
			})) || r.State != tt.state || r.County != tt.county {
				t.Fatalf("first reading %v state %q county %v; want %q %q %v", got, r.State, r.County, tt.first, tt.state, tt.county)
			}
		})
	}
}

func TestOSA(t *testing.T) {
	tests := []struct {
		a, b string
		k    int
		want int
	}{
		{"seatle", "seattle", 1, 1}, {"seattle", "seattle", 1, 0}, {"saettle", "seattle", 1, 1},
		{"spokane", "spokn", 2, 2}, {"bellvue", "bellevue", 1, 1}, {"abc", "xyz", 1, 2},
		{"sacramento", "sacremnto", 2, 2}, {"yakima", "yakmia", 1, 1},
	}
	for _, tt := range tests {
		if got := osa(tt.a, tt.b, tt.k); got != tt.want {
			t.Errorf("osa(%q,%q,%d)=%d want %d", tt.a, tt.b, tt.k, got, tt.want)
		}
	}
	// The trie walk finds exactly the terms osa accepts.
	tr := newTrie()
	terms := []string{"seattle", "seatac", "settle", "saettle", "spokane", "spokan", "sea", "seattles"}
	for _, term := range terms {
		tr.set(term, true)
	}
	for _, q := range []string{"seatle", "seattle", "spokane", "seattel", "sattle"} {
		k := maxEdits(q)
		got := map[string]int{}
		tr.fuzzy(q, k, func(term string, d int) { got[term] = d })
		for _, term := range terms {
			d := osa(q, term, k)
			if gd, ok := got[term]; (d <= k) != ok || (ok && gd != d) {
				t.Errorf("q=%q term=%q: trie (%d,%v) osa %d", q, term, gd, ok, d)
			}
		}
	}
}
