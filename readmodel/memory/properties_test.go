package memory_test

import (
	"context"
	"slices"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/readmodel"
)

func property(line, city, state, zip string, version int64) readmodel.Property {
	p := address.Normalize(line)
	id := events.PropertyID(address.PropertyIdentity(p, city, state))
	return readmodel.Property{
		PropertyID:        id,
		CanonicalAddress:  address.Canonical(p.Street(), address.NormalizeCity(city), state, zip),
		NormalizedAddress: p.Street(),
		City:              address.NormalizeCity(city),
		State:             state,
		Zipcode:           zip,
		Version:           version,
	}
}

func TestSearchProperties(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	uni := property("600 University Street", "Seattle", "WA", "98101", 1)
	spokane := property("600 University St", "Spokane", "WA", "99201", 1)
	pike := property("1500 Pike Place", "Seattle", "WA", "98101", 1)
	apply(t, s, readmodel.Batch{Properties: []readmodel.Property{uni, spokane, pike}})

	cases := []struct {
		name    string
		q       readmodel.PropertyQuery
		want    []string // property ids, best first
		typ     string
		conf    float64
		matched []string
	}{
		{"long form with city", readmodel.PropertyQuery{Address: "600 University Street, Seattle"}, []string{uni.PropertyID}, "normalized", 0.95, []string{"address", "city"}},
		{"canonical street", readmodel.PropertyQuery{Address: "600 UNIVERSITY ST", City: "Seattle"}, []string{uni.PropertyID}, "exact", 1, []string{"address", "city"}},
		{"canonical address", readmodel.PropertyQuery{Address: "600 University St, Seattle, WA 98101"}, []string{uni.PropertyID}, "exact", 1, []string{"address", "city", "state", "zipcode"}},
		{"zip narrows", readmodel.PropertyQuery{Address: "600 UNIVERSITY ST", Zipcode: "98101"}, []string{uni.PropertyID}, "exact", 1, []string{"address", "zipcode"}},
		{"ambiguous without city", readmodel.PropertyQuery{Address: "600 UNIVERSITY ST"}, ordered(uni.PropertyID, spokane.PropertyID), "exact", 0.8, []string{"address"}},
		{"fuzzy typo", readmodel.PropertyQuery{Address: "600 Univrsity St", City: "Seattle"}, []string{uni.PropertyID}, "fuzzy", 0.0, []string{"address", "city"}},
		{"other city", readmodel.PropertyQuery{Address: "600 University St", City: "Tacoma"}, nil, "", 0, nil},
		{"other number", readmodel.PropertyQuery{Address: "601 University St", City: "Seattle"}, nil, "", 0, nil},
		{"no house number", readmodel.PropertyQuery{Address: "University St"}, nil, "", 0, nil},
		{"unrelated street", readmodel.PropertyQuery{Address: "600 Broadway", City: "Seattle"}, nil, "", 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Limit = 5
			got, err := s.SearchProperties(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range got {
				ids = append(ids, m.Property.PropertyID)
			}
			if !slices.Equal(ids, tc.want) {
				t.Fatalf("ids %v, want %v (%+v)", ids, tc.want, got)
			}
			if len(got) == 0 {
				return
			}
			m := got[0]
			if m.MatchType != tc.typ || !slices.Equal(m.MatchedFields, tc.matched) || m.InputAddressShown != tc.q.Address {
				t.Fatalf("match %+v", m)
			}
			if tc.conf != 0 && m.MatchConfidence != tc.conf || m.MatchConfidence <= 0 || m.MatchConfidence > 1 {
				t.Fatalf("confidence %v, want %v", m.MatchConfidence, tc.conf)
			}
		})
	}

	t.Run("both spellings find the same property", func(t *testing.T) {
		a, _ := s.SearchProperties(ctx, readmodel.PropertyQuery{Address: "600 University Street, Seattle", Limit: 1})
		b, _ := s.SearchProperties(ctx, readmodel.PropertyQuery{Address: "600 UNIVERSITY ST", City: "SEATTLE", Limit: 1})
		if len(a) != 1 || len(b) != 1 || a[0].Property.PropertyID != b[0].Property.PropertyID {
			t.Fatalf("%+v vs %+v", a, b)
		}
	})

	t.Run("updates and deletes move the address index", func(t *testing.T) {
		moved := uni
		moved.NormalizedAddress, moved.CanonicalAddress, moved.Version = "602 UNIVERSITY ST", "602 UNIVERSITY ST, SEATTLE, WA 98101", 2
		apply(t, s, readmodel.Batch{Properties: []readmodel.Property{moved}})
		if got, _ := s.SearchProperties(ctx, readmodel.PropertyQuery{Address: "600 University St", City: "Seattle", Limit: 5}); len(got) != 0 {
			t.Fatalf("old address still matches: %+v", got)
		}
		if got, _ := s.SearchProperties(ctx, readmodel.PropertyQuery{Address: "602 University St", City: "Seattle", Limit: 5}); len(got) != 1 {
			t.Fatalf("new address: %+v", got)
		}
		apply(t, s, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindProperty, ID: uni.PropertyID, Version: 3}}})
		if got, _ := s.SearchProperties(ctx, readmodel.PropertyQuery{Address: "602 University St", City: "Seattle", Limit: 5}); len(got) != 0 {
			t.Fatalf("deleted property matches: %+v", got)
		}
		if _, err := s.Location(ctx, readmodel.ParseGeoRef(uni.PropertyID)); err != readmodel.ErrNotFound {
			t.Fatalf("deleted property location: %v", err)
		}
		counts, _ := s.Counts(ctx)
		if counts[readmodel.KindProperty] != 2 {
			t.Fatalf("counts %v", counts)
		}
	})
}

