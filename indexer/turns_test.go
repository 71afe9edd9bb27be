package indexer_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/spareprocs/sparetest"
)

// While the Ps are raised the decode's workers each take a CPU turn
// (internal/spareprocs): with every turn held elsewhere a batch waits,
// whether decoded by one worker or fanned out; with one turn free it is
// handled.
func TestDecodeTakesCPUTurns(t *testing.T) {
	raw, err := json.Marshal(permitEnv(t, nil))
	require.NoError(t, err)
	ctx := context.Background()
	var dead atomic.Int32 // counted off the test's goroutine: checked after
	ix, err := indexer.New(indexer.Params{Writer: discardWriter{}, Lookup: lookup98101(), DeadLetter: func(context.Context, indexer.Message, error) error {
		dead.Add(1)
		return nil
	}})
	require.NoError(t, err)
	require.NoError(t, ix.Settle(ctx))
	for _, n := range []int{10, 2000} { // one worker; fanned out
		msgs := make([]indexer.Message, n)
		for i := range msgs {
			msgs[i] = indexer.Message{Topic: "permitd.permits.v1", Offset: int64(i), Value: raw}
		}
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
	require.Zero(t, dead.Load(), "dead letters")
}
