package memory

import (
	"fmt"
	"testing"

	"github.com/permitd/permitd/readmodel"
)

// In a snapshot's order (locations, a batch ending them with the first
// permits, permits, a batch ending them with the first properties,
// properties) the permits are all indexed with the geo indexes deferred,
// and the geo indexes are built in the background from the first batch
// without permits, never earlier: a start at the batch that ends the
// locations would index every later permit the slow way.
func TestImportStagesDeferGeoInASnapshotsOrder(t *testing.T) {
	permit := func(i int) readmodel.Permit {
		return readmodel.Permit{PermitID: fmt.Sprint("t:", i), PermitNumber: fmt.Sprint(i), Source: "t", IssueDate: "2024-01-02", Version: 1,
			GeoLinks: []readmodel.GeoLink{{GeoID: "zip:1", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}}}
	}
	var ps []readmodel.Permit
	for i := range 30 {
		ps = append(ps, permit(i))
	}
	loc := readmodel.Location{GeoID: "zip:1", GeoType: readmodel.GeoZip, Version: 1}
	prop := readmodel.Property{PropertyID: "prop_0123456789abcdef0123456789abcdef", Version: 1}
	d := newSide(nil)
	d.bulk = true
	d.deferGeoIndexes()
	st := newImportStages(d)
	for i, b := range []readmodel.Batch{
		{Locations: []readmodel.Location{loc}},
		{Locations: []readmodel.Location{loc}, Permits: ps[:10]},
		{Permits: ps[10:20]},
		{Permits: ps[20:], Properties: []readmodel.Property{prop}},
	} {
		st.add(importBatch{b: &b})
		if st.geo != nil || !d.deferGeo {
			t.Fatalf("batch %d: the geo indexes started before the permits ended", i)
		}
	}
	st.add(importBatch{b: &readmodel.Batch{Properties: []readmodel.Property{prop}}})
	if st.geo == nil {
		t.Fatal("the geo indexes did not start with the first batch without permits")
	}
	st.close()
	if d.deferGeo || len(d.pf.months) == 0 {
		t.Fatalf("after close: deferGeo %v, %d month stats", d.deferGeo, len(d.pf.months))
	}
	if got := d.pi.geoIdx[d.pi.syms.ids["zip:1"]].size(); got != 30 {
		t.Fatalf("zip:1 holds %d permits, want 30", got)
	}
}

// While the geo indexes are deferred a permit goes to its geos' lists;
// the build makes each geo's set from its list, sorted when the permits
// came out of order and with a permit linked twice to a geo once, and
// only the build's wait gives the side its sets: the lists are the
// build's while it runs.
func TestDeferredGeoListsMakeTheSets(t *testing.T) {
	// Permits indexed out of index order, and in it (a snapshot's order:
	// the lists are taken as sorted, indexOrder), give the same sets.
	for _, tc := range []struct {
		name  string
		order []int
	}{{"out of order", []int{0, 1, 2, 3}}, {"in index order", []int{1, 3, 0, 2}}} {
		t.Run(tc.name, func(t *testing.T) {
			d := newSide(nil)
			d.bulk = true
			d.deferGeoIndexes()
			zip := readmodel.GeoLink{GeoID: "zip:1", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}
			twice := zip
			twice.Method = "geocode"
			days := []string{"2024-01-05", "2024-03-01", "2023-12-31", "2024-03-01"}
			for _, i := range tc.order {
				links := []readmodel.GeoLink{zip}
				if i == 1 {
					links = append(links, twice) // linked twice to zip:1
				}
				d.putPermit(readmodel.Permit{PermitID: fmt.Sprint("t:", i), PermitNumber: fmt.Sprint(i), Source: "t", IssueDate: days[i], Version: 1, GeoLinks: links})
			}
			if sorted := tc.order[0] == 1; d.pi.order.sorted != sorted {
				t.Fatalf("indexOrder.sorted %v, want %v", d.pi.order.sorted, sorted)
			}
			if len(d.pi.geoIdx) != 0 {
				t.Fatalf("%d geo sets while deferred, want none", len(d.pi.geoIdx))
			}
			b := d.startGeoBuild(d, geoAll)
			if d.pi.deferred != nil {
				t.Fatal("the side kept the lists it handed to the build")
			}
			b.wait(d)
			if d.deferGeo || d.pi.deferred != nil {
				t.Fatalf("after wait: deferGeo %v, lists %v", d.deferGeo, d.pi.deferred)
			}
			var got []string
			set := d.pi.geoIdx[d.pi.syms.ids["zip:1"]]
			set.t.scan(func(k pkey) bool {
				got = append(got, issueOf(k.ik)+" "+set.t.permit(k).id)
				return true
			})
			want := []string{"2024-03-01 t:1", "2024-03-01 t:3", "2024-01-05 t:0", "2023-12-31 t:2"}
			if fmt.Sprint(got) != fmt.Sprint(want) || set.size() != len(want) {
				t.Fatalf("zip:1 holds %v (size %d), want %v", got, set.size(), want)
			}
			if n := d.pf.months.count(); n != 3 {
				t.Fatalf("%d month stats, want 3", n)
			}
			if m := d.pf.months.get(d.pi.syms.ids["zip:1"], 2024*12+2); m == nil || m.count != 2 {
				t.Fatalf("March 2024 of zip:1: %+v, want 2 permits", m)
			}
		})
	}
}

// TestPermitLinkedTwiceSortingLastIsHeldOnce: a permit that sorts after
// every permit indexed before it is appended to its sets (indexOrder);
// linked twice to one geo, it is in the geo's set once, as when it is
// inserted.
func TestPermitLinkedTwiceSortingLastIsHeldOnce(t *testing.T) {
	d := newSide(nil)
	zip := readmodel.GeoLink{GeoID: "zip:1", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}
	twice := zip
	twice.Method = "geocode"
	for i, day := range []string{"2024-03-01", "2020-01-01"} { // the second sorts last
		d.putPermit(readmodel.Permit{PermitID: fmt.Sprint("t:", i), PermitNumber: fmt.Sprint(i), Source: "t", IssueDate: day, Version: 1, GeoLinks: []readmodel.GeoLink{zip, twice}})
		if !d.pi.order.appends(d.permits.rows[fmt.Sprint("t:", i)].doc) {
			t.Fatalf("permit %d was not appended", i)
		}
	}
	set := d.pi.geoIdx[d.pi.syms.ids["zip:1"]]
	var got []string
	set.t.scan(func(k pkey) bool { got = append(got, set.t.permit(k).id); return true })
	if fmt.Sprint(got) != "[t:0 t:1]" || set.size() != 2 {
		t.Fatalf("zip:1 holds %v (size %d), want [t:0 t:1]", got, set.size())
	}
}
