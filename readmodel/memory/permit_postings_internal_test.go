package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestPostingsHoldExactlyTheirValue writes permits whose field values
// fold together in some spellings ("Building", " BUILDING") and not in
// others, into geos past postingMin, and checks every posting against
// the permits: a posting of (geo, field, value) holds exactly the geo's
// permits whose folded value (or valuation bucket) is that value. A
// posting is only a candidate set, filtered again by match, so a posting
// too wide would pass every page test while it reads more than it
// should. It runs with every posting kept, and with the values of more
// than a quarter of a geo's permits dense (permit_dense.go), whose
// counts must be those of the permits (permitIndexDump).
func TestPostingsHoldExactlyTheirValue(t *testing.T) {
	for _, share := range []int{0, denseShare} {
		t.Run(fmt.Sprint("dense share ", share), func(t *testing.T) { testPostingsHoldExactlyTheirValue(t, share) })
	}
}

func testPostingsHoldExactlyTheirValue(t *testing.T, share int) {
	t.Cleanup(SetPostingMin(20))
	t.Cleanup(SetDenseShare(share))
	rng := rand.New(rand.NewPCG(5, 6))
	s := newSide(nil)
	geos := []string{"us-wa", "zip-a", "zip-b"}
	var b readmodel.Batch
	for i := range 300 {
		p := readmodel.Permit{PermitID: fmt.Sprintf("t:%03d", i), PermitNumber: fmt.Sprint(i), Source: "t", Version: 1,
			PermitType: []string{"Building", " BUILDING", "Electrical", "electrical ", ""}[rng.IntN(5)],
			WorkType:   []string{"New", "NEW", "Alteration"}[rng.IntN(3)],
			Status:     []string{"Issued", "Final", "FINAL"}[rng.IntN(3)],
			Contractor: []string{"", "Acme Builders", "ACME builders", "Zed Co"}[rng.IntN(4)],
			IssueDate:  fmt.Sprintf("2024-01-%02d", 1+rng.IntN(28))}
		if rng.IntN(4) > 0 {
			v := math.Round(math.Exp(rng.Float64() * 14))
			p.Valuation = &v
		}
		for _, g := range geos {
			if rng.IntN(2) == 0 {
				p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{GeoID: g, GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "m"})
			}
		}
		b.Permits = append(b.Permits, p)
	}
	s.apply(&b)
	want := map[string][]string{} // "posting <geo> <field> <value>" -> permit ids, as permitIndexDump names them
	for _, p := range b.Permits {
		for _, l := range p.GeoLinks {
			if geo, ok := s.pi.syms.lookup(l.GeoID); !ok || !s.pf.posted[geo] {
				continue
			}
			for f, v := range map[filterField]string{ffType: readmodel.FoldValue(p.PermitType), ffWork: readmodel.FoldValue(p.WorkType), ffStatus: readmodel.FoldValue(p.Status), ffContractor: readmodel.ContractorKey(p.Contractor)} {
				if v != "" {
					k := fmt.Sprintf("posting %s %d %s", l.GeoID, f, v)
					want[k] = append(want[k], p.PermitID)
				}
			}
			if p.Valuation != nil {
				k := fmt.Sprintf("posting %s %d bucket %d", l.GeoID, ffValue, valueBucket(*p.Valuation))
				want[k] = append(want[k], p.PermitID)
			}
		}
	}
	got := map[string][]string{}
	for k, ids := range permitIndexDump(s) {
		if strings.HasPrefix(k, "posting ") {
			got[k] = slices.Sorted(slices.Values(ids))
		}
	}
	for k := range want {
		slices.Sort(want[k])
	}
	require.Len(t, s.pf.posted, len(geos), "every geo is posted")
	require.Equal(t, want, got)
	dense := 0
	for _, p := range s.pf.postings.all() {
		if p.t.dense {
			dense++
		}
	}
	if share == 0 {
		require.Zero(t, dense)
	} else {
		require.Positive(t, dense)
		require.Less(t, dense, s.pf.postings.len(), "kept ones too")
	}
}
