package memory

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestKeysWithoutTreesUntilBuilt: a key a replay (or a live write) makes
// holds its leads as pending slots and has no trees until it is built;
// its first reader builds them with every lead in both orders, and a
// key made in an anchor whose keys are built at once has its trees from
// the start.
func TestKeysWithoutTreesUntilBuilt(t *testing.T) {
	for _, replay := range []bool{true, false} {
		t.Run(fmt.Sprint("replay=", replay), func(t *testing.T) {
			s := newSide(nil)
			if replay {
				s.signals.leads.deferLeadTrees()
			}
			for i := range 40 {
				conf := float64(i%10) / 10
				s.putLead(readmodel.Lead{LeadID: fmt.Sprintf("lead_%02d", i), SignalKey: []string{"roof", "solar"}[i%2], Version: 1,
					EventDateUsed: fmt.Sprintf("2024-03-%02d", 1+i%28), Confidence: &conf, GeoIDs: []string{"us-wa", "zip-98101"}})
			}
			x := s.signals.leads
			require.Len(t, x.anchors, 2)
			for g, a := range x.anchors {
				require.Len(t, a.keys, 2, g)
				for _, k := range a.keys {
					require.False(t, k.built.Load(), "%s %s", g, k.key)
					require.Nil(t, k.byDate, "%s %s: trees before it is built", g, k.key)
					require.Nil(t, k.byConf, "%s %s", g, k.key)
					require.Len(t, k.pend, 20)
				}
			}
			read := x.anchors["zip-98101"].selected([]string{"roof"})
			require.Len(t, read, 1)
			k := read[0]
			require.True(t, k.built.Load())
			require.Equal(t, 20, k.byDate.Len())
			require.Equal(t, 20, k.byConf.Len())
			require.Empty(t, k.pend)
			require.Nil(t, x.anchors["zip-98101"].get("solar").byDate, "a key nobody read stays without trees")

			x.anchors["zip-98101"].eager = true // its keys built at once from now on
			s.putLead(readmodel.Lead{LeadID: "lead_new", SignalKey: "gutters", Version: 1, EventDateUsed: "2024-04-01", GeoIDs: []string{"zip-98101"}})
			k = x.anchors["zip-98101"].get("gutters")
			require.True(t, k.built.Load())
			require.Equal(t, 1, k.byDate.Len())
			require.Equal(t, 1, k.byConf.Len())
		})
	}
}
