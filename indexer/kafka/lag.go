// Partition bookkeeping of the consumer: lag and catch-up, the partitions it owns, their offsets and watermarks, and new partitions.

package kafka

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	kafkago "github.com/segmentio/kafka-go"
)

// CaughtUp reports whether every partition owned at start has been
// handled up to the high watermark it had then. It latches: once true it
// stays true (Lag keeps reporting the live distance).
func (c *Consumer) CaughtUp() bool { return c.caughtUp.Load() }

// Lag is the number of messages behind the newest high watermarks seen,
// summed over the owned partitions; -1 before the first assignment. The
// watermarks are listed every LagInterval, also while a partition is
// stuck.
func (c *Consumer) Lag() int64 {
	if !c.started.Load() {
		return -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, p := range c.parts {
		n += p.lag()
	}
	return n
}

// PartitionState is one owned partition's position, for readiness detail.
type PartitionState struct {
	Topic         string `json:"topic"`
	Partition     int    `json:"partition"`
	Position      int64  `json:"position"`
	HighWatermark int64  `json:"high_watermark"`
	Lag           int64  `json:"lag"`
}

// Partitions lists the owned partitions by topic and partition.
func (c *Consumer) Partitions() []PartitionState {
	c.mu.Lock()
	out := make([]PartitionState, 0, len(c.parts))
	for _, p := range c.parts {
		out = append(out, PartitionState{Topic: p.topic, Partition: p.id, Position: p.pos.Load(), HighWatermark: p.hwm.Load(), Lag: p.lag()})
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b PartitionState) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return a.Partition - b.Partition
	})
	return out
}

// own registers partitions as owned (replacing the previous set when
// replace is true) and re-evaluates caught-up.
func (c *Consumer) own(ps []*partition, replace bool) {
	c.mu.Lock()
	if replace {
		for k, p := range c.parts {
			delete(c.parts, k)
			c.dropLag(p)
		}
	}
	for _, p := range ps {
		c.parts[topicPartition{p.topic, p.id}] = p
		c.setLag(p)
	}
	c.mu.Unlock()
	c.started.Store(true)
	c.checkCaughtUp()
}

func (c *Consumer) checkCaughtUp() {
	if c.caughtUp.Load() || !c.started.Load() {
		return
	}
	if c.p.Group == "" && c.p.Settle != nil && !c.settled.Load() {
		return // replay: caught up includes what waited for a location
	}
	c.mu.Lock()
	for _, p := range c.parts {
		if p.pos.Load() < p.startHWM.Load() {
			c.mu.Unlock()
			return
		}
	}
	n := len(c.parts)
	c.mu.Unlock()
	// Once: a concurrent caller waits for OnCaughtUp here, so CaughtUp
	// never reports true before it has returned.
	c.caughtOnce.Do(func() {
		if c.p.OnCaughtUp != nil {
			c.p.OnCaughtUp()
		}
		c.caughtUp.Store(true)
		c.log.Info("kafka consumer caught up", "partitions", n)
	})
}

func (c *Consumer) setLag(p *partition) {
	if m := c.p.Metrics; m != nil {
		m.Lag.WithLabelValues(p.topic, strconv.Itoa(p.id)).Set(float64(p.lag()))
	}
}

func (c *Consumer) dropLag(p *partition) {
	if m := c.p.Metrics; m != nil {
		m.Lag.DeleteLabelValues(p.topic, strconv.Itoa(p.id))
	}
}

// offsets lists the first offset and high watermark of each partition.
func (c *Consumer) offsets(ctx context.Context, tps []topicPartition) (map[topicPartition][2]int64, error) {
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, tp := range tps {
		req.Topics[tp.topic] = append(req.Topics[tp.topic], kafkago.FirstOffsetOf(tp.id), kafkago.LastOffsetOf(tp.id))
	}
	out := make(map[topicPartition][2]int64, len(tps))
	if len(tps) == 0 {
		return out, nil
	}
	res, err := c.client().ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	for topic, parts := range res.Topics {
		for _, p := range parts {
			if p.Error != nil {
				return nil, fmt.Errorf("list offsets %s/%d: %w", topic, p.Partition, p.Error)
			}
			out[topicPartition{topic, p.Partition}] = [2]int64{p.FirstOffset, p.LastOffset}
		}
	}
	for _, tp := range tps {
		if _, ok := out[tp]; !ok {
			return nil, fmt.Errorf("list offsets: no answer for %s/%d", tp.topic, tp.id)
		}
	}
	return out, nil
}

// pollWatermarks raises the owned partitions' high watermarks (and their
// lag gauges) every LagInterval until ctx ends. A failed listing is
// logged (as a run: failureLog) and tried again at the next tick.
func (c *Consumer) pollWatermarks(ctx context.Context) {
	var failures failureLog
	for sleep(ctx, c.p.LagInterval) {
		c.mu.Lock()
		tps := slices.Collect(maps.Keys(c.parts))
		// A watermark listed before a partition restarted is the old
		// partition's: it must not raise the new one's.
		restarts := make(map[*partition]int64, len(c.parts))
		for _, p := range c.parts {
			restarts[p] = p.restarts.Load()
		}
		c.mu.Unlock()
		offs, err := c.offsets(ctx, tps)
		if err != nil {
			if ctx.Err() == nil {
				failures.failed(c.log, "listing high watermarks for lag failed; trying again", err, "interval", c.p.LagInterval)
			}
			continue
		}
		failures.succeeded(c.log, "listing high watermarks for lag again")
		c.mu.Lock()
		for tp, o := range offs {
			if p := c.parts[tp]; p != nil { // still owned
				p.raiseListedHWM(o[1], restarts[p])
				c.setLag(p)
			}
		}
		c.mu.Unlock()
	}
}

// newPartitions builds owned partitions starting at start (an offset or
// kafka-go's FirstOffset) with the watermarks listed now.
func (c *Consumer) newPartitions(ctx context.Context, start map[topicPartition]int64) ([]*partition, error) {
	tps := slices.Collect(maps.Keys(start))
	offs, err := c.offsets(ctx, tps)
	if err != nil {
		return nil, err
	}
	ps := make([]*partition, 0, len(tps))
	for _, tp := range tps {
		o := offs[tp]
		p := &partition{topic: tp.topic, id: tp.id}
		p.startHWM.Store(o[1])
		pos := start[tp]
		if pos > o[1] {
			// Past the end: the partition was recreated since that
			// offset was recorded. Read it all.
			c.log.Warn("start offset past the high watermark; reading the partition from its first offset", "topic", tp.topic, "partition", tp.id, "offset", pos, "high_watermark", o[1])
			pos = o[0]
		}
		if pos < 0 || pos < o[0] {
			pos = o[0]
		}
		p.pos.Store(pos)
		p.hwm.Store(o[1])
		ps = append(ps, p)
	}
	return ps, nil
}
