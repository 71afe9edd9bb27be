package resolve

import (
	"slices"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// TestFillerWords: words that name no place are dropped when the rest
// matches (reason filler_dropped, confidence exactly fillerConfidence
// lower), names that contain them still match by name first, and a text
// of filler words only has no candidates.
func TestFillerWords(t *testing.T) {
	x := nationalIndex(t)
	plain := checkTop(t, x, readmodel.ResolveQuery{Text: "Spokane, WA"}, want{"Spokane, WA", readmodel.GeoCity, MethodExact})
	for _, text := range []string{"Spokane, WA, USA", "Spokane, Washington, United States", "Spokane WA U.S.A.",
		"near downtown Spokane, WA", "the Spokane, WA area", "Spokane,,, WA -- US !!", "Spokane, Washington State"} {
		cs := checkTop(t, x, readmodel.ResolveQuery{Text: text}, want{"Spokane, WA", readmodel.GeoCity, MethodExact})
		if !slices.Contains(cs[0].Reasons, "filler_dropped") && text != "Spokane,,, WA -- US !!" {
			t.Errorf("%q: no filler_dropped: %v", text, cs[0].Reasons)
		}
		if got, want := cs[0].Confidence, round4(plain[0].Confidence-fillerConfidence); got != want || cs[0].Decision != DecisionAccept {
			t.Errorf("%q: confidence %v decision %s, want %v accept", text, got, cs[0].Decision, want)
		}
	}
	for _, tt := range []struct {
		text string
		want want
	}{
		{"State College, PA", want{"State College, PA", readmodel.GeoCity, MethodExact}},
		{"State College", want{"State College, PA", readmodel.GeoCity, MethodExact}},
		{"The Dalles", want{"The Dalles, OR", readmodel.GeoCity, MethodExact}},
		{"Washington", want{"Washington", readmodel.GeoState, MethodExact}},
		{"Washington DC", want{"Washington, DC", readmodel.GeoCity, MethodExact}},
		{"Washington State", want{"Washington", readmodel.GeoState, MethodExact}},
		{"State of Washington", want{"Washington", readmodel.GeoState, MethodExact}},
		{"Lake Forest, IL, USA", want{"Lake Forest, IL", readmodel.GeoCity, MethodExact}},
		{"Mount Vernon, NY, USA", want{"Mount Vernon, NY", readmodel.GeoCity, MethodExact}},
		{"County of King", want{"King County, WA", readmodel.GeoCounty, MethodExact}},
		{"The City of Seattle", want{"City of Seattle, WA", readmodel.GeoJurisdiction, MethodExact}},
	} {
		cs := checkTop(t, x, readmodel.ResolveQuery{Text: tt.text}, tt.want)
		name := tt.text == "State College, PA" || tt.text == "State College" || tt.text == "The Dalles" || tt.text == "Washington"
		if name && slices.Contains(cs[0].Reasons, "filler_dropped") {
			t.Errorf("%q matched by dropping words of its own name: %v", tt.text, cs[0].Reasons)
		}
	}
	for _, text := range []string{"USA", "US", "United States of America", "the", "State of", "U.S.A.", "!!! ,,, --", "near the"} {
		cs := x.Search(readmodel.ResolveQuery{Text: text, Limit: 10})
		if cs == nil || len(cs) != 0 {
			t.Errorf("%q: want an empty non-nil answer, got\n%s", text, describe(cs))
		}
	}
	// A ZIP keeps its place; the dropped words are said.
	cs := checkTop(t, x, readmodel.ResolveQuery{Text: "Seattle, WA 98101, USA"}, want{"98101 (Seattle, WA)", readmodel.GeoZip, MethodPostalCode})
	if !slices.Contains(cs[0].Reasons, "filler_dropped") || !slices.Contains(cs[0].Reasons, "city_match") {
		t.Errorf("ZIP reasons %v", cs[0].Reasons)
	}
}

// TestTyping: a one-letter last word after matching words is a prefix; a
// lone common word lists the places with it before an abbreviated alias;
// a city ranks before its same-named county while the last word is typed.
func TestTyping(t *testing.T) {
	x := nationalIndex(t)
	checkTop(t, x, readmodel.ResolveQuery{Text: "Lake Forest P"}, want{"Lake Forest Park, WA", readmodel.GeoCity, MethodPrefix})
	checkTop(t, x, readmodel.ResolveQuery{Text: "Lake Forest"}, want{"Lake Forest, CA", readmodel.GeoCity, MethodExact})
	checkTop(t, x, readmodel.ResolveQuery{Text: "Port W"}, want{"Port Washington, NY", readmodel.GeoCity, MethodPrefix})
	// One letter says nothing of the word's length: population orders.
	checkTop(t, x, readmodel.ResolveQuery{Text: "St L"}, want{"St. Louis, MO", readmodel.GeoCity, MethodPrefix})
	// A single letter begins the word right after the others, not any word.
	for _, c := range x.Search(readmodel.ResolveQuery{Text: "Forest Lake P", Limit: 20}) {
		if c.Location.DisplayName == "Lake Forest Park, WA" {
			t.Fatalf("a one-letter prefix matched out of order")
		}
	}
	cs := x.Search(readmodel.ResolveQuery{Text: "Mount", Limit: 10})
	if len(cs) == 0 || cs[0].Location.GeoType == readmodel.GeoState {
		t.Fatalf("Mount:\n%s", describe(cs))
	}
	checkTop(t, x, readmodel.ResolveQuery{Text: "MT"}, want{"Montana", readmodel.GeoState, MethodAlias})
	checkTop(t, x, readmodel.ResolveQuery{Text: "Montana"}, want{"Montana", readmodel.GeoState, MethodExact})
	for _, tt := range []struct {
		text string
		want want
	}{
		{"Salt La", want{"Salt Lake City, UT", readmodel.GeoCity, MethodPrefix}},
		{"Salt Lake", want{"Salt Lake County, UT", readmodel.GeoCounty, MethodAlias}},
		{"Salt Lake Co", want{"Salt Lake County, UT", readmodel.GeoCounty, MethodExact}},
		{"Salt Lake Cou", want{"Salt Lake County, UT", readmodel.GeoCounty, MethodPrefix}},
		{"Salt Lake County", want{"Salt Lake County, UT", readmodel.GeoCounty, MethodExact}},
		{"Spoka", want{"Spokane, WA", readmodel.GeoCity, MethodPrefix}},
		{"Spokane Co", want{"Spokane County, WA", readmodel.GeoCounty, MethodExact}},
	} {
		checkTop(t, x, readmodel.ResolveQuery{Text: tt.text}, tt.want)
	}
}

// TestFocus: a focus point orders same-named places, never hides an
// exact match elsewhere, never lifts a typo or prefix over an exact name
// match, and leaves confidence and decision as the text alone makes them.
func TestFocus(t *testing.T) {
	x := nationalIndex(t)
	at := func(lat, lon float64) *readmodel.Point { return &readmodel.Point{Lat: lat, Lon: lon} }
	checkTop(t, x, readmodel.ResolveQuery{Text: "Springfield"}, want{"Springfield, MA", readmodel.GeoCity, MethodExact})
	cs := checkTop(t, x, readmodel.ResolveQuery{Text: "Springfield", Focus: at(39.8, -89.65)}, want{"Springfield, IL", readmodel.GeoCity, MethodExact})
	if !slices.Contains(cs[0].Reasons, "near_focus") || cs[0].Decision == DecisionAccept {
		t.Fatalf("focused Springfield:\n%s", describe(cs))
	}
	plain := x.Search(readmodel.ResolveQuery{Text: "Springfield", Limit: 10})
	conf := map[string]float64{}
	for _, c := range plain {
		conf[c.Location.GeoID] = c.Confidence
	}
	for _, c := range cs {
		if want, ok := conf[c.Location.GeoID]; ok && c.Location.GeoID == plain[0].Location.GeoID && c.Confidence != want {
			t.Errorf("%s: confidence %v with focus, %v without", c.Location.DisplayName, c.Confidence, want)
		}
	}
	// Exact elsewhere beats near partial, prefix and typo matches.
	checkTop(t, x, readmodel.ResolveQuery{Text: "Seattle", Focus: at(45.52, -122.68)}, want{"Seattle, WA", readmodel.GeoCity, MethodExact})
	checkTop(t, x, readmodel.ResolveQuery{Text: "Portland", Focus: at(47.6, -122.33)}, want{"Portland, OR", readmodel.GeoCity, MethodExact})
	checkTop(t, x, readmodel.ResolveQuery{Text: "Portland", Focus: at(43.66, -70.26)}, want{"Portland, ME", readmodel.GeoCity, MethodExact})
	for _, tt := range []struct {
		text  string
		focus *readmodel.Point
	}{
		{"Salem", at(47.6, -122.33)},     // Salem: exact; nothing near Seattle may pass it
		{"Bellevue", at(45.52, -122.68)}, // fuzzy "Belleville"s and partial names near Portland
		{"Tacoma", at(40.7, -74.0)},
	} {
		cs := x.Search(readmodel.ResolveQuery{Text: tt.text, Limit: 20, Focus: tt.focus})
		if len(cs) == 0 || cs[0].MatchMethod != MethodExact {
			t.Fatalf("%q near %v:\n%s", tt.text, *tt.focus, describe(cs))
		}
		for i, c := range cs {
			if c.MatchMethod != MethodExact && c.MatchMethod != MethodAlias {
				for _, e := range cs[i+1:] {
					if e.MatchMethod == MethodExact && !slices.Contains(e.Reasons, "state_mismatch") {
						t.Fatalf("%q: %s (%s) above exact %s\n%s", tt.text, c.Location.DisplayName, c.MatchMethod, e.Location.DisplayName, describe(cs))
					}
				}
			}
		}
	}
	// The boost: 0.08 at the point, half every 50 km.
	loc := readmodel.Location{Lat: 47.6, Lon: -122.33}
	if b := focusBoost(at(47.6, -122.33), &loc); b != focusWeight {
		t.Errorf("boost at the point %v", b)
	}
	if b := focusBoost(at(47.6+50/111.195, -122.33), &loc); b < 0.0399 || b > 0.0401 {
		t.Errorf("boost at 50 km %v, want 0.04", b)
	}
	if b := focusBoost(at(47.6, -122.33), &readmodel.Location{}); b != 0 {
		t.Errorf("boost without coordinates %v", b)
	}
}

// TestScoreAgreesWithIndexOnNewRules: the exported scorer (the OpenSearch
// backend's path) agrees with Search on fillers, typing and focus.
func TestScoreAgreesWithIndexOnNewRules(t *testing.T) {
	x := nationalIndex(t)
	for _, rq := range []readmodel.ResolveQuery{
		{Text: "Spokane, Washington, USA", Limit: 20},
		{Text: "Washington State", Limit: 20},
		{Text: "Lake Forest P", Limit: 20},
		{Text: "Mount", Limit: 20},
		{Text: "Salt La", Limit: 20},
		{Text: "Springfield", Limit: 20, Focus: &readmodel.Point{Lat: 39.8, Lon: -89.65}},
	} {
		cs := x.Search(rq)
		q := ParseQuery(rq)
		var ms []Match
		for _, c := range cs {
			m, ok := Score(q, c.Location)
			if !ok {
				t.Fatalf("%q: Score rejects %s", rq.Text, c.Location.DisplayName)
			}
			ms = append(ms, m)
		}
		again := Rank(ms, rq.Limit)
		for i := range cs {
			if again[i].Location.GeoID != cs[i].Location.GeoID || again[i].Score != cs[i].Score || again[i].Confidence != cs[i].Confidence {
				t.Fatalf("%q: Score/Rank disagree with Search at %d:\n%s---\n%s", rq.Text, i, describe(cs), describe(again))
			}
		}
	}
}

// TestFocusNeverLiftsOverExact: with filler words dropped or not, a typo
// at the focus stays under an exact name match far away.
func TestFocusNeverLiftsOverExact(t *testing.T) {
	x := New()
	x.Upsert(readmodel.Location{GeoID: "c-far", GeoType: readmodel.GeoJurisdiction, Name: "Salem", DisplayName: "Salem, OR",
		State: "OR", Lat: 44.94, Lon: -123.03})
	x.Upsert(readmodel.Location{GeoID: "c-near", GeoType: readmodel.GeoState, Name: "Salen", DisplayName: "Salen",
		State: "ZZ", Lat: 40, Lon: -75, Population: 30_000_000})
	focus := &readmodel.Point{Lat: 40, Lon: -75}
	for _, text := range []string{"Salem", "Salem, USA", "the Salem area"} {
		cs := x.Search(readmodel.ResolveQuery{Text: text, Limit: 5, Focus: focus})
		if len(cs) != 2 || cs[0].Location.GeoID != "c-far" || !slices.Contains(cs[1].Reasons, "typo_corrected") {
			t.Fatalf("%q:\n%s", text, describe(cs))
		}
	}
}
