package readmodel

import "testing"

func TestNormName(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "Seattle": "seattle", "  King  County ": "king county", "Coeur d'Alene": "coeur d alene",
		"SEDRO-WOOLLEY": "sedro woolley", "Ñandú 2": "ñandú 2", "St. John": "st john", "---": "", "Élan\tVital": "élan vital",
	} {
		if got := NormName(in); got != want {
			t.Errorf("NormName(%q) = %q, want %q", in, got, want)
		}
	}
}
