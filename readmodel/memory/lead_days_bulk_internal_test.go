package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestDeferredDaysMatchOneByOne writes the same leads to a side that
// defers its trees and day cells (lead_bulk.go, lead_days_bulk.go) and
// to one that adds each lead at once, and checks that once the first
// builds them every lead structure is the same: cells with their
// records and sparse counts, roll-ups with their trees. The leads are
// new ones and in-place revisions, so the deferral lasts to the end.
// Then both take the same moves, deletes and new leads, batch after
// batch, and stay the same: the loaded cells and trees are written as
// the added ones are.
func TestDeferredDaysMatchOneByOne(t *testing.T) {
	oldRoll, oldSparse, oldKeys := rollMin, sparseMin, parallelKeys
	rollMin, sparseMin = 6, 3
	parallelKeys = 2 // the keys built by goroutines (-race)
	t.Cleanup(func() { rollMin, sparseMin, parallelKeys = oldRoll, oldSparse, oldKeys })
	rng := rand.New(rand.NewPCG(21, 22))
	one, deferred := newSide(nil), newSide(nil)
	one.signals.leads.eager, deferred.signals.leads.eager = true, true // keys made after the build are built at once
	deferred.signals.leads.deferLeadTrees()
	geos := []string{"us-wa", "zip-a", "zip-b", "city-x", "county-k"}
	newLead := func(id string, version int64) readmodel.Lead {
		l := readmodel.Lead{LeadID: id, SignalKey: []string{"roof", "solar"}[rng.IntN(2)], Version: version,
			Location: readmodel.LeadLocation{CityNorm: fmt.Sprint("c", rng.IntN(5)),
				ZipcodeNorm: []string{"98101", "98402", "98003", ""}[rng.IntN(4)], CountyNorm: []string{"king", "pierce", ""}[rng.IntN(3)]}}
		if rng.IntN(10) > 0 {
			l.EventDateUsed = fmt.Sprintf("202%d-%02d-%02d", 3+rng.IntN(2), 1+rng.IntN(4), 1+rng.IntN(4))
		}
		if rng.IntN(6) > 0 {
			c := float64(rng.IntN(101)) / 100
			l.Confidence = &c
		}
		l.GeoIDs = []string{"us-wa"}
		for _, g := range geos[1:] {
			if rng.IntN(3) == 0 {
				l.GeoIDs = append(l.GeoIDs, g)
			}
		}
		return l
	}
	both := func(leads []readmodel.Lead, deletes []readmodel.Delete) {
		t.Helper()
		require.Equal(t, oneByOne(one, leads, deletes, one.putLead), oneByOne(deferred, leads, deletes, deferred.putLead))
	}
	var ids []string
	for i := range 1500 {
		if i > 0 && rng.IntN(5) == 0 { // in place: the same positions, a new document
			l := one.leads.rows[ids[rng.IntN(len(ids))]].doc.lead
			l.Version++
			l.ReasonCodes = []string{fmt.Sprint("R", l.Version)}
			both([]readmodel.Lead{l}, nil)
			continue
		}
		ids = append(ids, fmt.Sprintf("lead_%04d", i))
		both([]readmodel.Lead{newLead(ids[len(ids)-1], 1)}, nil)
	}
	require.True(t, deferred.signals.leads.deferTrees, "an in-place revision ended the deferral")
	require.NotEqual(t, leadIndexDump(one), leadIndexDump(deferred)) // the test sees the deferral
	deferred.signals.leads.buildTrees()
	require.Equal(t, leadIndexDump(one), leadIndexDump(deferred))

	for range 20 {
		var b readmodel.Batch
		for range 60 {
			id := fmt.Sprintf("lead_%04d", rng.IntN(1700))
			v := int64(1)
			if row := one.leads.rows[id]; row != nil {
				v = row.version + 1
			}
			if rng.IntN(8) == 0 {
				b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindLead, ID: id, Version: v})
				continue
			}
			b.Leads = append(b.Leads, newLead(id, v))
		}
		both(b.Leads, b.Deletes)
		require.Equal(t, leadIndexDump(one), leadIndexDump(deferred))
	}
}

// TestFenBuilderMatchesAdds checks that a confFen built from its leads
// at once holds what adding them one by one does.
func TestFenBuilderMatchesAdds(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{0, 1, 7, 300} {
		var want confFen
		var b fenBuilder
		for range n {
			hasConf := rng.IntN(5) > 0
			conf := 0.0
			if hasConf {
				conf = []float64{0, 0.015, 0.5, 0.74, 0.75, 0.99, 1, rng.Float64()}[rng.IntN(8)]
			}
			ids := leadIDs{city: uint32(rng.IntN(4)), zip: uint32(rng.IntN(30)), county: uint32(rng.IntN(3))}
			want.add(hasConf, conf, ids, 1)
			b.add(hasConf, conf, ids)
		}
		require.Equal(t, fmt.Sprint(want), fmt.Sprint(*b.build()), "%d leads", n)
	}
}

// TestDayCellsPastTheFirstBlock writes a key's leads over more days than
// the first block of cells holds (cellBlock), one at a time in random
// order and loaded at once, then adds new days to the loaded one: every
// day's cell holds its leads' counts either way.
func TestDayCellsPastTheFirstBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(85, 3))
	const days = 5*cellBlock + 7
	var recs []*leadRec
	want := map[int32]int64{}
	for i := range 3 * days {
		r := &leadRec{date: int32(20000 + rng.IntN(days)), slot: uint32(i + 1)}
		if i < days {
			r.date = int32(20000 + i) // every day at least once
		}
		recs = append(recs, r)
		want[r.date]++
	}
	check := func(name string, d *leadDayAggs) {
		t.Helper()
		if len(d.days) != len(want) {
			t.Fatalf("%s: %d days, want %d", name, len(d.days), len(want))
		}
		for i, day := range d.days {
			if c := d.cell(i); c.n != want[day] {
				t.Fatalf("%s: day %d counts %d, want %d", name, day, c.n, want[day])
			}
		}
	}
	var one leadDayAggs
	for _, i := range rng.Perm(len(recs)) {
		one.add(recs[i], 1)
	}
	check("one by one", &one)
	var loaded leadDayAggs
	loaded.load(recs)
	check("loaded", &loaded)
	if len(loaded.blocks) == 0 {
		t.Fatalf("the loaded cells fit the first block: the test does not reach the blocks")
	}
	for i := range 2 * cellBlock { // new days, before and after the others
		r := &leadRec{date: int32(19000 + i*17), slot: uint32(len(recs) + i + 1)}
		loaded.add(r, 1)
		one.add(r, 1)
		want[r.date]++
	}
	check("loaded, then new days", &loaded)
	check("one by one, then new days", &one)
}
