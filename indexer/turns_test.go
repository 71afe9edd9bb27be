package indexer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/spareprocs/sparetest"
)

// While the Ps are raised the decode's workers each take a CPU turn
// (internal/spareprocs): with every turn held elsewhere a batch waits,
// whether decoded by one worker or fanned out; with one turn free it is
// handled. A dead letter fails the test (discardIndexer).
func TestDecodeTakesCPUTurns(t *testing.T) {
	ctx := context.Background()
	ix := discardIndexer(t)
	for _, n := range []int{10, 2000} { // one worker; fanned out
		msgs := permitMsgs(t, n)
		var err error
		giveBack := sparetest.Hold(t, 0)
		if !sparetest.Waits(t, giveBack, func() { err = ix.HandleBatch(ctx, msgs) }) {
			t.Fatalf("a batch of %d did not wait with every CPU turn held", n)
		}
		require.NoError(t, err)
		giveBack = sparetest.Hold(t, 1)
		sparetest.Finishes(t, func() { err = ix.HandleBatch(ctx, msgs) })
		giveBack()
		require.NoError(t, err)
	}
}
