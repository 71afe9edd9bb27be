package memory

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestLeanSideCompletedAsAWholeBuild: an Import's first side, lean at
// Commit, gets from buildLean (at settle) the postings, valuation orders
// and month stats the second side's whole build made, index for index,
// with Apply's batches during the Import (its journal) on both sides.
func TestLeanSideCompletedAsAWholeBuild(t *testing.T) {
	old := postingMin
	postingMin = 20
	t.Cleanup(func() { postingMin = old })
	rng := rand.New(rand.NewPCG(7, 8))
	geos := []string{"us-wa", "zip-a", "zip-b", "zip-small"}
	var ps []readmodel.Permit
	for i := range 400 {
		p := readmodel.Permit{PermitID: fmt.Sprintf("t:%03d", i), PermitNumber: fmt.Sprint(i), Source: "t", Version: 1,
			PermitType: []string{"Building", "Electrical", ""}[rng.IntN(3)],
			WorkType:   []string{"New", "Alteration"}[rng.IntN(2)],
			Status:     []string{"Issued", "Final"}[rng.IntN(2)],
			Contractor: []string{"", "Acme Builders", "Zed Co"}[rng.IntN(3)],
			IssueDate:  fmt.Sprintf("2024-%02d-%02d", 1+rng.IntN(6), 1+rng.IntN(28))}
		if rng.IntN(9) == 0 {
			p.IssueDate = ""
		}
		if rng.IntN(4) > 0 {
			v := math.Round(math.Exp(rng.Float64() * 14))
			p.Valuation = &v
		}
		for j, g := range geos {
			if j == 0 || (j == 3 && i%40 == 0) || (j < 3 && rng.IntN(2) == 0) {
				p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{GeoID: g, GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "m"})
			}
		}
		ps = append(ps, p)
	}
	journal := []readmodel.Batch{{Permits: []readmodel.Permit{ps[2], ps[5]}}, {Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: ps[9].PermitID, Version: 4}}}}
	journal[0].Permits[0].Version, journal[0].Permits[0].Status = 3, "Expired"
	journal[0].Permits[1].Version, journal[0].Permits[1].IssueDate = 3, "2023-11-30"

	// Without a journal the lean side keeps its build's lists; a permit
	// written (the journal's) drops them, and the sets are read instead.
	for _, withJournal := range []bool{false, true} {
		t.Run(fmt.Sprint("journal ", withJournal), func(t *testing.T) {
			release := make(chan struct{})
			holdStandby = func() { <-release }
			t.Cleanup(func() { holdStandby = nil })
			s := New(Params{})
			im := s.NewImport()
			require.NoError(t, im.Add(readmodel.Batch{Permits: ps}))
			if withJournal {
				for _, b := range journal {
					_, err := s.Apply(context.Background(), b)
					require.NoError(t, err)
				}
			}
			require.NoError(t, im.Commit())
			first := s.sides[s.active.Load()]
			require.True(t, first.lean)
			require.Empty(t, first.pf.months)
			require.Equal(t, !withJournal, first.leanLists != nil, "the build's lists kept")
			close(release)
			s.Settle()

			require.False(t, first.lean, "completed")
			require.Nil(t, first.leanLists)
			require.NotSame(t, first, s.sides[s.active.Load()], "the second side is the readers'")
			second := s.sides[s.active.Load()]
			want, got := permitIndexDump(second), permitIndexDump(first)
			require.NotEmpty(t, want["posted"])
			require.NotContains(t, want["posted"], "zip-small", "fewer than postingMin")
			require.Equal(t, want, got)
		})
	}
}
