package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel/memory"
)

func owned(c *running) int { return len(c.Partitions()) }

// Two indexers in one group (a shared store stands in for a durable
// backend) split the partitions, go through a rebalance when one joins and
// another when one leaves, and together apply every event exactly to the
// expected state, with every offset committed.
func TestGroupRebalanceLosesNothing(t *testing.T) {
	const group = "rebalance"
	b := newBroker(t, 6)
	store := memory.New(memory.Params{})
	total := 6 + 3 // locations + permits partitions

	first := locations(t, "a", 200, 2)
	b.publish(first...)
	ca := start(t, parserParams(b, group, newIndexer(t, store, nil)))
	eventually(t, 20*time.Second, "first member owns every partition", func() bool { return owned(ca) == total })
	eventually(t, 20*time.Second, "first batch applied", func() bool { return stateOf(t, store).equal(expected(t, first...)) })

	cb := start(t, parserParams(b, group, newIndexer(t, store, nil)))
	eventually(t, 20*time.Second, "partitions split between both members", func() bool {
		na, nb := owned(ca), owned(cb)
		return na > 0 && nb > 0 && na+nb == total
	})
	second := locations(t, "b", 200, 2)
	b.publish(second...)
	all := append(first, second...)
	eventually(t, 20*time.Second, "second batch applied by both", func() bool { return stateOf(t, store).equal(expected(t, all...)) })
	require.True(t, cb.CaughtUp())

	ca.stop(t)
	eventually(t, 20*time.Second, "second member takes every partition", func() bool { return owned(cb) == total })
	third := append(locations(t, "c", 100, 1), location(t, "a00001", 7), deleted(t, events.LocationDeleted, "b00002", 3))
	b.publish(third...)
	all = append(all, third...)
	eventually(t, 20*time.Second, "third batch applied", func() bool { return stateOf(t, store).equal(expected(t, all...)) })
	require.Equal(t, expected(t, all...), stateOf(t, store))
	eventually(t, 10*time.Second, "every offset committed", func() bool {
		return equalOffsets(b.committed(group, locTopic), b.highWatermarks(locTopic))
	})
}

func equalOffsets(committed, hwm map[int]int64) bool {
	for p, h := range hwm {
		if h > 0 && committed[p] != h {
			return false
		}
	}
	return true
}

// A member that applies a batch and dies before committing it leaves the
// batch uncommitted; its successor reads it again and, the projection
// being idempotent, the read model ends exactly at the expected state.
func TestCrashBetweenApplyAndCommit(t *testing.T) {
	const group = "crash"
	b := newBroker(t, 4)
	var envs []events.Envelope // oldest first: the end state needs the last events
	for v := int64(1); v <= 3; v++ {
		for i := range 400 {
			envs = append(envs, location(t, fmt.Sprintf("k%05d", i), v))
		}
	}
	b.publish(envs...)
	want := expected(t, envs...)
	store := memory.New(memory.Params{}) // stands in for a durable backend

	// The first process applies three batches fine, then applies the next
	// one and "crashes": every later call applies and fails, so nothing
	// after the third batch is committed.
	ix1 := newIndexer(t, store, nil)
	var calls atomic.Int64
	crashed := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	failedFrom := map[int]int64{} // partition -> first offset handed to a failed call
	p := fastParams(b, group, func(ctx context.Context, msgs []indexer.Message) error {
		err := ix1.HandleBatch(ctx, msgs)
		if calls.Add(1) > 3 {
			mu.Lock()
			if o, ok := failedFrom[msgs[0].Partition]; !ok || msgs[0].Offset < o {
				failedFrom[msgs[0].Partition] = msgs[0].Offset
			}
			mu.Unlock()
			once.Do(func() { close(crashed) })
			return errInjected
		}
		return err
	})
	c1 := start(t, p)
	<-crashed
	c1.stop(t)

	applied := stateOf(t, store)
	require.NotEqual(t, want, applied, "the crash came before the end")
	committed := b.committed(group, locTopic)
	hwm := b.highWatermarks(locTopic)
	require.False(t, equalOffsets(committed, hwm), "the crashed batch is not committed")
	mu.Lock()
	require.NotEmpty(t, failedFrom)
	for part, from := range failedFrom {
		require.LessOrEqual(t, committed[part], from, "partition %d: nothing at or after a failed batch is committed", part)
	}
	mu.Unlock()
	var behind int64
	for part, h := range hwm {
		behind += h - max(0, committed[part])
	}
	require.Greater(t, behind, int64(0))

	ix2 := newIndexer(t, store, nil)
	c2 := start(t, parserParams(b, group, ix2))
	eventually(t, 20*time.Second, "restart caught up", c2.CaughtUp)
	require.Equal(t, want, stateOf(t, store), "exact state after crash and restart")
	require.Greater(t, ix2.Progress().Stale, int64(0), "the batch applied before the crash was delivered again and found stale")
	eventually(t, 10*time.Second, "every offset committed", func() bool {
		return equalOffsets(b.committed(group, locTopic), b.highWatermarks(locTopic))
	})
}

