package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestPermitLanesMatchOneByOne applies the same batches to one side
// through apply (its permits in two lanes: permit_lanes.go) and to
// another one permit at a time (putPermit), and checks after every batch
// that every permit index is the same (geo sets, postings, posted geos,
// valuation orders and month stats) and that no text is held longer. The batches revise permits (the same
// id more than once in a batch too), move them between geos so that
// geos empty and reach postingMin again within a batch, send stale
// versions, and delete.
func TestPermitLanesMatchOneByOne(t *testing.T) {
	old := postingMin
	postingMin = 12
	t.Cleanup(func() { postingMin = old })
	rng := rand.New(rand.NewPCG(7, 8))
	lanes, one := newSide(nil), newSide(nil)
	versions := map[string]int64{}
	geos := []string{"us-wa", "zip-a", "zip-b", "zip-c", "city-x", "city-y", "jur-1"}
	types := []readmodel.GeoType{readmodel.GeoState, readmodel.GeoZip, readmodel.GeoZip, readmodel.GeoZip, readmodel.GeoCity, readmodel.GeoCity, readmodel.GeoJurisdiction}
	newPermit := func(id string, version int64) readmodel.Permit {
		p := readmodel.Permit{PermitID: "t:" + id, PermitNumber: id, PermitType: []string{"Building", "Electrical", ""}[rng.IntN(3)],
			WorkType: []string{"New", "Alteration"}[rng.IntN(2)], Status: "Issued", Source: "t", Version: version,
			RawDescription: []string{"kitchen remodel", "new deck", ""}[rng.IntN(3)]}
		if rng.IntN(8) > 0 {
			p.IssueDate = fmt.Sprintf("2024-%02d-%02d", 1+rng.IntN(3), 1+rng.IntN(3)) // many ties on the day
		}
		if rng.IntN(5) > 0 {
			v := float64(rng.IntN(6)) * 1000 // many ties on the valuation
			if id[len(id)-1]%2 == 0 && version%3 == 2 {
				v += 0.25 // a version whose valuation has cents (a valuation order's odd part)
			}
			p.Valuation = &v
		}
		for i, g := range geos {
			if rng.IntN(3) == 0 {
				p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{GeoID: g, GeoType: types[i], Confidence: 0.9, Method: "m"})
			}
		}
		return p
	}
	both := func(b *readmodel.Batch) {
		t.Helper()
		got := lanes.apply(b)
		want := oneByOne(one, b.Permits, b.Deletes, one.putPermit)
		require.Equal(t, want, got)
		require.Equal(t, permitIndexDump(one), permitIndexDump(lanes))
	}
	// A geo's postings begin and end within batches: its set reaches
	// postingMin, empties and refills below it, empties and refills past
	// it, empties.
	flip := func(b *readmodel.Batch, ids []int, linked bool) {
		for _, i := range ids {
			id := fmt.Sprintf("f%02d", i)
			versions[id]++
			p := newPermit(id, versions[id])
			p.GeoLinks = p.GeoLinks[:0:0]
			if linked {
				p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{GeoID: "flip", GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "m"})
			}
			b.Permits = append(b.Permits, p)
		}
	}
	span := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	for _, steps := range [][]struct {
		n      int
		linked bool
	}{
		{{20, true}},                         // posted
		{{20, false}, {5, true}},             // emptied, 5 back: not posted, 5 held
		{{20, true}},                         // posted again
		{{20, false}, {20, true}},            // emptied and posted again
		{{20, false}},                        // emptied
		{{20, true}, {20, false}, {3, true}}, // posted, emptied, 3 back
	} {
		var b readmodel.Batch
		for _, st := range steps {
			flip(&b, span(st.n), st.linked)
		}
		flip(&b, []int{50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99}, false) // to laneMin
		require.GreaterOrEqual(t, len(b.Permits), laneMin)
		both(&b)
	}
	for range 60 {
		var b readmodel.Batch
		for range laneMin + rng.IntN(200) {
			id := fmt.Sprintf("%03d", rng.IntN(150))
			v := versions[id] + 1
			if rng.IntN(10) == 0 {
				v = max(1, versions[id]-1) // stale (or equal: a re-link when linked)
			}
			versions[id] = max(versions[id], v)
			b.Permits = append(b.Permits, newPermit(id, v))
		}
		for range rng.IntN(20) {
			id := fmt.Sprintf("%03d", rng.IntN(150))
			versions[id]++
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindPermit, ID: "t:" + id, Version: versions[id]})
		}
		both(&b)
	}
	require.NotEmpty(t, lanes.pf.byValue, "some geo was posted")
}

