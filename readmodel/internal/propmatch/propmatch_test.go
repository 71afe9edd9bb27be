package propmatch_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   readmodel.PropertyQuery
		want propmatch.Query
		ok   bool
	}{
		{"locality tail as hints", readmodel.PropertyQuery{Address: "600 University Street, Seattle, WA 98101-1234"},
			propmatch.Query{Street: "600 UNIVERSITY ST", Number: "600", City: "SEATTLE", State: "WA", Zip: "98101",
				Typed: "600 UNIVERSITY STREET, SEATTLE, WA 98101-1234", NormalizedInput: "600 UNIVERSITY ST, SEATTLE, WA 98101"}, true},
		{"request fields override the tail", readmodel.PropertyQuery{Address: "600 University St, Seattle, WA", City: "Mt Vernon", State: "oregon", Zipcode: " 97201-0001 "},
			propmatch.Query{Street: "600 UNIVERSITY ST", Number: "600", City: "MT VERNON", State: "OR", Zip: "97201",
				Typed: "600 UNIVERSITY ST, SEATTLE, WA", NormalizedInput: "600 UNIVERSITY ST, MT VERNON, OR 97201"}, true},
		{"unit kept in the input, not the street", readmodel.PropertyQuery{Address: "  7  ocean   drive  apt 5 "},
			propmatch.Query{Street: "7 OCEAN DR", Number: "7", Typed: "7 OCEAN DRIVE APT 5", NormalizedInput: "7 OCEAN DR APT 5"}, true},
		{"no house number", readmodel.PropertyQuery{Address: "University St"},
			propmatch.Query{Street: "UNIVERSITY ST", Typed: "UNIVERSITY ST", NormalizedInput: "UNIVERSITY ST"}, false},
		{"no street name", readmodel.PropertyQuery{Address: "600"},
			propmatch.Query{Street: "600", Number: "600", Typed: "600", NormalizedInput: "600"}, false},
		{"empty", readmodel.PropertyQuery{}, propmatch.Query{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := propmatch.Parse(tc.in)
			require.Equal(t, tc.ok, ok)
			tc.want.Address = tc.in.Address
			// name is unexported; compare the exported fields.
			require.Equal(t, tc.want.Address, got.Address)
			require.Equal(t, tc.want.Street, got.Street)
			require.Equal(t, tc.want.Number, got.Number)
			require.Equal(t, tc.want.City, got.City)
			require.Equal(t, tc.want.State, got.State)
			require.Equal(t, tc.want.Zip, got.Zip)
			require.Equal(t, tc.want.Typed, got.Typed)
			require.Equal(t, tc.want.NormalizedInput, got.NormalizedInput)
		})
	}
}

func TestFilter(t *testing.T) {
	loc := func(city, state, zip string) propmatch.Locality[string] {
		return propmatch.Locality[string]{City: city, State: state, Zip: zip}
	}
	cases := []struct {
		name   string
		hints  propmatch.Locality[string]
		prop   propmatch.Locality[string]
		fields []string // nil: rejected
	}{
		{"no hints", loc("", "", ""), loc("SEATTLE", "WA", "98101"), []string{"address"}},
		{"all hints shared", loc("SEATTLE", "WA", "98101"), loc("SEATTLE", "WA", "98101"), []string{"address", "city", "state", "zipcode"}},
		{"city only", loc("SEATTLE", "", ""), loc("SEATTLE", "WA", "98101"), []string{"address", "city"}},
		{"state only", loc("", "WA", ""), loc("SEATTLE", "WA", "98101"), []string{"address", "state"}},
		{"zip only", loc("", "", "98101"), loc("SEATTLE", "WA", "98101"), []string{"address", "zipcode"}},
		{"property without zip passes, not listed", loc("SEATTLE", "WA", "98101"), loc("SEATTLE", "WA", ""), []string{"address", "city", "state"}},
		{"other city", loc("TACOMA", "", ""), loc("SEATTLE", "WA", "98101"), nil},
		{"other state", loc("", "OR", ""), loc("SEATTLE", "WA", "98101"), nil},
		{"other zip", loc("", "", "98104"), loc("SEATTLE", "WA", "98101"), nil},
		{"property without city fails a city hint", loc("SEATTLE", "", ""), loc("", "WA", ""), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fields, ok := propmatch.Filter(tc.hints, tc.prop)
			require.Equal(t, tc.fields != nil, ok)
			require.Equal(t, tc.fields, fields)
		})
	}
	t.Run("symbols, zero absent", func(t *testing.T) {
		fields, ok := propmatch.Filter(propmatch.Locality[uint32]{City: 3, Zip: 9}, propmatch.Locality[uint32]{City: 3, State: 4})
		require.True(t, ok)
		require.Equal(t, []string{"address", "city"}, fields)
		_, ok = propmatch.Filter(propmatch.Locality[uint32]{City: 3}, propmatch.Locality[uint32]{City: 5})
		require.False(t, ok)
	})
}

