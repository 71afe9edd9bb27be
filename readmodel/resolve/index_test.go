package resolve

import (
	"fmt"
	"sync"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

func TestIncrementalUpdates(t *testing.T) {
	x := fixtureIndex()
	x.Warm() // the deletion neighbourhood built: Upsert and Delete keep it
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
	if _, ok := x.deletes().ids["emerald"]; ok {
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

// TestDeletesBuiltWhenFirstNeeded: the deletion neighbourhood (two-typo
// lookups) is not built as locations arrive; the first search that
// needs it builds it from the posted terms, with the answers of an index
// that kept it all along, and from then on Upsert and Delete keep it.
func TestDeletesBuiltWhenFirstNeeded(t *testing.T) {
	lazy, warm := fixtureIndex(), fixtureIndex()
	warm.Warm()
	if lazy.delsBuilt.Load() || lazy.dels != nil {
		t.Fatal("the deletion neighbourhood was built by Upsert")
	}
	// Eight letters or more take two typos: "Washington" as "Wahsingotn".
	typo := readmodel.ResolveQuery{Text: "Wahsingotn", Limit: 5}
	if got, want := describe(lazy.Search(readmodel.ResolveQuery{Text: "Seattle", Limit: 5})), describe(warm.Search(readmodel.ResolveQuery{Text: "Seattle", Limit: 5})); got != want {
		t.Fatalf("exact search: lazy\n%s\nwarm\n%s", got, want)
	}
	if lazy.delsBuilt.Load() {
		t.Fatal("a search without a two-typo lookup built the deletion neighbourhood")
	}
	got, want := lazy.Search(typo), warm.Search(typo)
	if len(want) == 0 || want[0].Location.Name != "Washington" {
		t.Fatalf("the fixture's two-typo search found:\n%s", describe(want))
	}
	if describe(got) != describe(want) {
		t.Fatalf("two-typo search: lazy\n%s\nwarm\n%s", describe(got), describe(want))
	}
	if !lazy.delsBuilt.Load() {
		t.Fatal("a two-typo lookup did not build the deletion neighbourhood")
	}
	for _, x := range []*Index{lazy, warm} {
		if len(x.dels.ids) != len(warm.dels.ids) {
			t.Fatalf("terms in the neighbourhood: %d, want %d", len(x.dels.ids), len(warm.dels.ids))
		}
	}
	// Kept once built: a new place is found by two typos, a deleted one
	// is not.
	loc := readmodel.Location{GeoID: "c-new", GeoType: readmodel.GeoCity, Name: "Snoqualmie", DisplayName: "Snoqualmie, WA", State: "WA"}
	lazy.Upsert(loc)
	if cs := lazy.Search(readmodel.ResolveQuery{Text: "Snoqulamei", Limit: 1}); len(cs) == 0 || cs[0].Location.GeoID != "c-new" {
		t.Fatalf("a place upserted after the build, by two typos:\n%s", describe(cs))
	}
	lazy.Delete("c-new")
	if _, ok := lazy.dels.ids["snoqualmie"]; ok {
		t.Fatal("a deleted place's term kept in the neighbourhood")
	}
}

// TestDeletesBuiltOnceUnderConcurrentSearches: searches that need the
// neighbourhood at once build it once, beside Warm (go test -race).
func TestDeletesBuiltOnceUnderConcurrentSearches(t *testing.T) {
	x := fixtureIndex()
	var wg sync.WaitGroup
	results := make([]string, 8)
	for i := range results {
		wg.Go(func() {
			if i == 0 {
				x.Warm()
			}
			results[i] = describe(x.Search(readmodel.ResolveQuery{Text: "Wahsingotn", Limit: 5}))
		})
	}
	wg.Wait()
	for i := range results {
		if results[i] != results[0] || results[i] == "" {
			t.Fatalf("search %d:\n%s\nsearch 0:\n%s", i, results[i], results[0])
		}
	}
}

// Reserve sizes an empty index's maps: filling it allocates less than
// filling one grown from empty, and it answers alike. It leaves an index
// that holds a location as it is.
func TestReserve(t *testing.T) {
	locs := make([]readmodel.Location, 3000)
	for i := range locs {
		if i%2 == 0 {
			z := fmt.Sprintf("%05d", 10000+i)
			locs[i] = readmodel.Location{GeoID: "zip:" + z, GeoType: readmodel.GeoZip, Name: z, Zipcode: z, State: "WA"}
		} else {
			locs[i] = readmodel.Location{GeoID: fmt.Sprintf("city:c%d", i), GeoType: readmodel.GeoCity, Name: fmt.Sprintf("Town %d", i), State: "WA"}
		}
	}
	fill := func(reserve bool) *Index {
		x := New()
		if reserve {
			x.Reserve(len(locs))
		}
		for _, l := range locs {
			x.Upsert(l)
		}
		return x
	}
	var plain, reserved *Index
	grown := testing.AllocsPerRun(3, func() { plain = fill(false) })
	sized := testing.AllocsPerRun(3, func() { reserved = fill(true) })
	if sized >= grown {
		t.Fatalf("%v allocations with Reserve, %v without", sized, grown)
	}
	for _, q := range []string{"Town 1001", "Twon 1001", "10042", "1004"} {
		want := plain.Search(readmodel.ResolveQuery{Text: q, Limit: 5})
		got := reserved.Search(readmodel.ResolveQuery{Text: q, Limit: 5})
		if len(want) == 0 || describe(got) != describe(want) {
			t.Fatalf("%q: reserved index\n%s\nwant\n%s", q, describe(got), describe(want))
		}
	}
	x := New()
	x.Upsert(locs[1])
	x.Reserve(len(locs))
	if x.Len() != 1 || len(x.Search(readmodel.ResolveQuery{Text: locs[1].Name, Limit: 1})) != 1 {
		t.Fatal("Reserve dropped a held location")
	}
}
