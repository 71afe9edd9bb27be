package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestPlacesHoldWhenFinds checks placeAll's checks against find: for
// permits held and not held, in sets of one block and of many, every
// place near the found one and a few far from it are used exactly when
// they are find's, and placeAll's answer is find's either way.
func TestPlacesHoldWhenFinds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	slab := newPermitSlab()
	perm := tiedPermits(r, slab, 4000)
	for _, size := range []int{0, 1, 5, blockMax, 3000} {
		s := newBlockSet(slab)
		for _, c := range perm[:size] {
			s.set(c)
		}
		for range 400 {
			c := perm[r.IntN(len(perm))]
			bi, i := s.find(c)
			cands := [][2]int{{bi, i}, {bi, i - 1}, {bi, i + 1}, {bi - 1, i}, {bi + 1, i}, {bi + 1, 0}, {bi - 1, 0}, {-1, 0}, {bi, -1}, {s.nblocks(), 0}, {s.nblocks() + 1, 0}}
			if bi > 0 {
				cands = append(cands, [2]int{bi - 1, len(s.block(bi - 1))}, [2]int{bi - 1, len(s.block(bi-1)) - 1})
			}
			for range 3 {
				cands = append(cands, [2]int{r.IntN(s.nblocks() + 1), r.IntN(blockMax)})
			}
			for _, p := range cands {
				var l seekLog
				var pos [manyMax][2]int
				placeAll([]*blockSet{s}, c, [][2]int32{{int32(p[0]), int32(p[1])}}, &pos, &l)
				require.Equal(t, [2]int{bi, i}, pos[0], "set of %d, %s at %v", size, c.id, p)
				require.Equal(t, p == [2]int{bi, i}, l.used == 1, "set of %d, %s at %v used; find says %v", size, c.id, p, [2]int{bi, i})
			}
		}
	}
}

// TestWriteAllSeekLogs writes the same permits into three copies of many
// sets: one copy records its places, another reads them, a third reads
// them with a share spoiled (shifted, or out of range), and a reference
// copy is written one set at a time. All must hold the same keys in the
// same blocks; the reading copy must have used every place, the spoiled
// one must still be exact.
func TestWriteAllSeekLogs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 13))
	slab := newPermitSlab()
	perm := tiedPermits(r, slab, 3000)
	const nsets = manyMax + 5
	var one, rec, read, spoiled [nsets]*blockSet
	for j := range nsets {
		one[j], rec[j], read[j], spoiled[j] = newBlockSet(slab), newBlockSet(slab), newBlockSet(slab), newBlockSet(slab)
	}
	pick := func(from *[nsets]*blockSet, js []int) []*blockSet {
		var out []*blockSet
		for _, j := range js {
			out = append(out, from[j])
		}
		return out
	}
	var recLog, readLog, spoiledLog seekLog
	places := 0
	for op := range 30000 {
		c := perm[r.IntN(len(perm))]
		js := r.Perm(nsets)[:1+r.IntN(nsets)]
		add := r.IntN(3) > 0 // mostly sets, so sets grow past one block
		for _, j := range js {
			if add {
				one[j].set(c)
			} else {
				one[j].delete(c)
			}
		}
		recLog.reading, recLog.calls, recLog.places = false, recLog.calls[:0], recLog.places[:0]
		writeAll(pick(&rec, js), c, add, &recLog)
		readLog = seekLog{reading: true, calls: recLog.calls, places: slices.Clone(recLog.places)}
		writeAll(pick(&read, js), c, add, &readLog)
		require.Equal(t, len(js), readLog.used, "op %d: every recorded place holds on a copy", op)
		places += readLog.used
		bad := slices.Clone(recLog.places)
		for k := range bad {
			switch r.IntN(4) {
			case 0:
				bad[k][1]++
			case 1:
				bad[k][0] = int32(r.IntN(3)) - 1
			case 2:
				bad[k][1] = blockMax + 1
			}
		}
		spoiledLog = seekLog{reading: true, calls: recLog.calls, places: bad}
		writeAll(pick(&spoiled, js), c, add, &spoiledLog)
		if op%997 == 0 || op == 29999 {
			for j := range nsets {
				for name, s := range map[string]*blockSet{"recording": rec[j], "reading": read[j], "spoiled": spoiled[j]} {
					require.Equal(t, one[j].n, s.n, "op %d set %d (%s): keys", op, j, name)
					require.Equal(t, one[j].nblocks(), s.nblocks(), "op %d set %d (%s): blocks", op, j, name)
					for bi := range one[j].nblocks() {
						require.True(t, slices.Equal(one[j].block(bi), s.block(bi)) && one[j].last[bi] == s.last[bi], "op %d set %d (%s): block %d", op, j, name, bi)
					}
				}
			}
		}
	}
	require.Positive(t, places)
	// A log out of step (another call's count of sets) is read no further.
	l := seekLog{reading: true, calls: []int32{2, 3}, places: make([][2]int32, 5)}
	require.Nil(t, l.next(3, true))
	require.True(t, l.lost)
	require.Nil(t, l.next(2, true))
	l = seekLog{reading: true, calls: []int32{-2}, places: make([][2]int32, 2)}
	require.Nil(t, l.next(2, true), "a removal's places are not an insert's")
}

