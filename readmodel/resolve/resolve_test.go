package resolve

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// fixture is a small gazetteer shaped like pipeline/gazetteer's output.
func fixture() []readmodel.Location {
	st := func(code, name string, pop int64) readmodel.Location {
		return readmodel.Location{GeoID: "s-" + code, GeoType: readmodel.GeoState, Name: name, DisplayName: name,
			State: code, StateName: name, Aliases: []string{code}, Population: pop}
	}
	county := func(id, name, state string, pop int64) readmodel.Location {
		return readmodel.Location{GeoID: "co-" + id, GeoType: readmodel.GeoCounty, Name: name, DisplayName: name + ", " + state,
			State: state, County: name, JurisdictionGeoID: "j-co-" + id, Population: pop}
	}
	countyJ := func(id, name, state string, pop int64) readmodel.Location {
		return readmodel.Location{GeoID: "j-co-" + id, GeoType: readmodel.GeoJurisdiction, Name: name,
			DisplayName: name + ", " + state + " (unincorporated)", State: state, County: name, CountyGeoID: "co-" + id,
			JurisdictionGeoID: "j-co-" + id, Aliases: []string{"Unincorporated " + name}, Population: pop}
	}
	city := func(id, name, state string, pop int64, aliases ...string) readmodel.Location {
		return readmodel.Location{GeoID: "c-" + id, GeoType: readmodel.GeoCity, Name: name, DisplayName: name + ", " + state,
			State: state, City: name, JurisdictionGeoID: "j-c-" + id, Population: pop, Aliases: aliases, Incorporated: true}
	}
	cityJ := func(id, name, state string, pop int64) readmodel.Location {
		return readmodel.Location{GeoID: "j-c-" + id, GeoType: readmodel.GeoJurisdiction, Name: "City of " + name,
			DisplayName: "City of " + name + ", " + state, State: state, City: name, CityGeoID: "c-" + id,
			JurisdictionGeoID: "j-c-" + id, Population: pop, Incorporated: true}
	}
	zip := func(code, place, state, cityID string) readmodel.Location {
		return readmodel.Location{GeoID: "z-" + code, GeoType: readmodel.GeoZip, Name: code,
			DisplayName: code + " (" + place + ", " + state + ")", State: state, City: place, Zipcode: code, CityGeoID: "c-" + cityID}
	}
	return []readmodel.Location{
		st("WA", "Washington", 7_000_000), st("OR", "Oregon", 4_000_000), st("TX", "Texas", 29_000_000),
		county("53033", "King County", "WA", 2_200_000), countyJ("53033", "King County", "WA", 250_000),
		county("48269", "King County", "TX", 265), countyJ("48269", "King County", "TX", 265),
		county("53063", "Spokane County", "WA", 540_000),
		county("41051", "Multnomah County", "OR", 800_000),
		city("sea", "Seattle", "WA", 3_500_000), cityJ("sea", "Seattle", "WA", 3_500_000),
		city("spo", "Spokane", "WA", 400_000), cityJ("spo", "Spokane", "WA", 400_000),
		city("spv", "Spokane Valley", "WA", 100_000),
		city("mv", "Mount Vernon", "WA", 35_000, "Mt. Vernon"), city("mvny", "Mount Vernon", "NY", 67_000, "Mt. Vernon"),
		city("sw", "Sedro-Woolley", "WA", 12_000),
		city("bel", "Bellevue", "WA", 150_000), city("belne", "Bellevue", "NE", 60_000),
		city("pdx", "Portland", "OR", 2_000_000), city("pme", "Portland", "ME", 200_000),
		city("sal", "Salem", "OR", 270_000), city("salma", "Salem", "MA", 44_000),
		zip("98101", "Seattle", "WA", "sea"), zip("98004", "Bellevue", "WA", "bel"), zip("97201", "Portland", "OR", "pdx"),
	}
}

func fixtureIndex() *Index {
	x := New()
	for _, l := range fixture() {
		x.Upsert(l)
	}
	return x
}

type want struct {
	display string
	geoType readmodel.GeoType
	method  string
}

// topCase is a query and what its top candidate must be.
type topCase struct {
	name string
	rq   readmodel.ResolveQuery
	want want
	dec  string // decision of the top candidate, "" to skip
}

