package indexer

import "testing"

func TestSameNameMatchesSlow(t *testing.T) {
	cases := []string{"", " ", "Seattle", "SEATTLE", "seattle ", " Seattle", "St. Paul", "ST PAUL", "St Paul", "St.Paul", "StPaul",
		"St  Paul", "St. . Paul", "Coeur d'Alene", "COEUR D'ALENE", "Sea ttle", "Seattle.", ".Seattle", "San\tJose", "San Jose", "San\n Jose", " \tX. ", "Sán José", "SÁN JOSÉ", "a", "a.", "a b", "ab", "a .b", "a. b"}
	for _, a := range cases {
		for _, b := range cases {
			if got, want := sameName(a, b), sameNameSlow(a, b); got != want {
				t.Errorf("sameName(%q, %q) = %v, want %v", a, b, got, want)
			}
		}
	}
}
