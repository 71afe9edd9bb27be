package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// The First gate (Params.First). In group mode batches of the other
// topics wait until the First topics have caught up group-wide: the
// First partitions may belong to other members, so watchFirst decides
// from the group's committed offsets and latches firstUp for everyone
// waiting; then Params.Settle runs once, before the first batch of
// another topic. Nothing may wait inside the indexer there, since its
// offsets are committed.
//
// Replay mode holds the other topics at the same gate, deciding from its
// own positions (it owns every partition; firstCaughtUp): once the First
// partitions reached their start watermarks, Settle runs and every topic
// flows. Their readers start only then (consume), so the broker serves
// the First topics alone until the gate opens. Letting every topic flow
// at once instead made a replay park most dependent messages inside the
// indexer (their locations not read yet) and project them twice,
// keeping copies meanwhile: on the real mix more than half of them, for
// no gain, as the gate only reorders work the process has to do anyway.
// The consumer reports caught up only after Settle.

// firstPollInterval is how often a group member reads the committed
// offsets of the First partitions while one of its batches waits for
// them.
const firstPollInterval = 100 * time.Millisecond

// waitFirst holds a batch of a dependent topic until the First topics
// have caught up; false when fetch ends first.
func (c *Consumer) waitFirst(fetch context.Context) bool {
	if c.settled.Load() {
		return true
	}
	if !c.firstCaughtUp() {
		// Group mode: watchFirst opens the gate; replay: the First
		// partitions' own batches do (firstCaughtUp).
		c.firstWaiting.Add(1)
		for !c.firstCaughtUp() {
			if !sleep(fetch, 10*time.Millisecond) {
				c.firstWaiting.Add(-1)
				return false
			}
		}
		c.firstWaiting.Add(-1)
	}
	return c.settle(fetch)
}

// settle calls Params.Settle once (retrying with backoff); false when
// fetch ends first.
func (c *Consumer) settle(fetch context.Context) bool {
	c.settleMu.Lock()
	defer c.settleMu.Unlock()
	if c.settled.Load() || c.p.Settle == nil {
		c.settled.Store(true)
		return true
	}
	for delay := c.p.BackoffMin; ; {
		err := c.p.Settle(fetch)
		if err == nil {
			c.settled.Store(true)
			return true
		}
		if !c.retryAfter(fetch, &delay, "settling the location table failed; retrying", err) {
			return false
		}
	}
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
		if slices.Contains(c.p.First, p.topic) && p.pos.Load() < p.startHWM.Load() {
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
			if p.pos.Load() < p.gateTarget(h) {
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
	late := map[topicPartition]int64{} // committed offsets short of their watermark
	for topic, parts := range res.Topics {
		for _, p := range parts {
			tp := topicPartition{topic, p.Partition}
			h, ok := hwm[tp]
			if !ok {
				continue
			}
			if p.Error != nil {
				return 0, fmt.Errorf("offset fetch %s/%d: %w", topic, p.Partition, p.Error)
			}
			seen++
			if p.CommittedOffset < h { // -1 when nothing is committed
				late[tp] = p.CommittedOffset
			}
		}
	}
	if want := countParts(others); seen != want {
		return 0, fmt.Errorf("offset fetch: %d of %d partitions answered", seen, want)
	}
	if len(late) == 0 {
		return 0, nil
	}
	// A partition whose log now ends before its watermark was deleted
	// and created again (its owner reads it from its first offset): its
	// watermark is its new end, or nothing to wait for once it is empty.
	offs, err := c.offsets(ctx, slices.Collect(maps.Keys(late)))
	if err != nil {
		return 0, err
	}
	for tp, committed := range late {
		o := offs[tp]
		switch {
		case o[1] >= hwm[tp]:
		case o[1] <= o[0]:
			delete(hwm, tp)
			continue
		default:
			hwm[tp] = o[1]
		}
		if committed < hwm[tp] {
			behind++
		}
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

// awaitPollInterval is how often AwaitLocations looks at this consumer's
// positions (group mode: the group's committed offsets, every
// firstPollInterval).
const awaitPollInterval = 10 * time.Millisecond

// AwaitLocations returns once every message of the First topics published
// before the call has been handled: it lists their partitions' high
// watermarks now, then waits until each is reached, by this consumer's
// position for a partition it owns, and in group mode by the group's
// committed offset for the others (in replay mode it owns them all: one
// not yet owned, created since the last discovery, is waited for until
// it is found and read). A First topic that does not exist has nothing
// to wait for. It returns ctx's error when ctx ends, and an error once
// Run's context has ended (the consumer stops reading the First topics
// then). The indexer calls it for a message whose location it does not
// know (indexer.(*Indexer).SetLocationSource); a batch of a First topic
// must never call it, as it would wait for itself.
func (c *Consumer) AwaitLocations(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	var hwm map[topicPartition]int64
	delay := c.p.BackoffMin
	for {
		var err error
		if hwm == nil {
			hwm, err = c.firstWatermarks(ctx)
		}
		behind := 0
		if err == nil {
			behind, err = c.firstPending(ctx, hwm)
		}
		wait := awaitPollInterval
		switch {
		case err == nil && behind == 0:
			return nil
		case err != nil:
			if ctx.Err() != nil {
				break
			}
			c.retried()
			c.log.Warn("waiting for the locations topic: listing offsets failed; retrying", "err", err, "backoff", delay)
			wait, delay = delay, c.backoff(delay)
		case c.p.Group != "" && behind > 0:
			wait = firstPollInterval
		}
		if !sleep(ctx, wait) {
			select {
			case <-c.stopping:
				return errors.New("kafka: consumer stopping")
			default:
				return ctx.Err()
			}
		}
	}
}

// firstPending counts the partitions of hwm not yet handled up to their
// watermark (see AwaitLocations).
func (c *Consumer) firstPending(ctx context.Context, hwm map[topicPartition]int64) (int, error) {
	if c.p.Group != "" {
		return c.firstBehind(ctx, hwm)
	}
	behind := 0
	c.mu.Lock()
	defer c.mu.Unlock()
	for tp, h := range hwm {
		if p := c.parts[tp]; p == nil || p.pos.Load() < p.gateTarget(h) {
			behind++
		}
	}
	return behind, nil
}
