package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// StopBuilding abandons the second side an Import's Commit or a replay's
// end builds in the background (a shutdown's last snapshot needs only
// the readers' side): the build stops, reads and Export keep the whole
// state, and the next write builds the second side from the first, so
// every answer before and after it is Apply's (matchesApplied writes
// once and checks again). From then on no second side is built in the
// background: a replay ended later builds none.
func TestStopBuildingAbandonsTheSecondSide(t *testing.T) {
	defer memory.SetPostingMin(20)()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(31, 32))
	ps, props := permitsOnProperties(r, 600, 30, 3)
	batches := []readmodel.Batch{{Permits: ps[:300], Properties: props}, {Permits: ps[300:]}}
	replay := func(s *memory.Store) {
		t.Helper()
		require.True(t, s.BeginReplay())
		applyBase(t, s)
		for _, b := range batches {
			apply(t, s, b)
		}
		require.Equal(t, 1+len(batches), s.EndReplay())
	}

	for _, how := range []string{"import", "replay"} {
		t.Run(how, func(t *testing.T) {
			release := make(chan struct{})
			defer memory.HoldStandby(func() { <-release })()
			s := memory.New(memory.Params{})
			if how == "import" {
				im := s.NewImport()
				require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
				for _, b := range batches {
					require.NoError(t, im.Add(readmodel.Batch{Permits: slices.Clone(b.Permits), Properties: slices.Clone(b.Properties)}))
				}
				require.NoError(t, im.Commit())
			} else {
				replay(s)
			}
			require.True(t, s.SecondSideBuilding(), "held before it builds")
			require.True(t, s.StopBuilding(), "a build was running")
			close(release)
			require.True(t, s.WaitSecondSide(), "the build stopped and was abandoned")
			matchesApplied(t, r, batches, props, s, how+": the first side, the second abandoned")
		})
	}

	// Stopped at any point of the build (between batches, in the geo
	// builders, in the deferred indexes, after it): the state is whole.
	t.Run("stopped at any point", func(t *testing.T) {
		defer memory.SetParallelGeos(2)()
		big, bigProps := permitsOnProperties(r, 2000, 100, 2)
		var bs []readmodel.Batch
		for lo := 0; lo < len(big); lo += 250 {
			bs = append(bs, readmodel.Batch{Permits: big[lo : lo+250]})
		}
		bs[0].Properties = bigProps
		abandoned := 0
		for round := range 8 {
			s := memory.New(memory.Params{})
			im := s.NewImport()
			require.NoError(t, newStore(t).Export(ctx, 100, im.Add))
			for _, b := range bs {
				require.NoError(t, im.Add(readmodel.Batch{Permits: slices.Clone(b.Permits), Properties: slices.Clone(b.Properties)}))
			}
			require.NoError(t, im.Commit())
			time.Sleep(time.Duration(2*round) * time.Millisecond)
			s.StopBuilding()
			if s.WaitSecondSide() {
				abandoned++
			}
			if round%4 == 0 {
				matchesApplied(t, r, bs, bigProps, s, fmt.Sprintf("round %d", round))
				continue
			}
			want := newStore(t)
			for _, b := range bs {
				apply(t, want, b)
			}
			require.Equal(t, sortedExport(t, want), sortedExport(t, s), "round %d: first side", round)
			s.Settle()
			apply(t, want, readmodel.Batch{Permits: big[:50]})
			apply(t, s, readmodel.Batch{Permits: big[:50]})
			require.Equal(t, sortedExport(t, want), sortedExport(t, s), "round %d: second side", round)
		}
		require.Positive(t, abandoned)
	})

	t.Run("replay after StopBuilding", func(t *testing.T) {
		s := memory.New(memory.Params{})
		require.False(t, s.StopBuilding(), "no build")
		replay(s)
		require.False(t, s.SecondSideBuilding(), "nothing is built in the background")
		require.True(t, s.WaitSecondSide(), "abandoned from the start")
		matchesApplied(t, r, batches, props, s, "replay after StopBuilding")
	})
}
