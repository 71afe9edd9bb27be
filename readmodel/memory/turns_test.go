package memory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/spareprocs/sparetest"
	"github.com/permitd/permitd/readmodel"
)

// While the Ps are raised a write's lanes each take a CPU turn
// (internal/spareprocs): with every turn held elsewhere a write waits,
// and with one turn free a write of both lanes (permits, and leads
// beside them) finishes, its main lane giving its turn back before it
// waits for the signal lane.
func TestWriteLanesTakeCPUTurns(t *testing.T) {
	batch := func(round, n int) readmodel.Batch {
		var b readmodel.Batch
		for i := range n {
			b.Permits = append(b.Permits, permit(fmt.Sprintf("%d-%03d", round, i), "2024-03-01", zipA, 1))
			b.Leads = append(b.Leads, testLead(round*1000+i, 1, 0))
		}
		return b
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		n    int // documents of each lane: one lane under 64, two from 64
	}{{"one lane", 10}, {"two lanes", 100}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			giveBack := sparetest.Hold(t, 0)
			var res readmodel.ApplyResult
			var err error
			if !sparetest.Waits(t, giveBack, func() { res, err = s.Apply(ctx, batch(1, tc.n)) }) {
				t.Fatal("the write did not wait with every CPU turn held")
			}
			require.NoError(t, err)
			require.Equal(t, 2*tc.n, res.Applied)

			giveBack = sparetest.Hold(t, 1)
			sparetest.Finishes(t, func() { res, err = s.Apply(ctx, batch(2, tc.n)) })
			giveBack()
			require.NoError(t, err)
			require.Equal(t, 2*tc.n, res.Applied)
		})
	}
}
