package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/spareprocs/sparetest"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// While the Ps are raised, taking a fetch's answer apart takes a CPU
// turn, and so do a partition's parse ahead, the decode and the write
// (internal/spareprocs): with every turn held elsewhere no message is
// handled; given back, every one is. Without a Parser only the fetch
// takes a turn.
func TestConsumerTakesCPUTurns(t *testing.T) {
	for _, parsed := range []bool{false, true} {
		t.Run(fmt.Sprintf("parsed ahead %v", parsed), func(t *testing.T) {
			b := newBroker(t, 2)
			for i := range 20 {
				b.publish(location(t, fmt.Sprintf("city:turn-%d", i), 1))
			}
			var n atomic.Int64
			p := fastParams(b, "", func(_ context.Context, msgs []indexer.Message) error {
				n.Add(int64(len(msgs)))
				return nil
			})
			handled := n.Load
			if parsed {
				s := memory.New(memory.Params{})
				p = parserParams(b, "", newIndexer(t, s, nil))
				handled = func() int64 {
					c, err := s.Counts(context.Background())
					require.NoError(t, err)
					return c[readmodel.KindLocation]
				}
			}
			p.Topics = []string{locTopic}
			giveBack := sparetest.Hold(t, 0)
			start(t, p)
			time.Sleep(300 * time.Millisecond)
			if got := handled(); got != 0 {
				t.Fatalf("%d messages handled with every CPU turn held", got)
			}
			giveBack()
			eventually(t, 10*time.Second, "every message handled", func() bool { return handled() == 20 })
		})
	}
}