func TestScore(t *testing.T) {
	const canon = "600 UNIVERSITY ST, SEATTLE, WA 98101"
	uni := propmatch.Candidate[string]{Canonical: canon, Norm: "600 UNIVERSITY ST",
		Locality: propmatch.Locality[string]{City: "SEATTLE", State: "WA", Zip: "98101"}}
	cases := []struct {
		name   string
		q      readmodel.PropertyQuery
		c      propmatch.Candidate[string]
		fuzzy  bool // score with ScoreFuzzy, else ScoreStreet
		typ    string
		conf   float64 // 0 with typ "": no match
		fields []string
	}{
		{"exact canonical address", readmodel.PropertyQuery{Address: "600 university st,  seattle, wa 98101"}, uni, false,
			propmatch.TypeExact, 1, []string{"address", "city", "state", "zipcode"}},
		{"exact street line", readmodel.PropertyQuery{Address: "600 University St", City: "Seattle"}, uni, false,
			propmatch.TypeExact, 1, []string{"address", "city"}},
		{"normalized long form", readmodel.PropertyQuery{Address: "600 University Street"}, uni, false,
			propmatch.TypeNormalized, 0.95, []string{"address"}},
		{"normalized with a unit", readmodel.PropertyQuery{Address: "600 University St Ste 200", Zipcode: "98101"}, uni, false,
			propmatch.TypeNormalized, 0.95, []string{"address", "zipcode"}},
		{"street pass: other street", readmodel.PropertyQuery{Address: "600 Univrsity St"}, uni, false, "", 0, nil},
		{"street pass: hint rejects", readmodel.PropertyQuery{Address: "600 University St", City: "Tacoma"}, uni, false, "", 0, nil},
		{"fuzzy one edit", readmodel.PropertyQuery{Address: "600 Univrsity St", City: "Seattle"}, uni, true,
			// similarity 1-1/13 = 0.9231 -> 0.5 + 0.35*(0.9231-0.75)/0.25
			propmatch.TypeFuzzy, 0.7423, []string{"address", "city"}},
		{"fuzzy equal street scores the maximum", readmodel.PropertyQuery{Address: "600 University St", City: "Seattle"}, uni, true,
			propmatch.TypeFuzzy, 0.85, []string{"address", "city"}},
		{"fuzzy: too different", readmodel.PropertyQuery{Address: "600 Pine St", City: "Seattle"}, uni, true, "", 0, nil},
		{"fuzzy: other house number", readmodel.PropertyQuery{Address: "601 University St", City: "Seattle"}, uni, true, "", 0, nil},
		{"fuzzy: hint rejects", readmodel.PropertyQuery{Address: "600 Univrsity St", City: "Seattle", State: "OR"}, uni, true, "", 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, ok := propmatch.Parse(tc.q)
			require.True(t, ok)
			score := propmatch.ScoreStreet[string]
			if tc.fuzzy {
				score = propmatch.ScoreFuzzy[string]
			}
			s, ok := score(&q, q.Hints(), tc.c)
			require.Equal(t, tc.typ != "", ok)
			require.Equal(t, propmatch.Score{Confidence: tc.conf, Type: tc.typ, Fields: tc.fields}, s)
		})
	}
}

func TestFuzzyRunsOnlyAfterNothingWithACity(t *testing.T) {
	withCity, _ := propmatch.Parse(readmodel.PropertyQuery{Address: "600 University St, Seattle"})
	without, _ := propmatch.Parse(readmodel.PropertyQuery{Address: "600 University St"})
	require.True(t, withCity.Fuzzy(0))
	require.False(t, withCity.Fuzzy(1))
	require.False(t, without.Fuzzy(0))
}

func TestFuzzyConfidence(t *testing.T) {
	cases := []struct {
		sim  float64
		conf float64
		ok   bool
	}{
		{1, 0.85, true},
		{0.75, 0.5, true},
		{0.9, 0.71, true},
		{0.8, 0.57, true},
		{0.7499, 0, false},
		{0, 0, false},
	}
	for _, tc := range cases {
		conf, ok := propmatch.FuzzyConfidence(tc.sim)
		require.Equal(t, tc.ok, ok, "sim %v", tc.sim)
		require.InDelta(t, tc.conf, conf, 1e-12, "sim %v", tc.sim)
	}
}

func TestSimilarity(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"UNIVERSITY ST", "UNIVERSITY ST", 1},
		{"", "", 1},
		{"", "PIKE ST", 0},
		{"PIKE ST", "", 0},
		{"UNIVRSITY ST", "UNIVERSITY ST", 1 - 1.0/13},
		{"PIKE ST", "PINE ST", 1 - 1.0/7},
		{"ELM ST", "ÉLM ST", 1 - 1.0/6}, // runes, not bytes
		{"ABC", "XYZ", 0},
	}
	for _, tc := range cases {
		require.InDelta(t, tc.want, propmatch.Similarity(tc.a, tc.b), 1e-12, "%q %q", tc.a, tc.b)
		require.InDelta(t, tc.want, propmatch.Similarity(tc.b, tc.a), 1e-12, "symmetric %q %q", tc.b, tc.a)
	}
}

