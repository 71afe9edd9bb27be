package resolve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/readmodel"
)

// national is the index of the bundled national gazetteer, loaded through
// the real path: gazetteer.Import -> JSON -> events.Decode ->
// indexer.ProjectLocation -> Index.Upsert.
var national = sync.OnceValues(func() (*Index, error) {
	locs, err := loadNational()
	if err != nil {
		return nil, err
	}
	x := New()
	for _, l := range locs {
		x.Upsert(l)
	}
	return x, nil
})

var nationalLocs = sync.OnceValues(loadNational)

func loadNational() ([]readmodel.Location, error) {
	var locs []readmodel.Location
	_, err := gazetteer.Import(context.Background(), data.Open, func(env events.Envelope) error {
		raw, err := json.Marshal(env)
		if err != nil {
			return err
		}
		env, err = events.Decode(raw)
		if err != nil {
			return err
		}
		loc, err := indexer.ProjectLocation(env)
		if err != nil {
			return err
		}
		locs = append(locs, loc)
		return nil
	})
	return locs, err
}

func nationalLocations(tb testing.TB) []readmodel.Location {
	tb.Helper()
	locs, err := nationalLocs()
	if err != nil {
		tb.Fatalf("load national gazetteer: %v", err)
	}
	return locs
}

func nationalIndex(tb testing.TB) *Index {
	tb.Helper()
	x, err := national()
	if err != nil {
		tb.Fatalf("load national gazetteer: %v", err)
	}
	return x
}

func describe(cs []readmodel.Candidate) string {
	var b strings.Builder
	for i, c := range cs {
		fmt.Fprintf(&b, "  %d. %-40s %-12s score=%.4f conf=%.4f %-11s %-6s %v\n", i+1, c.Location.DisplayName, c.Location.GeoType, c.Score, c.Confidence, c.MatchMethod, c.Decision, c.Reasons)
	}
	return b.String()
}

// TestAcceptanceNational holds the acceptance cases against the
// national gazetteer.
func TestAcceptanceNational(t *testing.T) {
	x := nationalIndex(t)
	checkTopCases(t, x, []topCase{
		{"typo", readmodel.ResolveQuery{Text: "Seatle"}, want{"Seattle, WA", readmodel.GeoCity, MethodFuzzy}, DecisionReview},
		{"zip", readmodel.ResolveQuery{Text: "98101"}, want{"98101 (Seattle, WA)", readmodel.GeoZip, MethodPostalCode}, DecisionAccept},
		{"county", readmodel.ResolveQuery{Text: "King County"}, want{"King County, WA", readmodel.GeoCounty, MethodExact}, ""},
		{"state code", readmodel.ResolveQuery{Text: "spokane wa"}, want{"Spokane, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"geo_type county", readmodel.ResolveQuery{Text: "Spokane", GeoType: readmodel.GeoCounty}, want{"Spokane County, WA", readmodel.GeoCounty, MethodAlias}, ""},
		{"state OR", readmodel.ResolveQuery{Text: "Portland", State: "OR"}, want{"Portland, OR", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"state OR beats population", readmodel.ResolveQuery{Text: "Salem", State: "OR"}, want{"Salem, OR", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"abbreviation", readmodel.ResolveQuery{Text: "Mt Vernon, WA"}, want{"Mount Vernon, WA", readmodel.GeoCity, MethodAlias}, DecisionAccept},
		{"hyphen", readmodel.ResolveQuery{Text: "Sedro Woolley"}, want{"Sedro-Woolley, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"state name", readmodel.ResolveQuery{Text: "Yakima, Washington"}, want{"Yakima, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"city state zip", readmodel.ResolveQuery{Text: "Bellevue, WA 98004"}, want{"98004 (Bellevue, WA)", readmodel.GeoZip, MethodPostalCode}, DecisionAccept},
		{"zip+4", readmodel.ResolveQuery{Text: "98052-1234"}, want{"98052 (Redmond, WA)", readmodel.GeoZip, MethodPostalCode}, DecisionAccept},
		{"city of", readmodel.ResolveQuery{Text: "City of Seattle"}, want{"City of Seattle, WA", readmodel.GeoJurisdiction, MethodExact}, DecisionAccept},
		{"city", readmodel.ResolveQuery{Text: "Seattle"}, want{"Seattle, WA", readmodel.GeoCity, MethodExact}, DecisionAccept},
		{"prefix", readmodel.ResolveQuery{Text: "Spoka"}, want{"Spokane, WA", readmodel.GeoCity, MethodPrefix}, DecisionReview},
		{"same name", readmodel.ResolveQuery{Text: "Springfield"}, want{"Springfield, MA", readmodel.GeoCity, MethodExact}, DecisionReview},
	})
	// The county, not its authority, for "King County"; the authority
	// comes after the county.
	cs := x.Search(readmodel.ResolveQuery{Text: "King County", Limit: 10})
	for _, c := range cs {
		if c.Location.DisplayName == "King County, WA (unincorporated)" {
			break
		}
		if c.Location.GeoType == readmodel.GeoJurisdiction {
			t.Fatalf("a jurisdiction before King County, WA's own:\n%s", describe(cs))
		}
	}
	// Filters hold on every candidate.
	for _, rq := range []readmodel.ResolveQuery{
		{Text: "Springfield", State: "OR", Limit: 20},
		{Text: "Washington", GeoType: readmodel.GeoCounty, Limit: 20},
		{Text: "Lake", State: "OR", GeoType: readmodel.GeoCity, Limit: 20},
	} {
		cs := x.Search(rq)
		if len(cs) == 0 {
			t.Fatalf("%+v: no candidates", rq)
		}
		checkContract(t, rq, cs)
	}
	// A name query never puts a ZIP first.
	for _, text := range []string{"Seattle", "Redmond", "Holtsville", "Bellevue WA", "Agawam"} {
		cs := x.Search(readmodel.ResolveQuery{Text: text, Limit: 10})
		if len(cs) > 0 && cs[0].Location.GeoType == readmodel.GeoZip {
			t.Fatalf("%q:\n%s", text, describe(cs))
		}
	}
}

// TestTypoLookupsAreExhaustive: the trie walk (one edit) and the deletion
// neighbourhood (two edits) find exactly the national terms osa accepts.
func TestTypoLookupsAreExhaustive(t *testing.T) {
	x := nationalIndex(t)
	for _, w := range []string{"seatle", "spokan", "minneapolis", "califronia", "arlingtn", "hillsborough", "yakmia", "tacmoa"} {
		k := maxEdits(w)
		got := map[string]int{}
		collect := func(term string, d int) {
			if term != w {
				got[term] = d
			}
		}
		if k == 2 {
			x.deletes().within2(w, collect)
		} else {
			x.trie.fuzzy(w, k, collect)
		}
		for term := range x.terms {
			if term == w || (k == 2 && len(term) < minDeleteTerm) {
				continue
			}
			d := osa(w, term, k)
			if gd, ok := got[term]; (d <= k) != ok || (ok && gd != d) {
				t.Errorf("%q vs %q: lookup (%d, %v), osa %d", w, term, gd, ok, d)
			}
		}
	}
}
