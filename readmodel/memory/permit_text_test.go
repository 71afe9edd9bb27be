package memory_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestDescriptionGroups: the permits of a description are grouped in the
// text index from its groupMin-th permit (here 3), and text queries (words
// and prefixes, against the group alone, a word's own permits and groups
// together, and with permits moving in and out) answer as before; a group
// goes with its last permit, a word with its last permit, and a
// description below the threshold again is indexed word by word.
func TestDescriptionGroups(t *testing.T) {
	defer memory.SetGroupMin(3)()
	s := newStore(t)
	var ps []readmodel.Permit
	add := func(id int, desc string) readmodel.Permit {
		p := permit(fmt.Sprint(id), fmt.Sprintf("2025-01-%02d", 1+id%28), zipA, 1)
		p.RawDescription = desc
		ps = append(ps, p)
		return p
	}
	for i := range 40 { // the geo's set is larger than any posting: the postings are read
		add(100+i, fmt.Sprint("fence number ", i))
	}
	for i := range 5 {
		add(i, "Kitchen remodel")
	}
	add(10, "kitchen sink")
	add(11, "remodel basement")
	apply(t, s, readmodel.Batch{Permits: ps})
	check := func(q string, want ...string) {
		t.Helper()
		page, err := s.SearchPermits(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zipA), Limit: 100, Filter: readmodel.PermitFilter{Text: q}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range page.Permits {
			got = append(got, h.Permit.PermitID)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("q %q: %v, want %v", q, got, want)
		}
	}
	groups := func(want int) {
		t.Helper()
		if g, _ := s.TextGroups(); g != want {
			t.Fatalf("%d groups, want %d", g, want)
		}
	}
	groups(1)
	check("kitchen", "test:0", "test:1", "test:2", "test:3", "test:4", "test:10")
	check("remodel", "test:0", "test:1", "test:2", "test:3", "test:4", "test:11")
	check("kitchen remodel", "test:0", "test:1", "test:2", "test:3", "test:4")
	check("remod", "test:0", "test:1", "test:2", "test:3", "test:4", "test:11")
	check("sink", "test:10")
	// a grouped permit changes its description, another joins the group
	moved := ps[40]
	moved.Version, moved.RawDescription = 2, "kitchen sink"
	joined := ps[41]
	joined.Version, joined.RawDescription = 2, "remodel basement"
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{moved, joined}})
	check("sink", "test:0", "test:10")
	check("basement", "test:1", "test:11")
	check("kitchen remodel", "test:2", "test:3", "test:4")
	groups(1) // "kitchen remodel"; the others hold 2 each
	// the group's last permits go: the group goes, its words stay only
	// where other permits hold them
	var dels []readmodel.Delete
	for _, id := range []string{"test:2", "test:3", "test:4"} {
		dels = append(dels, readmodel.Delete{Kind: readmodel.KindPermit, ID: id, Version: 9})
	}
	apply(t, s, readmodel.Batch{Deletes: dels})
	groups(0)
	check("kitchen remodel")
	check("kitchen", "test:0", "test:10")
	check("remodel", "test:1", "test:11")
	check("remod", "test:1", "test:11")
	// back word by word below the threshold, then grouped again
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{add(20, "Kitchen remodel"), add(21, "Kitchen remodel")}})
	groups(0)
	check("kitchen remodel", "test:20", "test:21")
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{add(22, "Kitchen remodel"), add(23, "kitchen sink")}})
	groups(2)
	check("kitchen", "test:0", "test:10", "test:20", "test:21", "test:22", "test:23")
	check("kitch", "test:0", "test:10", "test:20", "test:21", "test:22", "test:23")
	// every permit goes: no group and no word is left
	dels = nil
	for _, p := range ps {
		dels = append(dels, readmodel.Delete{Kind: readmodel.KindPermit, ID: p.PermitID, Version: 9})
	}
	apply(t, s, readmodel.Batch{Deletes: dels})
	if g, w := s.TextGroups(); g != 0 || w != 0 {
		t.Fatalf("%d groups and %d words left, want none", g, w)
	}
}
