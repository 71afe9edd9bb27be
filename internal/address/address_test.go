package address

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Parsed
	}{
		// Suffixes.
		{"suffix already standard", "600 UNIVERSITY ST", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST"}},
		{"suffix spelled out", "600 University Street", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST"}},
		{"avenue", "1000 4th Avenue", Parsed{Number: "1000", Name: "4TH", Suffix: "AVE"}},
		{"avenue misspelt AV", "301 2ND AV S", Parsed{Number: "301", Name: "2ND", Suffix: "AVE", PostDir: "S"}},
		{"boulevard", "12 Sunset Boulevard", Parsed{Number: "12", Name: "SUNSET", Suffix: "BLVD"}},
		{"place", "1500 Pike Place", Parsed{Number: "1500", Name: "PIKE", Suffix: "PL"}},
		{"suffix word inside name kept", "100 Park Avenue", Parsed{Number: "100", Name: "PARK", Suffix: "AVE"}},
		{"two suffix words in name", "3900 Lake City Way NE", Parsed{Number: "3900", Name: "LAKE CITY", Suffix: "WAY", PostDir: "NE"}},
		{"no suffix", "1833 Broadway", Parsed{Number: "1833", Name: "BROADWAY"}},
		{"no suffix with postdir", "100 Broadway East", Parsed{Number: "100", Name: "BROADWAY", PostDir: "E"}},
		{"lane as name then street", "1400 S LANE ST", Parsed{Number: "1400", PreDir: "S", Name: "LANE", Suffix: "ST"}},
		{"highway", "5 Pacific Highway South", Parsed{Number: "5", Name: "PACIFIC", Suffix: "HWY", PostDir: "S"}},
		{"parkway", "9 Lake Washington Parkway", Parsed{Number: "9", Name: "LAKE WASHINGTON", Suffix: "PKWY"}},
		{"court", "44 Oak Court", Parsed{Number: "44", Name: "OAK", Suffix: "CT"}},
		{"terrace", "7 Queen Anne Terrace", Parsed{Number: "7", Name: "QUEEN ANNE", Suffix: "TER"}},
		{"crossing", "1 Mill Crossing", Parsed{Number: "1", Name: "MILL", Suffix: "XING"}},
		// Directionals.
		{"predir abbreviated", "100 N 85TH ST", Parsed{Number: "100", PreDir: "N", Name: "85TH", Suffix: "ST"}},
		{"predir spelled", "100 North 85th Street", Parsed{Number: "100", PreDir: "N", Name: "85TH", Suffix: "ST"}},
		{"postdir spelled compound", "4293 Memorial Way Northeast", Parsed{Number: "4293", Name: "MEMORIAL", Suffix: "WAY", PostDir: "NE"}},
		{"postdir two words", "4293 Memorial Way North East", Parsed{Number: "4293", Name: "MEMORIAL", Suffix: "WAY", PostDir: "NE"}},
		{"postdir dotted", "4293 Memorial Way N.E.", Parsed{Number: "4293", Name: "MEMORIAL", Suffix: "WAY", PostDir: "NE"}},
		{"postdir hyphenated", "4293 Memorial Way North-East", Parsed{Number: "4293", Name: "MEMORIAL", Suffix: "WAY", PostDir: "NE"}},
		{"predir and postdir", "3401 West Marginal Way Southwest", Parsed{Number: "3401", PreDir: "W", Name: "MARGINAL", Suffix: "WAY", PostDir: "SW"}},
		{"predir compound", "939 Northwest 52nd Street", Parsed{Number: "939", PreDir: "NW", Name: "52ND", Suffix: "ST"}},
		{"directional letter is the name", "100 E St", Parsed{Number: "100", Name: "E", Suffix: "ST"}},
		{"directional word is the name", "100 North St", Parsed{Number: "100", Name: "NORTH", Suffix: "ST"}},
		{"directional name with postdir", "100 East St NW", Parsed{Number: "100", Name: "EAST", Suffix: "ST", PostDir: "NW"}},
		// Ordinals.
		{"ordinal word", "1000 First Avenue South", Parsed{Number: "1000", Name: "1ST", Suffix: "AVE", PostDir: "S"}},
		{"ordinal lower case", "716 11th ave e", Parsed{Number: "716", Name: "11TH", Suffix: "AVE", PostDir: "E"}},
		{"ordinal compound", "12 Twenty-Third Avenue", Parsed{Number: "12", Name: "23RD", Suffix: "AVE"}},
		{"ordinal twelfth", "12 Twelfth Ave", Parsed{Number: "12", Name: "12TH", Suffix: "AVE"}},
		{"ordinal old form", "12 2d St", Parsed{Number: "12", Name: "2ND", Suffix: "ST"}},
		// Units.
		{"unit apartment", "600 University St Apartment 5", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", UnitType: "APT", Unit: "5"}},
		{"unit apt dotted", "600 University St. Apt. 5B", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", UnitType: "APT", Unit: "5B"}},
		{"unit suite", "600 University Street Suite 200", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", UnitType: "STE", Unit: "200"}},
		{"unit pound glued", "600 University St #12", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", UnitType: "#", Unit: "12"}},
		{"unit designator and pound", "600 University St Apt #12", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", UnitType: "APT", Unit: "12"}},
		{"unit letter", "600 University St Unit C", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", UnitType: "UNIT", Unit: "C"}},
		{"unit after postdir", "100 4th Ave N Ste 300", Parsed{Number: "100", Name: "4TH", Suffix: "AVE", PostDir: "N", UnitType: "STE", Unit: "300"}},
		{"unit without number", "100 Main St Penthouse", Parsed{Number: "100", Name: "MAIN", Suffix: "ST", UnitType: "PH"}},
		{"unit floor", "100 Main St Floor 3", Parsed{Number: "100", Name: "MAIN", Suffix: "ST", UnitType: "FL", Unit: "3"}},
		{"unit word in name is not a unit", "100 West Side Hwy", Parsed{Number: "100", PreDir: "W", Name: "SIDE", Suffix: "HWY"}},
		// Numbers.
		{"number with letter", "1515P S Angeline St", Parsed{Number: "1515P", PreDir: "S", Name: "ANGELINE", Suffix: "ST"}},
		{"number with fraction", "12 1/2 Main St", Parsed{Number: "12 1/2", Name: "MAIN", Suffix: "ST"}},
		{"no number", "University Street", Parsed{Name: "UNIVERSITY", Suffix: "ST"}},
		// Case, punctuation, whitespace.
		{"extra whitespace", "  600   university\tstreet  ", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST"}},
		{"initials", "1123 M. L. King Jr. Way", Parsed{Number: "1123", Name: "M L KING JR", Suffix: "WAY"}},
		{"apostrophe", "4311 Pend O'Reille Rd NE", Parsed{Number: "4311", Name: "PEND OREILLE", Suffix: "RD", PostDir: "NE"}},
		{"accent folded", "5 Cañada Road", Parsed{Number: "5", Name: "CANADA", Suffix: "RD"}},
		{"empty", "", Parsed{}},
		{"punctuation only", " ,.; ", Parsed{}},
		// Locality tails.
		{"city tail", "600 University Street, Seattle", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", City: "SEATTLE"}},
		{"city state zip tail", "600 University Street, Seattle, WA 98101", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", City: "SEATTLE", State: "WA", Zip: "98101"}},
		{"zip plus four", "600 University St, Seattle, WA 98101-1234", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", City: "SEATTLE", State: "WA", Zip: "98101"}},
		{"state spelled", "600 University St, Seattle, Washington", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", City: "SEATTLE", State: "WA"}},
		{"state and zip in one part", "600 University St, Seattle WA 98101", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", City: "SEATTLE", State: "WA", Zip: "98101"}},
		{"lone state name is a city", "1 Main St, Washington", Parsed{Number: "1", Name: "MAIN", Suffix: "ST", City: "WASHINGTON"}},
		{"lone state code", "1 Main St, WA", Parsed{Number: "1", Name: "MAIN", Suffix: "ST", State: "WA"}},
		{"two-word city and state", "5 Oak Ave, Lake Forest Park, WA", Parsed{Number: "5", Name: "OAK", Suffix: "AVE", City: "LAKE FOREST PARK", State: "WA"}},
		{"two-word state", "5 Main St, Albany, New York 12207", Parsed{Number: "5", Name: "MAIN", Suffix: "ST", City: "ALBANY", State: "NY", Zip: "12207"}},
		{"unit as its own part", "600 University St, Suite 200, Seattle, WA", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", UnitType: "STE", Unit: "200", City: "SEATTLE", State: "WA"}},
		{"city starting with a unit word", "101 Main St, Lower Burrell, PA 15068", Parsed{Number: "101", Name: "MAIN", Suffix: "ST", City: "LOWER BURRELL", State: "PA", Zip: "15068"}},
		{"no commas city starting with a unit word", "101 Main St Lower Burrell PA 15068", Parsed{Number: "101", Name: "MAIN", Suffix: "ST", City: "LOWER BURRELL", State: "PA", Zip: "15068"}},
		{"no commas unit then city", "600 University St Ste 200 Seattle WA", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", UnitType: "STE", Unit: "200", City: "SEATTLE", State: "WA"}},
		{"penthouse as its own part", "100 Main St, PH, Seattle", Parsed{Number: "100", Name: "MAIN", Suffix: "ST", UnitType: "PH", City: "SEATTLE"}},
		{"no commas with state", "600 University Street Seattle WA 98101", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", City: "SEATTLE", State: "WA", Zip: "98101"}},
		{"no commas postdir then city", "1000 4th Ave S Seattle WA", Parsed{Number: "1000", Name: "4TH", Suffix: "AVE", PostDir: "S", City: "SEATTLE", State: "WA"}},
		{"no commas court is not Connecticut", "44 Oak Ct", Parsed{Number: "44", Name: "OAK", Suffix: "CT"}},
		{"no commas NE is not Nebraska", "4293 Memorial Way NE", Parsed{Number: "4293", Name: "MEMORIAL", Suffix: "WAY", PostDir: "NE"}},
		{"no commas city without state", "600 University Street Seattle", Parsed{Number: "600", Name: "UNIVERSITY", Suffix: "ST", City: "SEATTLE"}},
		{"no commas two-word city", "5 Oak Ave Des Moines", Parsed{Number: "5", Name: "OAK", Suffix: "AVE", City: "DES MOINES"}},
		// Known limit: without a comma, a city that starts with a suffix
		// word is read as part of the street. A comma resolves it.
		{"no commas city starting with a suffix word", "5 Oak Ave Lake Stevens", Parsed{Number: "5", Name: "OAK AVE", Suffix: "LK", City: "STEVENS"}},
		{"comma city starting with a suffix word", "5 Oak Ave, Lake Stevens", Parsed{Number: "5", Name: "OAK", Suffix: "AVE", City: "LAKE STEVENS"}},
		{"no commas trailing words not a city", "301 2ND AV ET S", Parsed{Number: "301", Name: "2ND AV ET", PostDir: "S"}},
		{"no commas no suffix keeps city in name", "1833 Broadway Seattle", Parsed{Number: "1833", Name: "BROADWAY SEATTLE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Normalize(tt.input))
		})
	}
}

func TestLineStreetCanonical(t *testing.T) {
	tests := []struct {
		name                    string
		input                   string
		line, street, canonical string
		addressable             bool
	}{
		{"plain", "600 University Street", "600 UNIVERSITY ST", "600 UNIVERSITY ST", "600 UNIVERSITY ST", true},
		{"full", "600 University Street, Seattle, WA 98101", "600 UNIVERSITY ST", "600 UNIVERSITY ST", "600 UNIVERSITY ST, SEATTLE, WA 98101", true},
		{"with unit", "600 University St Ste 200, Seattle", "600 UNIVERSITY ST STE 200", "600 UNIVERSITY ST", "600 UNIVERSITY ST STE 200, SEATTLE", true},
		{"every part", "3401 west marginal way southwest #7", "3401 W MARGINAL WAY SW # 7", "3401 W MARGINAL WAY SW", "3401 W MARGINAL WAY SW # 7", true},
		{"no number", "University Street", "UNIVERSITY ST", "UNIVERSITY ST", "UNIVERSITY ST", false},
		{"empty", "", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Normalize(tt.input)
			assert.Equal(t, tt.line, p.Line())
			assert.Equal(t, tt.street, p.Street())
			assert.Equal(t, tt.canonical, p.Canonical())
			assert.Equal(t, tt.addressable, p.Addressable())
		})
	}
}

func TestCanonical(t *testing.T) {
	assert.Equal(t, "600 UNIVERSITY ST, SEATTLE, WA 98101", Canonical("600 UNIVERSITY ST", "SEATTLE", "WA", "98101"))
	assert.Equal(t, "600 UNIVERSITY ST, WA 98101", Canonical("600 UNIVERSITY ST", "", "WA", "98101"))
	assert.Equal(t, "600 UNIVERSITY ST, SEATTLE", Canonical("600 UNIVERSITY ST", "SEATTLE", "", ""))
	assert.Equal(t, "SEATTLE, WA", Canonical("", "SEATTLE", "WA", ""))
}

func TestNormalizeCityState(t *testing.T) {
	tests := []struct{ name, in, city, state string }{
		{"mixed case", "Seattle", "SEATTLE", "SEATTLE"},
		{"periods", "St. Louis", "ST LOUIS", "ST LOUIS"},
		{"accents and spaces", "  La Cañada   Flintridge ", "LA CANADA FLINTRIDGE", "LA CANADA FLINTRIDGE"},
		{"state code", "wa", "WA", "WA"},
		{"state name", "Washington", "WASHINGTON", "WA"},
		{"two-word state", "new  york", "NEW YORK", "NY"},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.city, NormalizeCity(tt.in))
			assert.Equal(t, tt.state, NormalizeState(tt.in))
		})
	}
}

func TestPropertyIdentity(t *testing.T) {
	seattle := PropertyIdentity(Normalize("600 UNIVERSITY ST"), "Seattle", "WA")
	require.Equal(t, "addr:600 UNIVERSITY ST|SEATTLE|WA", seattle)

	tests := []struct {
		name        string
		input       string
		city, state string
		want        string
	}{
		{"the issue's example", "600 University Street, Seattle", "", "WA", seattle},
		{"city and state from the input", "600 University Street, Seattle, WA 98101", "", "", seattle},
		{"arguments win over the input", "600 University St, Tacoma, WA", "SEATTLE", "Washington", seattle},
		{"unit ignored", "600 University St Suite 200", "seattle", "wa", seattle},
		{"other city differs", "600 University St", "Bellevue", "WA", "addr:600 UNIVERSITY ST|BELLEVUE|WA"},
		{"no number", "University St", "Seattle", "WA", ""},
		{"no city", "600 University St", "", "WA", ""},
		{"no state", "600 University St", "Seattle", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, PropertyIdentity(Normalize(tt.input), tt.city, tt.state))
		})
	}
}

func TestPropertyID(t *testing.T) {
	a := PropertyID(Normalize("600 University Street, Seattle"), "", "WA")
	b := PropertyID(Normalize("600 UNIVERSITY ST"), "SEATTLE", "WA")
	assert.Equal(t, a, b)
	assert.Equal(t, events.PropertyID("addr:600 UNIVERSITY ST|SEATTLE|WA"), a)
	assert.Regexp(t, regexp.MustCompile(`^prop_[0-9a-f]{32}$`), a)
	assert.Empty(t, PropertyID(Normalize("Seattle"), "", ""))
}

func TestNormalizeIdempotent(t *testing.T) {
	for _, in := range []string{
		"600 University Street, Suite 200, Seattle, WA 98101",
		"3401 West Marginal Way Southwest #7",
		"12 1/2 Twenty-Third Ave N.E.",
		"1123 M. L. King Jr. Way S",
	} {
		t.Run(in, func(t *testing.T) {
			once := Normalize(in)
			twice := Normalize(once.Canonical())
			assert.Equal(t, once, twice)
		})
	}
}

func BenchmarkNormalize(b *testing.B) {
	inputs := []string{
		"600 University Street, Seattle, WA 98101",
		"3401 West Marginal Way Southwest #7",
		"1000 4TH AVE S",
	}
	n := 0
	for b.Loop() {
		Normalize(inputs[n%len(inputs)])
		n++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/address")
}

func TestNormalizeZip(t *testing.T) {
	for in, want := range map[string]string{"98101.0": "98101", " 98101-1234": "98101", "9810": "", "9810A": "", "": ""} {
		if got := NormalizeZip(in); got != want {
			t.Errorf("NormalizeZip(%q) = %q, want %q", in, got, want)
		}
	}
}
