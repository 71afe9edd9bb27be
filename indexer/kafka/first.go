package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// The First gate (Params.First): batches of the other topics wait until
// the First topics have caught up. Replay mode owns every partition and
// decides from its own positions (firstCaughtUp). In group mode the First
// partitions may belong to other members, so watchFirst decides from the
// group's committed offsets and latches firstUp for everyone waiting.

// firstPollInterval is how often a group member reads the committed
// offsets of the First partitions while one of its batches waits for
// them.
const firstPollInterval = 100 * time.Millisecond

// waitFirst holds a batch of a dependent topic until the First topics
// have caught up; false when fetch ends first.
func (c *Consumer) waitFirst(fetch context.Context) bool {
	if c.firstCaughtUp() {
		return true
	}
	c.firstWaiting.Add(1)
	defer c.firstWaiting.Add(-1)
	for !c.firstCaughtUp() {
		if !sleep(fetch, 10*time.Millisecond) {
			return false
		}
	}
	return true
}

// firstCaughtUp reports whether the First gate is open. It latches. In
// replay mode it opens once every owned partition of the First topics has
// reached the high watermark it had when this consumer took it (vacuously
// when it owns none); in group mode only watchFirst opens it.
func (c *Consumer) firstCaughtUp() bool {
	if c.firstUp.Load() {
		return true
	}
	if c.p.Group != "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.parts {
		if slices.Contains(c.p.First, p.topic) && p.pos.Load() < p.startHWM {
			return false
		}
	}
	c.firstUp.Store(true)
	return true
}

// firstWatermarks lists the high watermark of every non-empty partition
// of the First topics among Topics, owned or not. A First topic that does
// not exist yet has nothing to wait for.
func (c *Consumer) firstWatermarks(ctx context.Context) (map[topicPartition]int64, error) {
	var topics []string
	for _, t := range c.p.First {
		if slices.Contains(c.p.Topics, t) {
			topics = append(topics, t)
		}
	}
	out := map[topicPartition]int64{}
	if len(topics) == 0 {
		return out, nil
	}
	res, err := c.client().Metadata(ctx, &kafkago.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	var tps []topicPartition
	for _, t := range res.Topics {
		if t.Error != nil {
			if errors.Is(t.Error, kafkago.UnknownTopicOrPartition) {
				continue
			}
			// Unlike discover, no skipping: the gate would open for good.
			return nil, fmt.Errorf("metadata %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			tps = append(tps, topicPartition{t.Name, p.ID})
		}
	}
	offs, err := c.offsets(ctx, tps)
	if err != nil {
		return nil, err
	}
	for tp, o := range offs {
		if o[1] > o[0] {
			out[tp] = o[1]
		}
	}
	return out, nil
}

// watchFirst opens the First gate group-wide (group mode). While a batch
// of another topic waits, it checks every firstPollInterval whether every
// partition in hwm (the First partitions' watermarks at the start of the
// generation) has been handled up to its watermark by whichever member
// owns it, and latches firstUp once so. It returns when the gate is open
// or fetch ends.
func (c *Consumer) watchFirst(fetch context.Context, log *slog.Logger, hwm map[topicPartition]int64) {
	announced := false
	for !c.firstUp.Load() {
		if c.firstWaiting.Load() > 0 {
			behind, err := c.firstBehind(fetch, hwm)
			switch {
			case err != nil:
				if fetch.Err() != nil {
					return
				}
				log.Warn("reading the first topics' committed offsets failed; trying again", "err", err, "interval", firstPollInterval)
			case behind == 0:
				if c.firstUp.CompareAndSwap(false, true) {
					log.Info("first topics caught up group-wide; every topic flows", "first", c.p.First, "partitions", len(hwm))
				}
				return
			case !announced:
				announced = true
				log.Info("holding other topics until the group has consumed the first topics", "first", c.p.First, "partitions_behind", behind)
			}
		}
		if !sleep(fetch, firstPollInterval) {
			return
		}
	}
}

// firstBehind counts the partitions of hwm not yet handled up to their
// watermark: by this member's position for an owned partition, by the
// group's committed offset for the others (read only when every owned one
// is done).
func (c *Consumer) firstBehind(ctx context.Context, hwm map[topicPartition]int64) (int, error) {
	behind := 0
	others := map[string][]int{}
	c.mu.Lock()
	for tp, h := range hwm {
		if p := c.parts[tp]; p != nil {
			if p.pos.Load() < h {
				behind++
			}
			continue
		}
		others[tp.topic] = append(others[tp.topic], tp.id)
	}
	c.mu.Unlock()
	if behind > 0 || len(others) == 0 {
		return behind, nil
	}
	res, err := c.client().OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: c.p.Group, Topics: others})
	if err != nil {
		return 0, fmt.Errorf("offset fetch: %w", err)
	}
	if res.Error != nil {
		return 0, fmt.Errorf("offset fetch: %w", res.Error)
	}
	seen := 0
	for topic, parts := range res.Topics {
		for _, p := range parts {
			h, ok := hwm[topicPartition{topic, p.Partition}]
			if !ok {
				continue
			}
			if p.Error != nil {
				return 0, fmt.Errorf("offset fetch %s/%d: %w", topic, p.Partition, p.Error)
			}
			seen++
			if p.CommittedOffset < h { // -1 when nothing is committed
				behind++
			}
		}
	}
	if want := countParts(others); seen != want {
		return 0, fmt.Errorf("offset fetch: %d of %d partitions answered", seen, want)
	}
	return behind, nil
}

func countParts(m map[string][]int) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}