// checkTopCases runs each case as a subtest: checkTop, and the top
// candidate's decision.
func checkTopCases(t *testing.T, x *Index, cases []topCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			cs := checkTop(t, x, tt.rq, tt.want)
			if tt.dec != "" && cs[0].Decision != tt.dec {
				t.Fatalf("decision %s, want %s\n%s", cs[0].Decision, tt.dec, describe(cs))
			}
		})
	}
}

func checkTop(t *testing.T, x *Index, rq readmodel.ResolveQuery, w want) []readmodel.Candidate {
	t.Helper()
	if rq.Limit == 0 {
		rq.Limit = 10
	}
	cs := x.Search(rq)
	checkContract(t, rq, cs)
	if len(cs) == 0 {
		t.Fatalf("%+v: no candidates", rq)
	}
	top := cs[0]
	if top.Location.DisplayName != w.display || (w.geoType != "" && top.Location.GeoType != w.geoType) ||
		(w.method != "" && top.MatchMethod != w.method) {
		t.Fatalf("%+v: top %s (%s, %s); want %s (%s, %s)\n%s", rq, top.Location.DisplayName, top.Location.GeoType,
			top.MatchMethod, w.display, w.geoType, w.method, describe(cs))
	}
	return cs
}

// checkContract asserts the ordering contract and value ranges.
func checkContract(t *testing.T, rq readmodel.ResolveQuery, cs []readmodel.Candidate) {
	t.Helper()
	if len(cs) > rq.Limit {
		t.Fatalf("%d candidates for limit %d", len(cs), rq.Limit)
	}
	for i, c := range cs {
		if c.Score < 0 || c.Score > 1 || c.Confidence < 0 || c.Confidence > 1 || math.IsNaN(c.Score) {
			t.Fatalf("candidate %d: score %v confidence %v out of 0..1", i, c.Score, c.Confidence)
		}
		if c.MatchMethod == "" || c.Decision == "" || len(c.Reasons) == 0 {
			t.Fatalf("candidate %d: empty method, decision or reasons: %+v", i, c)
		}
		if rq.State != "" && c.Location.State != rq.State {
			t.Fatalf("candidate %d in %s breaks state filter %s", i, c.Location.State, rq.State)
		}
		if rq.GeoType != "" && c.Location.GeoType != rq.GeoType {
			t.Fatalf("candidate %d is %s, breaks geo_type filter %s", i, c.Location.GeoType, rq.GeoType)
		}
		if i == 0 {
			continue
		}
		p := cs[i-1]
		zips := p.Location.GeoType == readmodel.GeoZip && c.Location.GeoType == readmodel.GeoZip && p.Location.Zipcode != c.Location.Zipcode
		ordered := p.Score > c.Score || (p.Score == c.Score && (p.Location.Population > c.Location.Population ||
			(p.Location.Population == c.Location.Population && (zips && p.Location.Zipcode < c.Location.Zipcode ||
				!zips && p.Location.GeoID < c.Location.GeoID))))
		if !ordered {
			t.Fatalf("candidates %d and %d out of order:\n%s", i-1, i, describe(cs))
		}
	}
}

