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
	d.bulk, d.deferGeo = true, true
	st := newImportStages(d)
	for i, b := range []readmodel.Batch{
		{Locations: []readmodel.Location{loc}},
		{Locations: []readmodel.Location{loc}, Permits: ps[:10]},
		{Permits: ps[10:20]},
		{Permits: ps[20:], Properties: []readmodel.Property{prop}},
	} {
		st.add(&b)
		if st.geo != nil || !d.deferGeo {
			t.Fatalf("batch %d: the geo indexes started before the permits ended", i)
		}
	}
	st.add(&readmodel.Batch{Properties: []readmodel.Property{prop}})
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
