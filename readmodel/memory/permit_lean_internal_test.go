package memory

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestLeanSideCompletedAsAWholeBuild: an Import's first side, lean at
// Commit, and a replay's side, lean at EndReplay, get from buildLean (at
// settle) the postings, valuation orders, month stats, text and cell
// indexes the second side's whole build made, index for index, with
// Apply's batches during the Import (its journal), or newer versions in
// the replay, on both sides.
func TestLeanSideCompletedAsAWholeBuild(t *testing.T) {
	old, oldGroup := postingMin, groupMin
	postingMin, groupMin = 20, 10 // descriptions of 10 permits or more are grouped
	t.Cleanup(func() { postingMin, groupMin = old, oldGroup })
	rng := rand.New(rand.NewPCG(7, 8))
	geos := []string{"us-wa", "zip-a", "zip-b", "zip-small"}
	var ps []readmodel.Permit
	for i := range 400 {
		p := readmodel.Permit{PermitID: fmt.Sprintf("t:%03d", i), PermitNumber: fmt.Sprint(i), Source: "t", Version: 1,
			PermitType:     []string{"Building", "Electrical", ""}[rng.IntN(3)],
			WorkType:       []string{"New", "Alteration"}[rng.IntN(2)],
			Status:         []string{"Issued", "Final"}[rng.IntN(2)],
			Contractor:     []string{"", "Acme Builders", "Zed Co"}[rng.IntN(3)],
			RawDescription: []string{"New single family residence", "Replace roof", "Kitchen remodel and new roof", ""}[rng.IntN(4)] + fmt.Sprint(" lot ", rng.IntN(3)),
			IssueDate:      fmt.Sprintf("2024-%02d-%02d", 1+rng.IntN(6), 1+rng.IntN(28))}
		if rng.IntN(9) == 0 {
			p.IssueDate = ""
		}
		if rng.IntN(4) > 0 {
			v := math.Round(math.Exp(rng.Float64() * 14))
			p.Valuation = &v
		}
		if rng.IntN(5) > 0 {
			lat, lon := 47.5+rng.Float64()*0.3, -122.5+rng.Float64()*0.3
			p.Lat, p.Lon = &lat, &lon
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
	// So does a replay's side; newer versions in it end its geo
	// deferral early (a set is written), and drop the lists as well.
	for _, tc := range []struct {
		name                string
		replay, withJournal bool
	}{{"import", false, false}, {"import, journal", false, true}, {"replay", true, false}, {"replay, newer versions", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			withJournal := tc.withJournal
			release := make(chan struct{})
			holdStandby = func() { <-release }
			t.Cleanup(func() { holdStandby = nil })
			s := New(Params{})
			var end func() // Commit, or EndReplay
			if tc.replay {
				require.True(t, s.BeginReplay())
				for lo := 0; lo < len(ps); lo += 150 {
					_, err := s.Apply(context.Background(), readmodel.Batch{Permits: ps[lo:min(lo+150, len(ps))]})
					require.NoError(t, err)
				}
				end = func() { require.Positive(t, s.EndReplay()) }
			} else {
				im := s.NewImport()
				require.NoError(t, im.Add(readmodel.Batch{Permits: ps}))
				end = func() { require.NoError(t, im.Commit()) }
			}
			if withJournal {
				for _, b := range journal {
					_, err := s.Apply(context.Background(), b)
					require.NoError(t, err)
				}
			}
			end()
			first := s.sides[s.active.Load()]
			require.True(t, first.lean)
			require.Empty(t, first.pf.months)
			require.Empty(t, first.pf.text.postings, "no text index")
			require.Empty(t, first.pf.text.numbers)
			require.Empty(t, first.pf.cells, "no cell index")
			require.Equal(t, !withJournal, first.leanLists != nil, "the build's lists kept")
			close(release)
			s.Settle()

			require.False(t, first.lean, "completed")
			require.Nil(t, first.leanLists)
			require.NotSame(t, first, s.sides[s.active.Load()], "the second side is the readers'")
			second := s.sides[s.active.Load()]
			want, got := permitIndexDump(second), permitIndexDump(first)
			maps.Copy(want, textCellDump(second))
			maps.Copy(got, textCellDump(first))
			require.NotEmpty(t, want["posted"])
			kinds := map[string]bool{}
			for k := range want {
				kinds[strings.Fields(k)[0]] = true
			}
			for _, k := range []string{"word", "group", "number", "cell"} {
				require.True(t, kinds[k], "the whole side has %s indexes", k)
			}
			require.NotContains(t, want["posted"], "zip-small", "fewer than postingMin")
			require.Equal(t, want, got)
		})
	}
}

// textCellDump is the text and cell indexes of s by permit id: each
// word's posting (its own permits, and its groups' by description), each
// description group's, each permit number's and each cell's permits.
func textCellDump(s *side) map[string][]string {
	out := map[string][]string{}
	ids := func(set iterable) []string {
		var l []string
		set.ascend(&cpermit{ik: minIK}, func(c *cpermit) bool { l = append(l, c.id); return true })
		return l
	}
	slots := func(keys slotKeys) []string {
		var l []string
		for _, k := range keys {
			l = append(l, s.pi.slab.at(k.slot).id)
		}
		return l
	}
	for w, p := range s.pf.text.postings {
		out["word "+w] = ids(p.ownSet(s.pi.slab))
		for _, g := range p.groups {
			out["word "+w] = append(out["word "+w], "group "+strings.Join(g.words, " "))
		}
		slices.Sort(out["word "+w])
	}
	for _, g := range s.pf.text.groups {
		out["group "+strings.Join(g.words, " ")] = ids(g.set.ownSet(s.pi.slab))
	}
	for n, keys := range s.pf.text.numbers {
		out["number "+n] = slots(keys)
	}
	for k, keys := range s.pf.cells {
		out[fmt.Sprint("cell ", k)] = slots(keys)
	}
	return out
}
