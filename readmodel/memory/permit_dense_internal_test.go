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

// checkDensePostings checks a side's filter postings against its permit
// sets (permit_dense.go): every value held by permits of a posted geo
// has a posting; a kept one holds exactly those permits, a dense one
// counts them and is on its geo's list of dense postings, which lists
// nothing else; a dense posting's value holds at least a sixteenth of
// its geo (an eighth at its last check, the geo grown by at most about a
// quarter since). It returns the number of dense postings.
func checkDensePostings(t *testing.T, s *side) int {
	t.Helper()
	want := map[fkey][]pkey{}
	var kvs [5]fieldValue
	for geo := range s.pf.posted {
		g, ok := s.pi.geoIdx[geo]
		require.True(t, ok, "a posted geo has permits")
		g.t.scan(func(k pkey) bool {
			for _, x := range kvs[:s.filterKeys(g.t.permit(k), &kvs)] {
				fk := fkey{geo, x.f, x.v}
				want[fk] = append(want[fk], k)
			}
			return true
		})
	}
	listed := map[fkey]bool{}
	for geo, l := range s.pf.dense {
		require.NotEmpty(t, l, "no empty list")
		for _, k := range l {
			require.Equal(t, geo, k.geo)
			require.False(t, listed[k], "listed once")
			listed[k] = true
		}
	}
	dense := 0
	for k, p := range s.pf.postings.all() {
		keys, ok := want[k]
		require.True(t, ok, "a posting of a value no permit of a posted geo holds: %+v", k)
		require.Equal(t, len(keys), p.t.len(), "count of %+v", k)
		require.Equal(t, p.t.dense, listed[k], "listed exactly when dense: %+v", k)
		if p.t.dense {
			dense++
			require.GreaterOrEqual(t, p.t.len()*2*sparseShare, s.pi.geoIdx[k.geo].size(), "a dense posting's share: %+v", k)
			continue
		}
		var got []pkey
		p.t.scan(func(x pkey) bool { got = append(got, x); return true })
		require.Equal(t, keys, got, "the keys of %+v", k)
	}
	for k := range want {
		_, ok := s.pf.postings.get(k)
		require.True(t, ok, "a value held in a posted geo has a posting: %+v", k)
	}
	return dense
}

// TestDensePostings moves a value's share of its geo across the
// thresholds: a posting is built dense, turns kept when the geo grows
// with other values, dense again as they leave and the value grows, and
// goes with its last permit; the postings of both sides of the store
// are checked throughout, and pages filtered on each status read the
// same permits on the readers' side.
func TestDensePostings(t *testing.T) {
	t.Cleanup(SetPostingMin(16))
	st := New(Params{})
	ctx := context.Background()
	n := 0
	permit := func(status string, version int64) readmodel.Permit { // a new id for version 1
		if version == 1 {
			n++
		}
		return readmodel.Permit{PermitID: fmt.Sprintf("t:%04d", n), PermitNumber: fmt.Sprint(n), Source: "t", Version: version,
			PermitType: "Building", Status: status, IssueDate: fmt.Sprintf("2024-03-%02d", 1+n%28),
			GeoLinks: []readmodel.GeoLink{{GeoID: "zip-a", GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "m"},
				{GeoID: "zip-a", GeoType: readmodel.GeoZip, Confidence: 0.8, Method: "m2"}}} // linked twice: counted once
	}
	held := map[string]string{} // permit id -> status
	apply := func(b readmodel.Batch) {
		t.Helper()
		_, err := st.Apply(ctx, b)
		require.NoError(t, err)
		for _, p := range b.Permits {
			held[p.PermitID] = p.Status
		}
		for _, d := range b.Deletes {
			delete(held, d.ID)
		}
	}
	// completedDense checks both sides' postings, and the pages of the
	// readers' side filtered on each status, and reports whether
	// "completed" is dense in zip-a on the readers' side (the other has
	// not applied the last batch yet).
	completedDense := func() bool {
		t.Helper()
		for _, s := range st.sides {
			checkDensePostings(t, s)
		}
		s := st.sides[st.active.Load()]
		for _, status := range []string{"Completed", "Issued", "Expired"} {
			var want, got []string
			for id, s := range held {
				if s == status {
					want = append(want, id)
				}
			}
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("zip-a"), Desc: true, Limit: 100,
				Filter: readmodel.PermitFilter{Statuses: []string{readmodel.FoldValue(status)}}}
			for {
				page, err := s.SearchPermits(ctx, q)
				require.NoError(t, err)
				for _, h := range page.Permits {
					got = append(got, h.Permit.PermitID)
				}
				if page.Next == nil {
					break
				}
				q.After = page.Next
			}
			require.ElementsMatch(t, want, got, status)
		}
		geo, _ := s.pi.syms.lookup("zip-a")
		p, ok := s.pf.postings.get(fkey{geo, ffStatus, s.pf.vals["completed"]})
		return ok && p.t.dense
	}
	apply(readmodel.Batch{Locations: []readmodel.Location{{GeoID: "zip-a", GeoType: readmodel.GeoZip, Name: "zip-a", Version: 1}}})
	var b readmodel.Batch
	for i := range 40 {
		b.Permits = append(b.Permits, permit([]string{"Completed", "Completed", "Completed", "Issued"}[i%4], 1))
	}
	apply(b)
	require.True(t, completedDense(), "30 of 40: built dense")

	var issued []readmodel.Permit
	for range 300 { // a batch of lanes (laneMin), then one by one
		issued = append(issued, permit("Issued", 1))
	}
	apply(readmodel.Batch{Permits: issued[:200]})
	for _, p := range issued[200:] {
		apply(readmodel.Batch{Permits: []readmodel.Permit{p}})
	}
	require.False(t, completedDense(), "30 of 340: kept again")

	var dels readmodel.Batch
	for _, p := range issued {
		dels.Deletes = append(dels.Deletes, readmodel.Delete{Kind: readmodel.KindPermit, ID: p.PermitID, Version: 2})
	}
	apply(dels)
	var more readmodel.Batch
	for range 100 {
		more.Permits = append(more.Permits, permit("Completed", 1))
	}
	apply(more)
	require.True(t, completedDense(), "130 of 140: dense again")

	var revised readmodel.Batch // the value leaves by revisions
	for id, s := range held {
		if s == "Completed" {
			p := permit("Expired", 2)
			p.PermitID = id
			revised.Permits = append(revised.Permits, p)
		}
	}
	apply(revised)
	require.False(t, completedDense(), "none left")
	s := st.sides[st.active.Load()]
	geo, _ := s.pi.syms.lookup("zip-a")
	_, ok := s.pf.postings.get(fkey{geo, ffStatus, s.pf.vals["completed"]})
	require.False(t, ok, "its posting went with its last permit")
}

