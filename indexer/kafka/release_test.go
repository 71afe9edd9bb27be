package kafka_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
)

// TestHandledMessagesAreReleased: once a batch is handled and
// committed, the consumer keeps no reference to its messages' bytes:
// with the consumer still running on a quiet partition, the collector
// frees them. (The partition loop used to keep its last batch until the
// next one overwrote it.)
func TestHandledMessagesAreReleased(t *testing.T) {
	b := newBroker(t, 1)
	b.publish(locations(t, "r", 50, 1)...)
	var handled, freed atomic.Int64
	h := func(_ context.Context, msgs []indexer.Message) error {
		for _, m := range msgs {
			if len(m.Value) > 0 {
				handled.Add(1)
				runtime.AddCleanup(&m.Value[0], func(*atomic.Int64) { freed.Add(1) }, &freed)
			}
		}
		return nil
	}
	c := start(t, fastParams(b, "", h))
	eventually(t, 20*time.Second, "caught up", c.CaughtUp)
	require.GreaterOrEqual(t, handled.Load(), int64(50))
	eventually(t, 10*time.Second, "every handled message's bytes freed", func() bool {
		runtime.GC()
		return freed.Load() == handled.Load()
	})
}
