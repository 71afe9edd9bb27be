package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	kafkago "github.com/segmentio/kafka-go"
)

// runReplay reads every partition of every topic from the earliest offset
// and commits nothing. It looks for new topics and partitions every
// PartitionWatchInterval; a topic that does not exist yet is picked up
// once it does.
func (c *Consumer) runReplay(ctx, drain context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	known := map[topicPartition]bool{}
	delay := c.p.BackoffMin
	toldNone := false
	for {
		found, err := c.discover(ctx)
		if err != nil {
			if !c.retryAfter(ctx, &delay, "reading topic metadata failed; retrying", err) {
				return nil
			}
			continue
		}
		delay = c.p.BackoffMin
		if len(found) == 0 && len(known) == 0 && !toldNone {
			// Said once: the process is not caught up (so serve is not
			// ready) until a topic exists, and a broker with none looked
			// like a hung start.
			c.log.Info("none of the topics exists yet; caught up once some exist and are read", "topics", c.p.Topics, "checked_every", c.p.PartitionWatchInterval)
			toldNone = true
		}
		start := map[topicPartition]int64{}
		for _, tp := range found {
			if !known[tp] {
				start[tp] = kafkago.FirstOffset
				if o, ok := c.startAt[tp]; ok {
					start[tp] = o
				}
			}
		}
		if len(start) > 0 || !c.started.Load() {
			ps, err := c.newPartitions(ctx, start)
			if err != nil {
				if !c.retryAfter(ctx, &delay, "listing offsets failed; retrying", err) {
					return nil
				}
				continue
			}
			if c.started.Load() {
				c.log.Info("new partitions found", "partitions", len(ps))
			} else if c.p.Backlog != nil {
				c.p.Backlog(backlog(ps))
			}
			for _, p := range ps {
				known[topicPartition{p.topic, p.id}] = true
			}
			c.own(ps, false)
			if len(found) > 0 && !c.settled.Load() && c.firstCaughtUp() {
				// Nothing of the First topics to read (empty, or absent
				// while other topics exist). When no topic exists yet,
				// the first discovery that finds some decides: a process
				// started before the data is published still reads the
				// locations before it settles.
				if !c.settle(ctx) {
					return nil
				}
				c.checkCaughtUp()
			}
			for _, p := range ps {
				wg.Go(func() { c.consume(ctx, drain, p, nil) })
			}
		}
		if !sleep(ctx, c.p.PartitionWatchInterval) {
			return nil
		}
	}
}

// backlog sums, by topic, the messages of ps from their positions to the
// high watermarks they had when taken.
func backlog(ps []*partition) map[string]int64 {
	out := map[string]int64{}
	for _, p := range ps {
		out[p.topic] += max(0, p.startHWM.Load()-p.pos.Load())
	}
	return out
}

// discover lists the partitions of the configured topics that exist and
// answer.
func (c *Consumer) discover(ctx context.Context) ([]topicPartition, error) {
	res, err := c.client().Metadata(ctx, &kafkago.MetadataRequest{Topics: c.p.Topics})
	if err != nil {
		return nil, err
	}
	var out []topicPartition
	for _, t := range res.Topics {
		if t.Error != nil {
			// Skipped for now, read once it answers: one topic's trouble
			// does not hold up the others.
			if errors.Is(t.Error, kafkago.UnknownTopicOrPartition) {
				c.log.Debug("topic does not exist yet", "topic", t.Name)
			} else {
				c.log.Warn("topic metadata failed; retrying later", "topic", t.Name, "err", t.Error)
			}
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, topicPartition{t.Name, p.ID})
		}
	}
	return out, nil
}