func TestSearchFixture(t *testing.T) {
	x := fixtureIndex()
	checkTopCases(t, x, []topCase{
		{"exact", readmodel.ResolveQuery{Text: "Seattle"}, want{"Seattle, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"noise", readmodel.ResolveQuery{Text: " seattle!! "}, want{"Seattle, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"typo", readmodel.ResolveQuery{Text: "Seatle"}, want{"Seattle, WA", readmodel.GeoCity, MethodFuzzy}, DecisionReview},
		{"transposition", readmodel.ResolveQuery{Text: "Saettle"}, want{"Seattle, WA", readmodel.GeoCity, MethodFuzzy}, ""},
		{"prefix", readmodel.ResolveQuery{Text: "Spoka"}, want{"Spokane, WA", readmodel.GeoCity, MethodPrefix}, DecisionReview},
		{"city of", readmodel.ResolveQuery{Text: "City of Seattle"}, want{"City of Seattle, WA", readmodel.GeoJurisdiction, MethodExact}, DecisionAccept},
		{"zip", readmodel.ResolveQuery{Text: "98101"}, want{"98101 (Seattle, WA)", readmodel.GeoZip, MethodPostalCode}, DecisionAccept},
		{"zip+4", readmodel.ResolveQuery{Text: "98004-1234"}, want{"98004 (Bellevue, WA)", readmodel.GeoZip, MethodPostalCode}, DecisionAccept},
		{"city st zip", readmodel.ResolveQuery{Text: "Bellevue, WA 98004"}, want{"98004 (Bellevue, WA)", readmodel.GeoZip, MethodPostalCode}, DecisionAccept},
		{"county", readmodel.ResolveQuery{Text: "King County"}, want{"King County, WA", readmodel.GeoCounty, MethodExact}, DecisionReview},
		{"county co", readmodel.ResolveQuery{Text: "king co"}, want{"King County, WA", readmodel.GeoCounty, ""}, ""},
		{"county in state", readmodel.ResolveQuery{Text: "King County, WA"}, want{"King County, WA", readmodel.GeoCounty, MethodExact}, DecisionAccept},
		{"county texas", readmodel.ResolveQuery{Text: "King County TX"}, want{"King County, TX", readmodel.GeoCounty, MethodExact}, DecisionAccept},
		{"state code", readmodel.ResolveQuery{Text: "spokane wa"}, want{"Spokane, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"state name", readmodel.ResolveQuery{Text: "Salem, Massachusetts"}, want{"Salem, MA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"abbreviation", readmodel.ResolveQuery{Text: "Mt Vernon, WA"}, want{"Mount Vernon, WA", readmodel.GeoCity, MethodAlias}, DecisionAccept},
		{"hyphen", readmodel.ResolveQuery{Text: "Sedro Woolley"}, want{"Sedro-Woolley, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"joined", readmodel.ResolveQuery{Text: "Sedrowoolley"}, want{"Sedro-Woolley, WA", readmodel.GeoCity, MethodAlias}, ""},
		{"state", readmodel.ResolveQuery{Text: "Oregon"}, want{"Oregon", readmodel.GeoState, MethodExact}, DecisionAccept},
		{"state alias", readmodel.ResolveQuery{Text: "WA"}, want{"Washington", readmodel.GeoState, MethodAlias}, ""},
		{"population prior", readmodel.ResolveQuery{Text: "Portland"}, want{"Portland, OR", readmodel.GeoCity, MethodExact}, DecisionReview},
		{"state filter wins", readmodel.ResolveQuery{Text: "Portland", State: "ME"}, want{"Portland, ME", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"type filter", readmodel.ResolveQuery{Text: "King", GeoType: readmodel.GeoCounty}, want{"King County, WA", readmodel.GeoCounty, MethodAlias}, ""},
		{"unincorporated", readmodel.ResolveQuery{Text: "Unincorporated King County"}, want{"King County, WA (unincorporated)", readmodel.GeoJurisdiction, MethodAlias}, ""},
	})
}

func TestNameQueryNeverPutsZipFirst(t *testing.T) {
	x := fixtureIndex()
	for _, text := range []string{"Seattle", "Bellevue", "Portland", "Seattle WA", "Seattle 981"} {
		cs := x.Search(readmodel.ResolveQuery{Text: text, Limit: 10})
		if len(cs) > 0 && cs[0].Location.GeoType == readmodel.GeoZip {
			t.Errorf("%q: ZIP first\n%s", text, describe(cs))
		}
	}
}

// TestZipPrefix: a text of 3 or 4 digits alone is the start of a ZIP; it
// lists the ZIPs it begins (prefix, never accept) under the filters and
// the limit. Mixed with words the number stays a word, as before.
func TestZipPrefix(t *testing.T) {
	x := New()
	for _, l := range fixture() {
		x.Upsert(l)
	}
	for _, code := range []string{"98102", "98103", "98052", "98109"} {
		x.Upsert(readmodel.Location{GeoID: "z-" + code, GeoType: readmodel.GeoZip, Name: code, Zipcode: code,
			DisplayName: code + " (Seattle, WA)", State: "WA", City: "Seattle", CityGeoID: "c-sea"})
	}
	x.Upsert(readmodel.Location{GeoID: "z-98105", GeoType: readmodel.GeoZip, Name: "98105", Zipcode: "98105",
		DisplayName: "98105 (Seattle, WA)", State: "WA", City: "Seattle", Population: 50_000})
	// A geo_id that sorts first, a code that sorts last: codes decide.
	x.Upsert(readmodel.Location{GeoID: "a-98199", GeoType: readmodel.GeoZip, Name: "98199", Zipcode: "98199",
		DisplayName: "98199 (Seattle, WA)", State: "WA", City: "Seattle"})
	ids := func(cs []readmodel.Candidate) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Location.GeoID)
		}
		return out
	}
	tests := []struct {
		name string
		rq   readmodel.ResolveQuery
		want []string
	}{
		// Population first, then the code.
		{"three digits", readmodel.ResolveQuery{Text: "981", Limit: 10}, []string{"z-98105", "z-98101", "z-98102", "z-98103", "z-98109", "a-98199"}},
		{"four digits", readmodel.ResolveQuery{Text: " 9800 ", Limit: 10}, []string{"z-98004"}},
		{"limit", readmodel.ResolveQuery{Text: "981", Limit: 2}, []string{"z-98105", "z-98101"}},
		{"state filter", readmodel.ResolveQuery{Text: "981", State: "OR", Limit: 10}, nil},
		{"state filter keeps", readmodel.ResolveQuery{Text: "972", State: "OR", Limit: 10}, []string{"z-97201"}},
		{"geo_type filter", readmodel.ResolveQuery{Text: "981", GeoType: readmodel.GeoCity, Limit: 10}, nil},
		{"geo_type zip", readmodel.ResolveQuery{Text: "980", GeoType: readmodel.GeoZip, Limit: 10}, []string{"z-98004", "z-98052"}},
		{"no such prefix", readmodel.ResolveQuery{Text: "123", Limit: 10}, nil},
		{"two digits", readmodel.ResolveQuery{Text: "98", Limit: 10}, nil},
		{"mixed with a name", readmodel.ResolveQuery{Text: "Seattle 981", Limit: 10}, nil},
		{"mixed with a state", readmodel.ResolveQuery{Text: "981 WA", Limit: 10}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := x.Search(tt.rq)
			checkContract(t, tt.rq, cs)
			if !slices.Equal(ids(cs), tt.want) {
				t.Fatalf("got %v, want %v\n%s", ids(cs), tt.want, describe(cs))
			}
			for _, c := range cs {
				if c.MatchMethod != MethodPrefix || c.Decision == DecisionAccept || !slices.Contains(c.Reasons, "postal_code_prefix") {
					t.Fatalf("%s: method %s decision %s reasons %v", c.Location.GeoID, c.MatchMethod, c.Decision, c.Reasons)
				}
			}
		})
	}
	// One ZIP of the prefix: still review, more confident than many.
	one := x.Search(readmodel.ResolveQuery{Text: "9800", Limit: 10})
	many := x.Search(readmodel.ResolveQuery{Text: "9810", Limit: 10})
	if one[0].Decision != DecisionReview || one[0].Confidence <= many[0].Confidence {
		t.Fatalf("one ZIP %s %v, many %v", one[0].Decision, one[0].Confidence, many[0].Confidence)
	}
	// The exported scorer agrees (the search backend's path).
	q := ParseQuery(readmodel.ResolveQuery{Text: "9810", Limit: 10})
	for _, c := range many {
		m, ok := Score(q, c.Location)
		if !ok || m.Score != c.Score || m.Method != c.MatchMethod {
			t.Fatalf("Score(%s) = %+v %v; Search %v %s", c.Location.GeoID, m, ok, c.Score, c.MatchMethod)
		}
	}
	if _, ok := Score(q, readmodel.Location{GeoID: "c-x", GeoType: readmodel.GeoCity, Name: "981", Zipcode: "98101"}); ok {
		t.Fatal("a ZIP prefix matched a city")
	}
	// Deleting the last ZIP of a prefix empties it.
	x.Delete("z-98004")
	if cs := x.Search(readmodel.ResolveQuery{Text: "9800", Limit: 10}); len(cs) != 0 {
		t.Fatalf("deleted ZIP found:\n%s", describe(cs))
	}
}

// TestAmbiguousAbbreviation: "Pt" is Point or Port on the query side,
// exactly, with the abbreviation's alias quality; where both exist the
// population prior orders them and they stay ambiguous.
func TestAmbiguousAbbreviation(t *testing.T) {
	x := New()
	city := func(id, name, state string, pop int64) readmodel.Location {
		return readmodel.Location{GeoID: "c-" + id, GeoType: readmodel.GeoCity, Name: name, DisplayName: name + ", " + state,
			State: state, City: name, Population: pop, Incorporated: true}
	}
	for _, l := range []readmodel.Location{
		city("pa", "Port Angeles", "WA", 20_000), city("pp", "Point Pleasant", "NJ", 19_000),
		city("ptr", "Point Roberts", "WA", 1_300), city("por", "Port Roberts", "MI", 900),
		city("pab", "Pt. Abbey", "OR", 500), city("po", "Porter", "TX", 300), city("fr", "Fort Roberts", "TX", 300),
		{GeoID: "z-98362", GeoType: readmodel.GeoZip, Name: "98362", Zipcode: "98362", DisplayName: "98362 (Port Angeles, WA)",
			State: "WA", City: "Port Angeles", CityGeoID: "c-pa"},
	} {
		x.Upsert(l)
	}
	tests := []struct {
		name string
		text string
		want want
		dec  string
	}{
		{"port", "Pt Angeles", want{"Port Angeles, WA", readmodel.GeoCity, MethodAlias}, DecisionAccept},
		{"port dotted", "pt. angeles, wa", want{"Port Angeles, WA", readmodel.GeoCity, MethodAlias}, DecisionAccept},
		{"point", "Pt Pleasant", want{"Point Pleasant, NJ", readmodel.GeoCity, MethodAlias}, DecisionAccept},
		{"point spelled", "Point Pleasant", want{"Point Pleasant, NJ", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"port spelled", "Port Angeles", want{"Port Angeles, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"both, population first", "Pt Roberts", want{"Point Roberts, WA", readmodel.GeoCity, MethodAlias}, DecisionReview},
		{"both, state decides", "Pt Roberts MI", want{"Port Roberts, MI", readmodel.GeoCity, MethodAlias}, DecisionAccept},
		{"indexed Pt reads Point", "Point Abbey", want{"Pt. Abbey, OR", readmodel.GeoCity, MethodAlias}, DecisionAccept},
		{"typo in the other word", "Pt Angles", want{"Port Angeles, WA", readmodel.GeoCity, MethodFuzzy}, DecisionReview},
		{"zip city", "Pt Angeles WA 98362", want{"98362 (Port Angeles, WA)", readmodel.GeoZip, MethodPostalCode}, DecisionAccept},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := checkTop(t, x, readmodel.ResolveQuery{Text: tt.text}, tt.want)
			if cs[0].Decision != tt.dec {
				t.Fatalf("decision %s, want %s\n%s", cs[0].Decision, tt.dec, describe(cs))
			}
			if tt.want.geoType == readmodel.GeoZip && !slices.Contains(cs[0].Reasons, "city_match") {
				t.Fatalf("no city_match:\n%s", describe(cs))
			}
		})
	}
	// Port is no typo or prefix of Point's and back: the other long form
	// matches only exactly.
	for _, text := range []string{"Point Angeles", "Port Pleasant", "Pt Abbey Ridge"} {
		if cs := x.Search(readmodel.ResolveQuery{Text: text, Limit: 10}); len(cs) != 0 {
			t.Errorf("%q:\n%s", text, describe(cs))
		}
	}
	for _, text := range []string{"Pt", "Pt Roberts"} {
		for _, c := range x.Search(readmodel.ResolveQuery{Text: text, Limit: 10}) {
			if n := c.Location.Name; n == "Porter" || n == "Fort Roberts" {
				t.Errorf("%q matched %s", text, n)
			}
		}
	}
}

// TestCommonLastWordPrefix: a last word with more than maxPrefixExact
// postings expands as a prefix only when another word constrains it.
func TestCommonLastWordPrefix(t *testing.T) {
	x := New()
	for i := range maxPrefixExact + 10 {
		name := fmt.Sprintf("Oak %c%c", 'a'+i/26, 'a'+i%26)
		x.Upsert(readmodel.Location{GeoID: fmt.Sprintf("c-oak%02d", i), GeoType: readmodel.GeoCity, Name: name,
			DisplayName: name + ", TX", State: "TX", Population: 100})
	}
	for _, l := range []readmodel.Location{
		{GeoID: "c-to", GeoType: readmodel.GeoCity, Name: "Thousand Oaks", DisplayName: "Thousand Oaks, CA", State: "CA", Population: 120_000},
		{GeoID: "c-ok", GeoType: readmodel.GeoCity, Name: "Oakland", DisplayName: "Oakland, CA", State: "CA", Population: 400_000},
	} {
		x.Upsert(l)
	}
	if n := len(x.terms["oak"]); n <= maxPrefixExact {
		t.Fatalf("oak has %d postings, want more than %d", n, maxPrefixExact)
	}
	checkTop(t, x, readmodel.ResolveQuery{Text: "Thousand Oak"}, want{"Thousand Oaks, CA", readmodel.GeoCity, MethodPrefix})
	checkTop(t, x, readmodel.ResolveQuery{Text: "thousand oak ca"}, want{"Thousand Oaks, CA", readmodel.GeoCity, MethodPrefix})
	// Alone, the common word means the names that have it.
	cs := x.Search(readmodel.ResolveQuery{Text: "Oak", Limit: 20})
	checkContract(t, readmodel.ResolveQuery{Limit: 20}, cs)
	if len(cs) == 0 {
		t.Fatal("Oak: no candidates")
	}
	for _, c := range cs {
		if c.Location.GeoID == "c-to" || c.Location.GeoID == "c-ok" {
			t.Fatalf("Oak alone expanded as a prefix:\n%s", describe(cs))
		}
	}
	// A rare word alone still does.
	checkTop(t, x, readmodel.ResolveQuery{Text: "Oakl"}, want{"Oakland, CA", readmodel.GeoCity, MethodPrefix})
}

// TestCommonWordTakesNoTypos: a common name word is meant as typed, so
// "Port" lists the names that have the word, not "Post, TX" (one edit
// away, a whole name, which would outscore them); a rare word still
// takes its typos ("Yakama" finds Yakima).
func TestCommonWordTakesNoTypos(t *testing.T) {
	x := New()
	for i := range maxPrefixExact + 10 {
		name := fmt.Sprintf("Port %c%c", 'a'+i/26, 'a'+i%26)
		x.Upsert(readmodel.Location{GeoID: fmt.Sprintf("c-port%02d", i), GeoType: readmodel.GeoCity, Name: name,
			DisplayName: name + ", WA", State: "WA", Population: 100})
	}
	for _, l := range []readmodel.Location{
		{GeoID: "c-post", GeoType: readmodel.GeoCity, Name: "Post", DisplayName: "Post, TX", State: "TX", Population: 5_000},
		{GeoID: "c-yak", GeoType: readmodel.GeoCity, Name: "Yakima", DisplayName: "Yakima, WA", State: "WA", Population: 96_000},
	} {
		x.Upsert(l)
	}
	cs := x.Search(readmodel.ResolveQuery{Text: "Port", Limit: 20})
	checkContract(t, readmodel.ResolveQuery{Limit: 20}, cs)
	if len(cs) == 0 {
		t.Fatal("Port: no candidates")
	}
	for _, c := range cs {
		if c.Location.GeoID == "c-post" {
			t.Fatalf("Port took a typo to Post:\n%s", describe(cs))
		}
	}
	checkTop(t, x, readmodel.ResolveQuery{Text: "Post"}, want{"Post, TX", readmodel.GeoCity, MethodExact})
	checkTop(t, x, readmodel.ResolveQuery{Text: "Yakama"}, want{"Yakima, WA", readmodel.GeoCity, MethodFuzzy})
}

func TestFiltersAreHard(t *testing.T) {
	x := fixtureIndex()
	for _, rq := range []readmodel.ResolveQuery{
		{Text: "Seattle", State: "OR", Limit: 10},
		{Text: "Seattle", GeoType: readmodel.GeoCounty, Limit: 10},
		{Text: "98101", GeoType: readmodel.GeoCity, Limit: 10},
		{Text: "King County", State: "OR", Limit: 10},
	} {
		if cs := x.Search(rq); len(cs) != 0 {
			t.Errorf("%+v: want nothing, got\n%s", rq, describe(cs))
		}
	}
	cs := x.Search(readmodel.ResolveQuery{Text: "King County", State: "TX", Limit: 10})
	checkContract(t, readmodel.ResolveQuery{State: "TX", Limit: 10}, cs)
	if len(cs) == 0 || cs[0].Location.DisplayName != "King County, TX" || !slices.Contains(cs[0].Reasons, "state_filter") {
		t.Fatalf("state filter TX:\n%s", describe(cs))
	}
}

func TestLimitAndEmpty(t *testing.T) {
	x := fixtureIndex()
	if cs := x.Search(readmodel.ResolveQuery{Text: "Springfield", Limit: 5}); cs == nil || len(cs) != 0 {
		t.Fatalf("want empty non-nil slice, got %#v", cs)
	}
	cs := x.Search(readmodel.ResolveQuery{Text: "King", Limit: 1})
	if len(cs) != 1 {
		t.Fatalf("limit 1: %d candidates", len(cs))
	}
}
