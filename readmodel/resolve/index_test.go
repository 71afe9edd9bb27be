package resolve

import (
	"fmt"
	"sync"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

func TestIncrementalUpdates(t *testing.T) {
	x := fixtureIndex()
	n := x.Len()
	// Rename: the old name stops matching, the new one matches, typos too.
	sea := fixture()[9]
	if sea.Name != "Seattle" {
		t.Fatalf("fixture order changed: %s", sea.Name)
	}
	sea.Name, sea.DisplayName = "Emerald City", "Emerald City, WA"
	x.Upsert(sea)
	if x.Len() != n {
		t.Fatalf("replace changed Len %d -> %d", n, x.Len())
	}
	for _, c := range x.Search(readmodel.ResolveQuery{Text: "Seattle", Limit: 10}) {
		if c.Location.GeoID == sea.GeoID {
			t.Fatalf("renamed location still found by its old name")
		}
	}
	checkTop(t, x, readmodel.ResolveQuery{Text: "Emrald City"}, want{"Emerald City, WA", readmodel.GeoCity, MethodFuzzy})

	// Delete: gone, the term leaves the trie, a no-op the second time.
	x.Delete(sea.GeoID)
	x.Delete(sea.GeoID)
	x.Delete("no-such-id")
	if x.Len() != n-1 {
		t.Fatalf("Len %d after delete, want %d", x.Len(), n-1)
	}
	if cs := x.Search(readmodel.ResolveQuery{Text: "Emerald", Limit: 10}); len(cs) != 0 {
		t.Fatalf("deleted location found:\n%s", describe(cs))
	}
	if _, ok := x.terms["emerald"]; ok {
		t.Fatal("term of a deleted location kept postings")
	}
	if _, ok := x.dels.ids["emerald"]; ok {
		t.Fatal("term of a deleted location kept in the deletion neighbourhood")
	}
	if cs := x.Search(readmodel.ResolveQuery{Text: "Emeralds", Limit: 10}); len(cs) != 0 {
		t.Fatalf("deleted location found by typo:\n%s", describe(cs))
	}
	// The slot is reused and the index keeps its own copy.
	loc := readmodel.Location{GeoID: "c-new", GeoType: readmodel.GeoCity, Name: "Tukwila", DisplayName: "Tukwila, WA",
		State: "WA", Aliases: []string{"Tuk"}}
	x.Upsert(loc)
	loc.Aliases[0] = "mutated"
	cs := checkTop(t, x, readmodel.ResolveQuery{Text: "Tukwila"}, want{"Tukwila, WA", readmodel.GeoCity, MethodExact})
	if cs[0].Location.Aliases[0] != "Tuk" {
		t.Fatal("index shares the caller's alias slice")
	}
	cs[0].Location.Aliases[0] = "mutated"
	if again := x.Search(readmodel.ResolveQuery{Text: "Tukwila", Limit: 1}); again[0].Location.Aliases[0] != "Tuk" {
		t.Fatal("candidate shares the index's alias slice")
	}
	if int(x.docs.n) != len(fixture()) {
		t.Fatalf("slots %d, want reuse of the freed slot (%d)", x.docs.n, len(fixture()))
	}
}

// TestScoreAgreesWithIndex: the exported scorer a search backend uses
// gives the index's scores and methods.
func TestScoreAgreesWithIndex(t *testing.T) {
	x := fixtureIndex()
	for _, text := range []string{"Seatle", "Spoka", "King Co", "Mt Vernon, WA", "Bellevue, WA 98004", "City of Seattle", "Sedrowoolley", "Portland", "Pt Land"} {
		rq := readmodel.ResolveQuery{Text: text, Limit: 20}
		cs := x.Search(rq)
		q := ParseQuery(rq)
		var ms []Match
		for _, c := range cs {
			m, ok := Score(q, c.Location)
			if !ok {
				t.Fatalf("%q: Score rejects %s", text, c.Location.DisplayName)
			}
			ms = append(ms, m)
		}
		again := Rank(ms, rq.Limit)
		for i := range cs {
			if again[i].Location.GeoID != cs[i].Location.GeoID || again[i].Score != cs[i].Score || again[i].MatchMethod != cs[i].MatchMethod {
				t.Fatalf("%q: Score/Rank disagree with Search at %d:\n%s---\n%s", text, i, describe(cs), describe(again))
			}
		}
	}
}

// Searches running beside upserts and deletes see a consistent index:
// the fixture's Seattle stays the first answer and no answer exceeds its
// limit (the race detector checks the rest). Mismatches are collected on
// the searching goroutines and reported on the test's.
func TestConcurrentSearchAndUpsert(t *testing.T) {
	x := fixtureIndex()
	q := readmodel.ResolveQuery{Text: "Seatle wa", Limit: 5}
	before := x.Search(q)
	if len(before) == 0 {
		t.Fatalf("%q finds nothing", q.Text)
	}
	want := before[0].Location.GeoID
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for i := 0; i < 200; i++ {
				cs := x.Search(q)
				if len(cs) == 0 || len(cs) > q.Limit || cs[0].Location.GeoID != want {
					mu.Lock()
					bad = append(bad, describe(cs))
					mu.Unlock()
				}
			}
		})
	}
	for i := 0; i < 200; i++ {
		x.Upsert(readmodel.Location{GeoID: fmt.Sprintf("c-x%d", i%7), GeoType: readmodel.GeoCity, Name: fmt.Sprintf("Seattle Heights %d", i), State: "WA"})
		if i%3 == 0 {
			x.Delete(fmt.Sprintf("c-x%d", i%5))
		}
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of 800 searches beside writes went wrong (want %s first, at most %d), the first:\n%s", len(bad), want, q.Limit, bad[0])
	}
}
