package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
)

// byTopic is a group balancer that gives every partition of a topic to
// the member whose balancer names that topic, and leaves a topic no
// member names unassigned: the test decides who owns what.
type byTopic string

func (b byTopic) ProtocolName() string      { return "permitd-test-by-topic" }
func (b byTopic) UserData() ([]byte, error) { return []byte(b), nil }

func (b byTopic) AssignGroups(members []kafkago.GroupMember, parts []kafkago.Partition) kafkago.GroupMemberAssignments {
	out := kafkago.GroupMemberAssignments{}
	owner := map[string]string{}
	for _, m := range members {
		out[m.ID] = map[string][]int{}
		owner[string(m.UserData)] = m.ID
	}
	for _, p := range parts {
		if id, ok := owner[p.Topic]; ok {
			out[id][p.Topic] = append(out[id][p.Topic], p.ID)
		}
	}
	return out
}

// handled records the topic of every handled message in handling order.
type handled struct {
	mu    sync.Mutex
	order []string
}

func (h *handled) record(msgs []indexer.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range msgs {
		h.order = append(h.order, m.Topic)
	}
}

func (h *handled) snapshot() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.order...)
}

// holding is a Handler that records every batch in h, holding each
// batch of the topic hold names ("" for every topic) until release is
// closed or the batch's context ends; held reports whether it has held
// one.
type holding struct {
	h       *handled
	hold    string
	release chan struct{}
	held    atomic.Bool
}

func newHolding(h *handled, hold string) *holding {
	return &holding{h: h, hold: hold, release: make(chan struct{})}
}