// runGroup joins the consumer group and, for each generation, reads the
// assigned partitions from their committed offsets (the earliest offset
// when none is committed), committing after every handled batch.
func (c *Consumer) runGroup(ctx, drain context.Context) error {
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID:                     c.p.Group,
		Brokers:                c.p.Brokers,
		Dialer:                 c.dialer,
		Topics:                 c.p.Topics,
		HeartbeatInterval:      c.p.HeartbeatInterval,
		SessionTimeout:         c.p.SessionTimeout,
		RebalanceTimeout:       c.p.RebalanceTimeout,
		JoinGroupBackoff:       c.p.JoinGroupBackoff,
		WatchPartitionChanges:  true,
		PartitionWatchInterval: c.p.PartitionWatchInterval,
		StartOffset:            kafkago.FirstOffset,
		GroupBalancers:         c.p.balancers,
		Logger:                 kafkaLogger(c.log, slog.LevelDebug),
		ErrorLogger:            kafkaLogger(c.log, slog.LevelWarn),
	})
	if err != nil {
		return fmt.Errorf("kafka: consumer group: %w", err)
	}
	var wg sync.WaitGroup
	defer func() {
		// Partitions finish and commit first, then the member leaves.
		wg.Wait()
		if err := cg.Close(); err != nil {
			c.log.Warn("closing consumer group", "err", err)
		}
	}()
	delay := c.p.BackoffMin
	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if errors.Is(err, kafkago.ErrGroupClosed) {
				return nil
			}
			if !c.retryAfter(ctx, &delay, "consumer group error; rejoining", err) {
				return nil
			}
			continue
		}
		delay = c.p.BackoffMin
		wg.Add(1)
		gen.Start(func(genCtx context.Context) {
			defer wg.Done()
			c.runGeneration(ctx, drain, genCtx, gen)
		})
	}
}

// runGeneration reads the generation's partitions until it ends (a
// rebalance) or ctx ends. It must not return earlier: kafka-go ends the
// generation as soon as a started function returns. Until the First gate
// is open it also lists the First partitions' watermarks, owned or not,
// and runs watchFirst for them, so the gate is group-wide.
func (c *Consumer) runGeneration(ctx, drain, genCtx context.Context, gen *kafkago.Generation) {
	fetch, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(genCtx, cancel)
	defer stop()

	start := map[topicPartition]int64{}
	for topic, parts := range gen.Assignments {
		for _, a := range parts {
			start[topicPartition{topic, a.ID}] = a.Offset
		}
	}
	log := c.log.With("generation", gen.ID, "member", gen.MemberID)
	log.Info("partitions assigned", "partitions", len(start))

	var ps []*partition
	var firstHWM map[topicPartition]int64 // nil once the First gate is open
	delay := c.p.BackoffMin
	for {
		var err error
		ps, err = c.newPartitions(fetch, start)
		if err == nil && !c.firstUp.Load() {
			firstHWM, err = c.firstWatermarks(fetch)
		}
		if err == nil {
			break
		}
		if fetch.Err() != nil {
			return
		}
		c.retried()
		log.Warn("listing offsets failed; retrying", "err", err, "backoff", delay)
		if !sleep(fetch, delay) {
			return
		}
		delay = c.backoff(delay)
	}
	c.own(ps, true)
	if !c.assigned(fetch, log, start) {
		return
	}

	var wg sync.WaitGroup
	if firstHWM != nil {
		wg.Go(func() { c.watchFirst(fetch, log, firstHWM) })
	}
	for _, p := range ps {
		wg.Go(func() {
			c.consume(fetch, drain, p, func(next int64) error {
				return gen.CommitOffsets(map[string]map[int]int64{p.topic: {p.id: next}})
			})
		})
	}
	wg.Wait()
	<-fetch.Done() // no partitions, or all stopped: hold the generation until it ends
	log.Info("partitions released", "partitions", len(ps))
}

// assigned calls Params.Assigned with the generation's partitions,
// retrying with backoff; false once fetch ends first.
func (c *Consumer) assigned(fetch context.Context, log *slog.Logger, start map[topicPartition]int64) bool {
	if c.p.Assigned == nil {
		return true
	}
	owned := map[string][]int{}
	for tp := range start {
		owned[tp.topic] = append(owned[tp.topic], tp.id)
	}
	delay := c.p.BackoffMin
	for {
		err := c.p.Assigned(fetch, owned)
		if err == nil {
			return true
		}
		if fetch.Err() != nil {
			return false
		}
		c.retried()
		log.Warn("handling the partition assignment failed; retrying", "err", err, "backoff", delay)
		if !sleep(fetch, delay) {
			return false
		}
		delay = c.backoff(delay)
	}
}
