package kafka_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
)

// A round's timeline (PERMITD_BENCH_TIMELINE=1, BenchmarkIngestMix's
// profiled round, PERMITD_BENCH_PROFILE_ROUND): every timelineStep, the
// cores this process and the broker's used and the messages the indexer
// handled per topic, written to standard error when the round ends (a
// benchmark's log keeps only its first lines). It shows where a round
// leaves a core idle: while the broker answers the first fetches of the
// topics the locations gate held, and at the end, when one topic is
// left.
const timelineStep = 200 * time.Millisecond

// timeline counts the messages a round's Handler handled, per topic.
type timeline struct {
	round   int
	handled []atomic.Int64 // by events.TopicSpecs index
}

// newTimeline returns round's timeline when PERMITD_BENCH_TIMELINE is
// set and round is the profiled one, else nil (whose methods do
// nothing).
func newTimeline(round int) *timeline {
	if round != profiledRound() || os.Getenv("PERMITD_BENCH_TIMELINE") == "" {
		return nil
	}
	return &timeline{round: round, handled: make([]atomic.Int64, len(events.TopicSpecs))}
}

// handler counts what h handles.
// parser is p counting what its handling handled, as handler does.
func (t *timeline) parser(p kafka.Parser) kafka.Parser {
	if t == nil {
		return p
	}
	return countingParser{p, t}
}

type countingParser struct {
	kafka.Parser
	t *timeline
}

func (c countingParser) HandleParsed(ctx context.Context, msgs []indexer.Message, p *indexer.Parsed) error {
	return c.t.handler(func(ctx context.Context, msgs []indexer.Message) error {
		return c.Parser.HandleParsed(ctx, msgs, p)
	})(ctx, msgs)
}

func (t *timeline) handler(h kafka.Handler) kafka.Handler {
	if t == nil {
		return h
	}
	return func(ctx context.Context, msgs []indexer.Message) error {
		err := h(ctx, msgs)
		if err == nil && len(msgs) > 0 {
			for i, s := range events.TopicSpecs {
				if s.Name == msgs[0].Topic {
					t.handled[i].Add(int64(len(msgs)))
				}
			}
		}
		return err
	}
}

// start samples until the returned stop, which writes the timeline.
func (t *timeline) start(addrs []string) (stop func()) {
	if t == nil {
		return func() {}
	}
	var head strings.Builder
	fmt.Fprintf(&head, "round %d timeline, per %v: ms, cores (this process + broker), messages handled:", t.round, timelineStep)
	for _, s := range events.TopicSpecs {
		fmt.Fprintf(&head, " %s", s.Family)
	}
	lines := []string{head.String()}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(timelineStep)
		defer tick.Stop()
		last := cpuAt(addrs)
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			now := cpuAt(addrs)
			line := fmt.Sprintf("%5d %.2f+%.2f", i*int(timelineStep/time.Millisecond),
				(now.own-last.own).Seconds()/timelineStep.Seconds(), (now.broker-last.broker).Seconds()/timelineStep.Seconds())
			for k := range t.handled {
				line += fmt.Sprintf(" %6d", t.handled[k].Swap(0))
			}
			lines = append(lines, line)
			last = now
		}
	}()
	return func() {
		close(done)
		<-finished
		fmt.Fprintln(os.Stderr, strings.Join(lines, "\n"))
	}
}