func (x *holding) handle(ctx context.Context, msgs []indexer.Message) error {
	if x.hold == "" || msgs[0].Topic == x.hold {
		x.held.Store(true)
		select {
		case <-x.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	x.h.record(msgs)
	return nil
}

func count(order []string, topic string) int {
	n := 0
	for _, t := range order {
		if t == topic {
			n++
		}
	}
	return n
}

// TestGroupWaitsForLocationsOfAnotherMember: in group mode the locations
// gate is group-wide. Member B owns only the permits partitions and member
// A only the locations partitions, whose batches A holds until the test
// releases them; B handles no permit until every location published before
// the start is handled and committed, then everything is handled exactly
// once.
func TestGroupWaitsForLocationsOfAnotherMember(t *testing.T) {
	const group = "first-gate"
	b := newBroker(t, 3)
	var permits []events.Envelope
	for i := range 30 {
		permits = append(permits, permit(t, fmt.Sprintf("G%03d", i), 1))
	}
	b.publish(permits...) // permits first: without the gate they would be projected before their locations
	locs := locations(t, "gate", 300, 1)
	b.publish(locs...)

	h := &handled{}
	// B first, alone: it owns the permits partitions, nobody owns the
	// locations, so its batches wait.
	cb := start(t, kafka.WithGroupBalancers(fastParams(b, group, func(_ context.Context, msgs []indexer.Message) error {
		h.record(msgs)
		return nil
	}), byTopic(permitTopic)))
	eventually(t, 10*time.Second, "B owns the permits partitions", func() bool { return owned(cb) == 3 })

	// A joins (before it holds anything, so the rebalance is quick) and
	// holds its locations batches until released.
	x := newHolding(h, "")
	ca := start(t, kafka.WithGroupBalancers(fastParams(b, group, x.handle), byTopic(locTopic)))
	eventually(t, 10*time.Second, "A holds a locations batch", x.held.Load)
	require.Equal(t, 3, owned(ca))
	for _, ps := range ca.Partitions() {
		require.Equal(t, locTopic, ps.Topic)
	}
	time.Sleep(500 * time.Millisecond) // several gate polls
	require.Empty(t, h.snapshot(), "no permit handled while the locations are held")
	require.Equal(t, 3, owned(cb))
	for _, ps := range cb.Partitions() {
		require.Equal(t, permitTopic, ps.Topic)
	}

	close(x.release)
	want := len(locs) + len(permits)
	eventually(t, 10*time.Second, "everything handled", func() bool { return len(h.snapshot()) >= want })
	eventually(t, 10*time.Second, "every offset committed", func() bool {
		return equalOffsets(b.committed(group, locTopic), b.highWatermarks(locTopic)) &&
			equalOffsets(b.committed(group, permitTopic), b.highWatermarks(permitTopic))
	})
	order := h.snapshot()
	require.Len(t, order, want, "each message handled exactly once")
	require.Equal(t, len(locs), count(order, locTopic))
	require.Equal(t, len(permits), count(order, permitTopic))
	require.Equal(t, len(locs), count(order[:len(locs)], locTopic), "every location handled before the first permit")
}

// TestGroupGateOpensForEmptyLocations: an empty locations topic (or an
// empty partition of it) has nothing to wait for, even when no member owns
// it.
func TestGroupGateOpensForEmptyLocations(t *testing.T) {
	const group = "first-gate-empty"
	b := newBroker(t, 3)
	var permits []events.Envelope
	for i := range 30 {
		permits = append(permits, permit(t, fmt.Sprintf("E%03d", i), 1))
	}
	b.publish(permits...)
	h := &handled{}
	c := start(t, kafka.WithGroupBalancers(fastParams(b, group, func(_ context.Context, msgs []indexer.Message) error {
		h.record(msgs)
		return nil
	}), byTopic(permitTopic)))
	eventually(t, 10*time.Second, "every permit handled", func() bool { return len(h.snapshot()) == len(permits) })
	eventually(t, 10*time.Second, "caught up", c.CaughtUp)
	require.Equal(t, len(permits), count(h.snapshot(), permitTopic))
}

// The group's First gate waits for the locations partitions' watermarks
// listed at the generation's start. When the locations topic is deleted
// and created again with fewer messages, those watermarks are never
// reached: the gate waits for the new partitions' ends instead, whether
// this member owns them (its positions restart) or another does (the
// group's committed offsets restart), and the permits flow.
func TestGroupGateOpensForRecreatedLocations(t *testing.T) {
	for _, tc := range []struct {
		name    string
		another bool
	}{{name: "owned"}, {name: "another member", another: true}} {
		t.Run(tc.name, func(t *testing.T) {
			group := "gate-recreated-" + strings.ReplaceAll(tc.name, " ", "-")
			b := newBroker(t, 3)
			var permits []events.Envelope
			for i := range 30 {
				permits = append(permits, permit(t, fmt.Sprintf("R%03d", i), 1))
			}
			b.publish(permits...)
			b.publish(locations(t, "old", 300, 1)...)

			h := &handled{}
			x := newHolding(h, locTopic)
			if tc.another {
				cb := start(t, kafka.WithGroupBalancers(fastParams(b, group, func(_ context.Context, msgs []indexer.Message) error {
					h.record(msgs)
					return nil
				}), byTopic(permitTopic)))
				eventually(t, 10*time.Second, "B owns the permits partitions", func() bool { return owned(cb) == 3 })
				ca := start(t, kafka.WithGroupBalancers(fastParams(b, group, x.handle), byTopic(locTopic)))
				eventually(t, 10*time.Second, "A holds a locations batch", x.held.Load)
				require.Equal(t, 3, owned(ca))
			} else {
				c := start(t, fastParams(b, group, x.handle))
				eventually(t, 10*time.Second, "a locations batch held", x.held.Load)
				require.Equal(t, 6, owned(c))
			}
			time.Sleep(300 * time.Millisecond) // several gate polls; the fetchers read ahead
			require.Zero(t, count(h.snapshot(), permitTopic), "no permit handled while the locations are held")

			recreateWith(t, b, locTopic, 3)
			b.publish(locations(t, "new", 3, 1)...)
			close(x.release)
			eventually(t, 15*time.Second, "every permit handled", func() bool { return count(h.snapshot(), permitTopic) == len(permits) })
		})
	}
}
