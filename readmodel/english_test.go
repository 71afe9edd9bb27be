package readmodel

import (
	"slices"
	"strings"
	"testing"
)

// TestPorterStem: the examples of Porter's paper ("An algorithm for suffix
// stripping", 1980), which the reference implementation reproduces.
func TestPorterStem(t *testing.T) {
	pairs := `caresses caress ponies poni ties ti caress caress cats cat feed feed agreed agre plastered plaster
	bled bled motoring motor sing sing conflated conflat troubled troubl sized size hopping hop tanned tan
	falling fall hissing hiss fizzed fizz failing fail filing file happy happi sky sky relational relat
	conditional condit rational ration valenci valenc hesitanci hesit digitizer digit conformabli conform
	radicalli radic differentli differ vileli vile analogousli analog vietnamization vietnam predication predic
	operator oper feudalism feudal decisiveness decis hopefulness hope callousness callous formaliti formal
	sensitiviti sensit sensibiliti sensibl triplicate triplic formative form formalize formal electriciti electr
	electrical electr hopeful hope goodness good revival reviv allowance allow inference infer airliner airlin
	gyroscopic gyroscop adjustable adjust defensible defens irritant irrit replacement replac adjustment adjust
	dependent depend adoption adopt homologou homolog communism commun activate activ angulariti angular
	homologous homolog effective effect bowdlerize bowdler probate probat rate rate cease ceas controll control
	roll roll remodeling remodel remodel remodel kitchens kitchen generalizations gener oscillators oscil
	is is as as a a`
	f := strings.Fields(pairs)
	for i := 0; i+1 < len(f); i += 2 {
		if got := PorterStem(f[i]); got != f[i+1] {
			t.Errorf("PorterStem(%q) = %q, want %q", f[i], got, f[i+1])
		}
	}
}

func TestEnglishTerms(t *testing.T) {
	for in, want := range map[string][]string{
		"Remodel the kitchen's cabinets":         {"remodel", "kitchen", "cabinet"},
		"ADD 2nd-story addition; re-roofing":     {"add", "2nd", "stori", "addit", "re", "roof"},
		"O'Neil's deck, 3.5 ft; U.S. code 1,000": {"o'neil", "deck", "3.5", "ft", "u.", "code", "1,000"},
		"the and of":                             nil,
		"Électricité générale":                   {"électricité", "générale"},
	} {
		if got := EnglishTerms(in); !slices.Equal(got, want) {
			t.Errorf("EnglishTerms(%q) = %q, want %q", in, got, want)
		}
	}
}