// TestDensePostingsUnderRandomWritesInLanes applies random batches
// (permit lanes and one by one, revisions that move permits between
// geos and values, deletes; leads beside, in the signal families' lane:
// apply.go) and checks every posting of both sides after each: counts
// exact, kept postings exact, a posting for every value held. make test
// runs it under -race too.
func TestDensePostingsUnderRandomWritesInLanes(t *testing.T) {
	t.Cleanup(SetPostingMin(16))
	st := New(Params{})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	geos := []string{"us-wa", "zip-a", "zip-b", "city-x"}
	versions := map[string]int64{}
	// Skewed values whose shares move as the batches run: the first
	// status's weight changes per round.
	statuses := []string{"Completed", "Issued", "Expired", "In Review"}
	dense := 0
	for round := range 60 {
		skew := rng.IntN(12)
		var b readmodel.Batch
		size := []int{1, 5, 80, 150}[rng.IntN(4)]
		for range size {
			id := fmt.Sprintf("t:%03d", rng.IntN(400))
			versions[id]++
			status := statuses[0]
			if rng.IntN(12) >= skew {
				status = statuses[1+rng.IntN(3)]
			}
			p := readmodel.Permit{PermitID: id, PermitNumber: id[2:], Source: "t", Version: versions[id], Status: status,
				PermitType: []string{"Building", "Electrical", "Plumbing"}[rng.IntN(3)],
				WorkType:   []string{"New", "Alteration"}[rng.IntN(2)],
				IssueDate:  fmt.Sprintf("2024-%02d-%02d", 1+rng.IntN(3), 1+rng.IntN(28))}
			if rng.IntN(3) > 0 {
				v := float64(1 + rng.IntN(100000))
				p.Valuation = &v
			}
			for _, g := range geos {
				if rng.IntN(3) > 0 {
					p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{GeoID: g, GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "m"})
				}
			}
			b.Permits = append(b.Permits, p)
		}
		if size >= 80 { // as many leads: the two families' lanes at once
			for i := range size {
				b.Leads = append(b.Leads, readmodel.Lead{LeadID: fmt.Sprintf("l:%d:%d", round, i), SignalKey: "roof", Version: 1,
					EventDateUsed: "2024-02-03", GeoIDs: []string{"us-wa"}, Location: readmodel.LeadLocation{CityNorm: "c1", ZipcodeNorm: "98101"}})
			}
		}
		for range rng.IntN(20) {
			id := fmt.Sprintf("t:%03d", rng.IntN(400))
			if _, ok := versions[id]; ok && !slices.ContainsFunc(b.Permits, func(p readmodel.Permit) bool { return p.PermitID == id }) {
				versions[id]++
				b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindPermit, ID: id, Version: versions[id]})
			}
		}
		_, err := st.Apply(ctx, b)
		require.NoError(t, err)
		for _, s := range st.sides {
			dense += checkDensePostings(t, s)
		}
	}
	require.Positive(t, dense, "dense postings were made")
}