// On shutdown the consumer stops fetching, finishes the batch in hand and
// commits it before leaving.
func TestShutdownFinishesBatchAndCommits(t *testing.T) {
	const group = "shutdown"
	b := newBroker(t, 1)
	envs := locations(t, "s", 50, 1)
	b.publish(envs...)
	store := memory.New(memory.Params{})
	ix := newIndexer(t, store, nil)
	entered := make(chan int, 1)
	release := make(chan struct{})
	var calls atomic.Int64
	p := fastParams(b, group, func(ctx context.Context, msgs []indexer.Message) error {
		if calls.Add(1) == 1 {
			entered <- len(msgs)
			<-release
		}
		return ix.HandleBatch(ctx, msgs)
	})
	p.Topics = []string{locTopic}
	p.BatchSize = 1000
	c := start(t, p)
	n := <-entered
	c.cancel() // shutdown begins while the batch is in hand
	time.Sleep(50 * time.Millisecond)
	close(release)
	c.stop(t)
	require.Equal(t, int64(1), calls.Load(), "no batch after shutdown began")
	require.Equal(t, map[int]int64{0: int64(n)}, b.committed(group, locTopic), "the batch in hand was committed")
}

// The memory backend loses its state on restart: a new process replays
// every partition from the earliest offset into its empty store, is not
// caught up (so not ready) until it reaches the start watermarks, and then
// holds exactly what the first process held.
func TestMemoryRestartReplaysFromEarliest(t *testing.T) {
	b := newBroker(t, 4)
	envs := locations(t, "m", 300, 2)
	b.publish(envs...)
	want := expected(t, envs...)

	s1 := memory.New(memory.Params{})
	c1 := start(t, parserParams(b, "", newIndexer(t, s1, nil)))
	eventually(t, 20*time.Second, "first process caught up", c1.CaughtUp)
	require.Equal(t, want, stateOf(t, s1))
	c1.stop(t)

	s2 := memory.New(memory.Params{})
	ix2 := newIndexer(t, s2, nil)
	gate := make(chan struct{})
	c2 := start(t, fastParams(b, "", func(ctx context.Context, msgs []indexer.Message) error {
		<-gate
		return ix2.HandleBatch(ctx, msgs)
	}))
	eventually(t, 10*time.Second, "partitions known", func() bool { return c2.Lag() > 0 })
	require.False(t, c2.CaughtUp(), "not caught up before replaying")
	require.Equal(t, int64(len(envs)), c2.Lag(), "the whole log is behind")
	close(gate)
	eventually(t, 20*time.Second, "restarted process caught up", c2.CaughtUp)
	require.Equal(t, want, stateOf(t, s2))
	require.Zero(t, c2.Lag())
}

// Params.Assigned gets the member's partitions before any of them is
// consumed, again after every rebalance, and is retried when it fails.
func TestAssignedBeforeConsuming(t *testing.T) {
	b := newBroker(t, 2)
	total := 2 + 3 // locations + permits partitions
	b.publish(locations(t, "a", 50, 1)...)
	var mu sync.Mutex
	var calls []map[string][]int
	ready := map[string]bool{}
	failures := 1
	p := fastParams(b, "assigned", func(_ context.Context, msgs []indexer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if m := msgs[0]; !ready[fmt.Sprint(m.Topic, "/", m.Partition)] {
			t.Errorf("a batch of %s/%d before Assigned named the partition", m.Topic, m.Partition)
		}
		return nil
	})
	p.Assigned = func(_ context.Context, owned map[string][]int) error {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return errors.New("read model unavailable")
		}
		calls = append(calls, owned)
		clear(ready)
		for topic, ps := range owned {
			for _, id := range ps {
				ready[fmt.Sprint(topic, "/", id)] = true
			}
		}
		return nil
	}
	c := start(t, p)
	eventually(t, 20*time.Second, "caught up", c.CaughtUp)
	mu.Lock()
	require.Len(t, calls, 1, "one assignment, its failure retried")
	require.Len(t, calls[0][locTopic], 2)
	require.Len(t, calls[0][permitTopic], 3)
	mu.Unlock()

	c2 := start(t, fastParams(b, "assigned", func(context.Context, []indexer.Message) error { return nil }))
	eventually(t, 20*time.Second, "partitions split", func() bool {
		n1, n2 := owned(c), owned(c2)
		return n1 > 0 && n2 > 0 && n1+n2 == total
	})
	eventually(t, 10*time.Second, "the rebalance names the member's new partitions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		last := calls[len(calls)-1]
		return len(calls) > 1 && owned(c) == len(last[locTopic])+len(last[permitTopic])
	})
}
