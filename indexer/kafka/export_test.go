package kafka

import (
	"context"
	"log/slog"
	"sync"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/permitd/permitd/indexer"
)

// WithGroupBalancers returns p with kafka-go's group balancers replaced,
// so that a test decides which member owns which partition.
func WithGroupBalancers(p Params, b ...kafkago.GroupBalancer) Params {
	p.balancers = b
	return p
}

// ReaderDialer is the consumer's dialer (plaintext), for the benchmarks'
// kafka-go Reader (the consumer's reader until the fifty-fifth session).
func ReaderDialer() *kafkago.Dialer {
	d, err := (*Security)(nil).dialer("permitd-bench")
	if err != nil {
		panic(err)
	}
	return d
}

// FetchToEnd reads each partition of ends from its first offset to its
// end offset (exclusive) with the consumer's own fetchers, concurrently,
// doing nothing per message: the raw consume rate of the indexer's fetch
// path, for the benchmarks.
func FetchToEnd(ctx context.Context, brokers []string, ends map[string]map[int]int64) error {
	c, err := New(Params{Brokers: brokers, Handler: func(context.Context, []indexer.Message) error { return nil }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer c.transport.CloseIdleConnections()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for topic, parts := range ends {
		for id, end := range parts {
			if end <= 0 {
				continue
			}
			wg.Go(func() {
				f := c.newFetcher(ctx, c.log, &partition{topic: topic, id: id})
				defer f.stop()
				batch := make([]indexer.Message, 0, c.p.BatchSize)
				for {
					var at mark
					var ok bool
					batch, at, ok = f.take(ctx, batch[:0])
					next := at.next
					if !ok {
						select {
						case errs <- ctx.Err():
						default:
						}
						return
					}
					clear(batch)
					if next >= end {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// ScribbleReleased has the consumer overwrite each answer buffer it gives
// back to its pool (releaseAnswers); it returns what turns that off.
func ScribbleReleased() func() {
	scribbleReleased.Store(true)
	return func() { scribbleReleased.Store(false) }
}

// AnswersReused is the number of fetch answers c copied into a buffer
// from its pool.
func (c *Consumer) AnswersReused() int64 { return c.answersReused.Load() }