func ordered(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

func TestResolvePropertyScope(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	uni := property("600 University Street", "Seattle", "WA", "98101", 1)
	uni.GeoLinks = []readmodel.GeoLink{{GeoID: city, GeoType: readmodel.GeoCity, Confidence: 1, Method: "zip_city"}}
	p := permit("9", "2024-01-02", zipA, 1)
	p.PropertyID = uni.PropertyID
	apply(t, s, readmodel.Batch{Properties: []readmodel.Property{uni}, Permits: []readmodel.Permit{p}})

	got, err := s.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "600 University St, Seattle", GeoType: readmodel.GeoProperty, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("candidates %+v", got)
	}
	c := got[0]
	if c.Location.GeoID != uni.PropertyID || c.Location.GeoType != readmodel.GeoProperty || c.MatchMethod != "address" ||
		c.Decision != "accept" || c.Location.PermitCount != 1 || c.Location.LatestPermitDate != "2024-01-02" || c.Location.CityGeoID != city {
		t.Fatalf("candidate %+v", c)
	}
	if got, _ := s.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "Seattle", GeoType: readmodel.GeoProperty, Limit: 5}); len(got) != 0 {
		t.Fatalf("non-address text matched properties: %+v", got)
	}
	if _, err := s.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "Seattle", Limit: 5}); err != readmodel.ErrUnsupported {
		t.Fatalf("no resolver: %v", err)
	}
	loc, err := s.Location(ctx, readmodel.ParseGeoRef(uni.PropertyID))
	if err != nil || loc.GeoType != readmodel.GeoProperty || loc.DisplayName != uni.CanonicalAddress || loc.PermitCount != 1 {
		t.Fatalf("property location %+v %v", loc, err)
	}
}

// A property whose id is not prop_ + 32 hex is held under a symbol; its
// resolve candidate must come from the entry the search found, not from
// re-parsing the id.
func TestResolvePropertyWithOtherID(t *testing.T) {
	s := newStore(t)
	p := property("600 University Street", "Seattle", "WA", "98101", 1)
	p.PropertyID = "parcel-0001"
	apply(t, s, readmodel.Batch{Properties: []readmodel.Property{p}})
	got, err := s.ResolveCandidates(context.Background(), readmodel.ResolveQuery{Text: "600 University St, Seattle", GeoType: readmodel.GeoProperty, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Location.GeoID != p.PropertyID || got[0].Location.DisplayName != p.CanonicalAddress {
		t.Fatalf("candidates %+v", got)
	}
}

// No match is an empty slice, not nil (readmodel.Reader.ResolveCandidates).
func TestResolvePropertyScopeNoMatchIsEmpty(t *testing.T) {
	got, err := newStore(t).ResolveCandidates(context.Background(), readmodel.ResolveQuery{Text: "Seattle", GeoType: readmodel.GeoProperty, Limit: 5})
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("candidates %#v, %v", got, err)
	}
}
