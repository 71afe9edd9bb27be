package kafka_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
)

// TestLagGrowsWhileStuck: a permits partition that fetches nothing
// because its batch keeps failing, or because it waits for a locations
// partition whose batch keeps failing, still reports every message
// published to it since: the watermark poller raises its high watermark
// every LagInterval, in both modes (replay mode holds no batch for the
// locations: the indexer holds what needs a location instead).
func TestLagGrowsWhileStuck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group string
		held  bool // the permit batch waits for a failing locations batch instead of failing itself
	}{
		{name: "replay, batch retried"},
		{name: "group, batch retried", group: "lag-retried"},
		{name: "group, held for locations", group: "lag-held", held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n, m = 20, 30
			b := newBroker(t, 1)
			var envs []events.Envelope
			for v := int64(1); v <= n; v++ {
				envs = append(envs, permit(t, "LAG1", v)) // one key: one partition
			}
			b.publish(envs...)
			var locs int64
			if tc.held {
				b.publish(location(t, "held", 1))
				locs = 1
			}
			part := -1
			for p, h := range b.highWatermarks(permitTopic) {
				if h > 0 {
					part = p
				}
			}
			require.NotEqual(t, -1, part)

			var permitCalls atomic.Int64
			p := fastParams(b, tc.group, func(_ context.Context, msgs []indexer.Message) error {
				if msgs[0].Topic == permitTopic {
					permitCalls.Add(1)
					if !tc.held {
						return errInjected
					}
					return nil
				}
				if tc.held {
					return errInjected
				}
				return nil
			})
			p.LagInterval = 50 * time.Millisecond
			p.Metrics = indexer.NewMetrics(prometheus.NewRegistry())
			c := start(t, p)
			stuck := func(want int64) func() bool {
				return func() bool { return c.Lag() == want+locs }
			}
			eventually(t, 10*time.Second, "lag counts the first messages", stuck(n))
			if !tc.held {
				eventually(t, 5*time.Second, "the permit batch is being retried", func() bool { return permitCalls.Load() > 1 })
			}

			more := make([]events.Envelope, 0, m)
			for v := int64(n + 1); v <= n+m; v++ {
				more = append(more, permit(t, "LAG1", v))
			}
			b.publish(more...)
			eventually(t, 5*time.Second, "lag counts the messages published while stuck", stuck(n+m))

			want := kafka.PartitionState{Topic: permitTopic, Partition: part, Position: 0, HighWatermark: n + m, Lag: n + m}
			require.Contains(t, c.Partitions(), want)
			require.Equal(t, float64(n+m), value(t, p.Metrics.Lag.WithLabelValues(permitTopic, itoa(part))))
			require.False(t, c.CaughtUp())
			if tc.held {
				require.Zero(t, permitCalls.Load(), "no permit batch handled before the locations")
			}
		})
	}
}
