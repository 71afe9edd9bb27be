package memory

import (
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// TestSharedLists holds leadLists to a plain copy: equal lists, nil for
// empty ones (as readmodel's Clone), one list handed out for equal
// contents and none for different ones, full (an append copies), from
// several goroutines with more lists than slots.
func TestSharedLists(t *testing.T) {
	m := &sharedLists{seed: leadLists.seed}
	var lists [][]string
	for i := range 40000 {
		l := []string{"gzip" + strconv.Itoa(i%25000), "gcity" + strconv.Itoa(i%97), "gstate"}
		lists = append(lists, l[:1+i%3], append(l, strconv.Itoa(i%9), "a", "b", "c", "d", "e", "f")) // the second longer than maxSharedList
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range lists {
				l := lists[(i+g*len(lists)/4)%len(lists)]
				got := m.of(l)
				if !slices.Equal(got, l) || cap(got) != len(got) || &got[0] == &l[0] {
					t.Errorf("of(%v) = %v (cap %d): not an equal, full copy", l, got, cap(got))
					return
				}
			}
		})
	}
	wg.Wait()
	for _, empty := range [][]string{nil, {}} {
		if got := m.of(empty); got != nil {
			t.Errorf("of(%#v) = %#v, want nil", empty, got)
		}
	}
	a, b := m.of([]string{"g1", "g2"}), m.of([]string{"g1", "g2"})
	if &a[0] != &b[0] {
		t.Error("equal lists were copied twice")
	}
	if c := m.of([]string{"g1", "g3"}); slices.Equal(c, a) {
		t.Errorf("a different list came back as %v", c)
	}
	if n := testing.AllocsPerRun(100, func() { m.of([]string{"g1", "g2"}) }); n != 0 {
		t.Errorf("a held list took %v allocations", n)
	}
}

// TestCloneLead: cloneLead is readmodel's Clone but for sharing.
func TestCloneLead(t *testing.T) {
	conf := 0.5
	for _, l := range []readmodel.Lead{
		{LeadID: "l1", Confidence: &conf, ReasonCodes: []string{"A", "B"}, GeoIDs: []string{"g1", "g2"}},
		{LeadID: "l2", ReasonCodes: []string{}, GeoIDs: nil},
	} {
		got, want := cloneLead(l), l.Clone()
		if !slices.Equal(got.ReasonCodes, want.ReasonCodes) || !slices.Equal(got.GeoIDs, want.GeoIDs) ||
			(got.ReasonCodes == nil) != (want.ReasonCodes == nil) || (got.GeoIDs == nil) != (want.GeoIDs == nil) {
			t.Errorf("cloneLead(%+v) = %+v, want %+v", l, got, want)
		}
		if l.Confidence != nil && (got.Confidence == l.Confidence || *got.Confidence != *l.Confidence) {
			t.Errorf("the confidence was not copied: %p %p", got.Confidence, l.Confidence)
		}
		got.Confidence, want.Confidence, got.ReasonCodes, want.ReasonCodes, got.GeoIDs, want.GeoIDs = nil, nil, nil, nil, nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("cloneLead(%+v) = %+v, want %+v", l, got, want)
		}
	}
}