// permitIndexDump writes out a side's permit indexes by permit id, and
// how many texts its permits hold.
func permitIndexDump(s *side) map[string][]string {
	out := map[string][]string{}
	idOf := func(slot uint32) string {
		if c := s.pi.slab.at(slot); c != nil {
			return c.id
		}
		return fmt.Sprint("empty slot ", slot)
	}
	ids := func(t treeSet) []string {
		var l []string
		t.t.scan(func(k pkey) bool { l = append(l, idOf(k.slot)); return true })
		return l
	}
	for g, t := range s.pi.geoIdx {
		out["set "+s.pi.syms.str(g)] = ids(t)
	}
	valStr := map[uint32]string{} // ids are the side's: dumps compare the strings
	for v, id := range s.pf.vals {
		valStr[id] = v
	}
	for k, t := range s.pf.postings.all() {
		val := fmt.Sprint("bucket ", k.val)
		if k.field != ffValue {
			val = valStr[k.val]
		}
		name := fmt.Sprintf("posting %s %d %s", s.pi.syms.str(k.geo), k.field, val)
		if !t.t.dense {
			out[name] = ids(t)
			continue
		}
		// A dense posting (permit_dense.go) is dumped as the kept one
		// would be: its geo's permits of its value. Its count must be
		// theirs.
		l := ids(treeSet{s.keptPosting(k, s.pi.geoIdx[k.geo])})
		out[name] = l
		if t.t.n != len(l) {
			out[name+" count"] = []string{fmt.Sprint(t.t.n, " counted, ", len(l), " held")}
		}
	}
	held := 0
	for _, n := range s.pi.texts.refs {
		held += int(n)
	}
	out["texts held"] = []string{fmt.Sprint(s.pi.texts.live(), " ", held)}
	for g := range s.pf.posted {
		out["posted"] = append(out["posted"], s.pi.syms.str(g))
	}
	slices.Sort(out["posted"])
	for g, t := range s.pf.byValue {
		var l []string
		t.blocks.scan(func(k pkey) bool { l = append(l, fmt.Sprint(k.ik, " ", idOf(k.slot))); return true })
		if t.odd != nil {
			t.odd.Scan(func(k vkey) bool { l = append(l, fmt.Sprint("odd ", k.ord, " ", idOf(k.slot))); return true })
		}
		out["value "+s.pi.syms.str(g)] = l
	}
	for g, gm := range s.pf.months {
		if !slices.IsSorted(gm.months) || len(gm.months) != len(gm.stats) || len(gm.months) == 0 {
			panic(fmt.Sprintf("month stats of %s: months %v, %d stats", s.pi.syms.str(g), gm.months, len(gm.stats)))
		}
		for j, m := range gm.months {
			st := &gm.stats[j]
			if st.count == 0 {
				panic(fmt.Sprintf("month %d of %s: no permits, kept", m, s.pi.syms.str(g)))
			}
			l := []string{fmt.Sprint(st.count, st.cents)}
			for i := range st.vals.len() {
				l = append(l, fmt.Sprint(st.vals.at(i)))
			}
			out[fmt.Sprintf("month %s %d", s.pi.syms.str(g), m)] = l
		}
	}
	return out
}

// oneByOne applies docs to s one at a time through put, then deletes,
// and counts the results as apply does: the reference the lanes tests
// compare a batch's lanes with.
func oneByOne[T any](s *side, docs []T, deletes []readmodel.Delete, put func(T) bool) readmodel.ApplyResult {
	var res readmodel.ApplyResult
	count := func(ok bool) {
		if ok {
			res.Applied++
		} else {
			res.Stale++
		}
	}
	for _, d := range docs {
		count(put(d))
	}
	for _, d := range deletes {
		ok, _ := s.delete(d)
		count(ok)
	}
	return res
}