func TestRank(t *testing.T) {
	hit := func(id string, conf float64) propmatch.Hit[int] {
		return propmatch.Hit[int]{ID: id, Score: propmatch.Score{Confidence: conf}}
	}
	cases := []struct {
		name  string
		hits  []propmatch.Hit[int]
		limit int
		want  []propmatch.Hit[int]
	}{
		{"none", nil, 5, []propmatch.Hit[int]{}},
		{"one keeps its confidence", []propmatch.Hit[int]{hit("a", 1)}, 5, []propmatch.Hit[int]{hit("a", 1)}},
		{"tie is ambiguous, ids ascending", []propmatch.Hit[int]{hit("b", 1), hit("a", 1)}, 5,
			[]propmatch.Hit[int]{hit("a", 0.8), hit("b", 0.8)}},
		{"within 0.05 is ambiguous, all are scaled", []propmatch.Hit[int]{hit("a", 0.7423), hit("b", 0.79), hit("c", 0.6)}, 5,
			[]propmatch.Hit[int]{hit("b", 0.632), hit("a", 0.5938), hit("c", 0.48)}},
		{"a clear best is not ambiguous", []propmatch.Hit[int]{hit("a", 0.7), hit("b", 0.85)}, 5,
			[]propmatch.Hit[int]{hit("b", 0.85), hit("a", 0.7)}},
		{"exact and normalized are within the band: ambiguous", []propmatch.Hit[int]{hit("a", 0.95), hit("b", 1)}, 5,
			[]propmatch.Hit[int]{hit("b", 0.8), hit("a", 0.76)}},
		{"limit after ordering", []propmatch.Hit[int]{hit("c", 0.95), hit("b", 0.95), hit("a", 0.95)}, 2,
			[]propmatch.Hit[int]{hit("a", 0.76), hit("b", 0.76)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := propmatch.Rank(tc.hits, tc.limit)
			require.Len(t, got, len(tc.want))
			for i := range got {
				require.Equal(t, tc.want[i].ID, got[i].ID, "position %d", i)
				require.InDelta(t, tc.want[i].Confidence, got[i].Confidence, 1e-12, "position %d", i)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	q, ok := propmatch.Parse(readmodel.PropertyQuery{Address: "600 University Street, Seattle"})
	require.True(t, ok)
	p := readmodel.Property{PropertyID: "prop_1"}
	s := propmatch.Score{Confidence: 0.95, Type: propmatch.TypeNormalized, Fields: []string{"address", "city"}}
	require.Equal(t, readmodel.PropertyMatch{Property: p, MatchConfidence: 0.95, MatchType: "normalized",
		NormalizedInput: "600 UNIVERSITY ST, SEATTLE", MatchedFields: []string{"address", "city"},
		InputAddressShown: "600 University Street, Seattle"}, q.Match(p, s))
}

func TestLooksLikeAddress(t *testing.T) {
	for text, want := range map[string]bool{
		"600 University St, Seattle": true,
		"  12 1/2 Main St":           true,
		"Seattle":                    false,
		"98101":                      false,
		"600":                        false,
		"":                           false,
		"University St 600":          false,
	} {
		require.Equal(t, want, propmatch.LooksLikeAddress(text), "%q", text)
	}
}

func TestHouseNumber(t *testing.T) {
	for street, want := range map[string]string{
		"600 UNIVERSITY ST": "600",
		"1515P 5TH AVE":     "1515P",
		"600":               "600",
		"UNIVERSITY ST":     "",
		"":                  "",
		" 600 X":            "",
	} {
		require.Equal(t, want, propmatch.HouseNumber(street), "%q", street)
	}
}

func TestResolveCandidateAndMerge(t *testing.T) {
	loc := readmodel.Location{GeoID: "prop_b", GeoType: readmodel.GeoProperty}
	accept := propmatch.ResolveCandidate(readmodel.PropertyMatch{MatchConfidence: 0.9, MatchType: "normalized"}, loc)
	require.Equal(t, readmodel.Candidate{Location: loc, Score: 0.9, Confidence: 0.9, MatchMethod: "address",
		Decision: "accept", Reasons: []string{"address_normalized"}}, accept)
	review := propmatch.ResolveCandidate(readmodel.PropertyMatch{MatchConfidence: 0.85, MatchType: "fuzzy"},
		readmodel.Location{GeoID: "prop_a"})
	require.Equal(t, "review", review.Decision)

	city := readmodel.Candidate{Location: readmodel.Location{GeoID: "g_city", Population: 10}, Score: 0.9}
	zip := readmodel.Candidate{Location: readmodel.Location{GeoID: "g_zip"}, Score: 0.9}
	got := propmatch.MergeCandidates([]readmodel.Candidate{review, accept}, []readmodel.Candidate{zip, city}, 3)
	var ids []string
	for _, c := range got {
		ids = append(ids, c.Location.GeoID)
	}
	require.Equal(t, []string{"g_city", "g_zip", "prop_b"}, ids) // score, population desc, geo_id asc
}