// TestSeekLogsKeepSidesExact applies batches of permits (enough for the
// lanes: revisions, moves between geos, ties on days and valuations,
// deletes) to a Store, so that each side reads the seek logs the other
// recorded, and checks after each step that the side readers now use
// holds the same indexes as a side written one permit at a time, and
// that places were read from the logs.
func TestSeekLogsKeepSidesExact(t *testing.T) {
	old := postingMin
	postingMin = 12
	t.Cleanup(func() { postingMin = old })
	rng := rand.New(rand.NewPCG(9, 10))
	st := New(Params{})
	ref := newSide(nil)
	versions := map[string]int64{}
	geos := []string{"us-wa", "zip-a", "zip-b", "city-x", "city-y", "jur-1"}
	types := []readmodel.GeoType{readmodel.GeoState, readmodel.GeoZip, readmodel.GeoZip, readmodel.GeoCity, readmodel.GeoCity, readmodel.GeoJurisdiction}
	newPermit := func(id string, version int64) readmodel.Permit {
		p := readmodel.Permit{PermitID: "t:" + id, PermitNumber: id, PermitType: []string{"Building", "Electrical", ""}[rng.IntN(3)],
			WorkType: []string{"New", "Alteration"}[rng.IntN(2)], Status: "Issued", Source: "t", Version: version}
		if rng.IntN(8) > 0 {
			p.IssueDate = fmt.Sprintf("2024-%02d-%02d", 1+rng.IntN(3), 1+rng.IntN(3))
		}
		if rng.IntN(5) > 0 {
			v := float64(rng.IntN(6)) * 1000
			p.Valuation = &v
		}
		for i, g := range geos {
			if i == 0 || rng.IntN(3) == 0 {
				p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{GeoID: g, GeoType: types[i], Confidence: 0.9, Method: "m"})
			}
		}
		return p
	}
	ctx := context.Background()
	for step := range 40 {
		var b readmodel.Batch
		for range laneMin + rng.IntN(150) {
			id := fmt.Sprintf("%04d", rng.IntN(1500))
			versions[id]++
			b.Permits = append(b.Permits, newPermit(id, versions[id]))
		}
		for range rng.IntN(10) {
			id := fmt.Sprintf("%04d", rng.IntN(1500))
			versions[id]++
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindPermit, ID: "t:" + id, Version: versions[id]})
		}
		_, err := st.Apply(ctx, b)
		require.NoError(t, err)
		oneByOne(ref, b.Permits, b.Deletes, ref.putPermit)
		require.Equal(t, permitIndexDump(ref), permitIndexDump(st.sides[st.active.Load()]), "step %d", step)
	}
	require.Positive(t, st.seekPlaces, "the sides read places from each other's logs")
}
