// Package kafka is the indexer's Kafka source: it reads the entity topics
// with segmentio/kafka-go, hands batches of one partition to a Handler
// (indexer.(*Indexer).HandleBatch) and commits a partition's offset only
// after the Handler returned nil for the batch, that is once the batch is
// durable in the read model or in the dead-letter topic.
//
// Two modes, chosen by the backend's durability:
//
//   - Group (Params.Group set; durable backends such as OpenSearch): the
//     members of one consumer group share the partitions and commit
//     offsets; a restarted member resumes from the last commit.
//   - Replay (Params.Group empty; the embedded memory backend, which
//     loses its state on restart): the process reads every partition of
//     every topic from the earliest offset and commits nothing, so each
//     restart rebuilds the read model. API replicas with a memory backend
//     each need all partitions, so they must never share a group.
//
// Either way the read model's per-entity versions make replays,
// duplicates and reordering harmless, so redelivery after a crash or a
// rebalance is safe. The consumer reports CaughtUp once every partition it
// started with has reached the high watermark it saw at start; serve keeps
// /v1/health/ready false until then. Lag is measured against high
// watermarks listed every LagInterval, so it keeps growing while a
// partition is stuck.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/params"
	kafkago "github.com/segmentio/kafka-go"
)

// Handler makes a batch of one partition durable. It returns nil only when
// every message is durable in the read model or the dead-letter topic;
// the consumer then commits. An error makes the consumer retry the same
// batch with backoff. indexer.(*Indexer).HandleBatch is a Handler.
type Handler func(ctx context.Context, msgs []indexer.Message) error

// Parser is a Handler split in two (*indexer.Indexer is one): ParseInto
// decodes a batch ahead (into a Parsed of a batch handled before, when not
// nil), HandleParsed handles it as the Handler would. With one, a
// partition's next batch is fetched and parsed while its last one is
// handled (Params.Parser).
type Parser interface {
	ParseInto(p *indexer.Parsed, msgs []indexer.Message) *indexer.Parsed
	HandleParsed(ctx context.Context, msgs []indexer.Message, p *indexer.Parsed) error
}

// Params configure a Consumer. Zero durations and sizes take the defaults
// given beside each field.
type Params struct {
	Brokers []string // required
	Topics  []string // default events.Topics()
	// Group is the consumer group shared by the indexers of a durable
	// backend. Empty selects replay mode (see the package comment).
	Group   string
	Handler Handler // required unless Parser is set
	// Parser, optional, takes the Handler's place: each partition then
	// fetches and parses its next batch while its last one is handled,
	// so that a batch's parse is off the path from one write of the
	// partition to its next (docs/kafka-history.md, "Forty-sixth session"). A
	// partition's fetcher (fetch.go) fetches ahead either way.
	Parser Parser

	// BatchSize caps the messages of one batch (default 2000, at most
	// MaxBatchSize); BatchWait is how long a batch may wait to fill after
	// its first message (default 20ms). A batch that reaches the
	// partition's high watermark does not wait.
	BatchSize int
	BatchWait time.Duration
	// MaxFetchBytes bounds one fetch's answer (default 1 MiB); a
	// partition keeps up to about five answers in hand (answersAhead). A
	// message larger still comes whole (a broker answers a fetch with at
	// least its first record batch, whatever the limit: Kafka 0.10.1 and
	// later), so an oversized message still reaches the dead-letter topic.
	MaxFetchBytes int
	// FetchWait is the broker's long-poll wait when a partition is idle
	// (default 500ms). A fetch not answered within FetchWait, a second and
	// the client's 10s timeout fails and is retried.
	FetchWait time.Duration

	// BackoffMin and BackoffMax bound the retries of a failed batch, a
	// failed commit or failed metadata (default 100ms doubling to 10s).
	BackoffMin, BackoffMax time.Duration
	// DrainTimeout bounds the last batch and its commit after Run's
	// context ends (default 10s).
	DrainTimeout time.Duration
	// PartitionWatchInterval is how often replay mode looks for new topics
	// and partitions (default 10s); group mode lets kafka-go rebalance on
	// partition changes at the same interval.
	PartitionWatchInterval time.Duration

	// LagInterval is how often the high watermarks of the owned
	// partitions are listed (default 5s). Fetches refresh them too, but a
	// partition whose batch is being retried or held for the First topics
	// fetches nothing; without this its lag would freeze at the watermark
	// of its last fetch instead of growing with what is published.
	LagInterval time.Duration

	// Consumer-group timings (group mode; kafka-go defaults when zero).
	HeartbeatInterval, SessionTimeout, RebalanceTimeout, JoinGroupBackoff time.Duration

	// First lists the topics the indexer's location table is fed from
	// (default: the locations topic); see first.go. Group mode handles
	// no batch of another topic before they have caught up group-wide:
	// for every partition of the First topics among Topics, whichever
	// member owns it, until the group's committed offset (this member's
	// position, for a partition it owns) reaches the watermark the
	// partition had when the generation started; an empty partition has
	// nothing to wait for. Replay mode holds them too, until the First
	// partitions (it owns them all) reach the watermark they had when it
	// took them. Either way that moment calls Settle, once, and the gate
	// stays open for the consumer's lifetime.
	First []string
	// Settle is called once the First gate opens, before the first batch
	// of another topic is handled (indexer.(*Indexer).Settle: messages
	// still waiting for a location are written without it). An error is retried with
	// backoff. Optional.
	Settle func(ctx context.Context) error
	// Assigned is called in group mode each time the group assigns this
	// member its partitions (owned: partition ids by topic), before any
	// of them is consumed (indexer.(*Indexer).RecoverUnlinked: the
	// documents of those partitions that wait for a location). An error
	// is retried with backoff while the partitions wait. Optional.
	Assigned func(ctx context.Context, owned map[string][]int) error

	// OnCaughtUp is called once, when every partition owned at start
	// has reached the high watermark it had then, before CaughtUp
	// reports true (serve ends the memory backend's replay here:
	// memory.(*Store).EndReplay, so the read model is readable when
	// readiness turns true). It runs on a partition's goroutine and
	// should be short. Optional.
	OnCaughtUp func()

	// Backlog is called once in replay mode, when the consumer first
	// takes its partitions and before it reads any: the number of
	// messages each topic holds from the offsets it starts at to the
	// high watermarks they have then (serve sizes the memory backend's
	// replay with it: memory.(*Store).ReserveReplay). Optional.
	Backlog func(messages map[string]int64)

	// Security: TLS and SASL for every connection (readers, the group,
	// metadata and offsets); nil for plaintext.
	Security *Security

	Logger  *slog.Logger
	Metrics *indexer.Metrics // optional: lag per partition, retries

	// balancers replace kafka-go's group balancers; tests set them (see
	// export_test.go) to decide which member owns which partition.
	balancers []kafkago.GroupBalancer
}

// Consumer reads the topics and drives the Handler. Create it with New
// and start it with Run; CaughtUp, Lag and Partitions may be called at
// any time from any goroutine.
type Consumer struct {
	p   Params
	log *slog.Logger

	transport *kafkago.Transport // the partitions' fetches and the admin requests
	dialer    *kafkago.Dialer    // the consumer group

	mu    sync.Mutex
	parts map[topicPartition]*partition // currently owned

	startAt       map[topicPartition]int64 // replay mode's start offsets (SetStartOffsets)
	started       atomic.Bool              // the first assignment (or discovery) is known
	firstUp       atomic.Bool              // latched once the First topics caught up (see Params.First)
	firstWaiting  atomic.Int64             // batches held by waitFirst now
	settleMu      sync.Mutex               // serialises Params.Settle
	settled       atomic.Bool              // Params.Settle returned nil
	caughtUp      atomic.Bool              // latched once every owned partition reached its start watermark
	caughtOnce    sync.Once                // runs Params.OnCaughtUp, then latches caughtUp
	stopping      chan struct{}            // closed once Run's context ends (AwaitLocations gives up)
	stopOnce      sync.Once
	batches       atomic.Int64
	commits       atomic.Int64
	answers       []sync.Pool  // *[]byte: fetch answers' buffers, by answerClass (fetch.go: answerBuf)
	answersReused atomic.Int64 // answers copied into a buffer from answers
}

type topicPartition struct {
	topic string
	id    int
}

// partition is the consumer's view of one owned partition.
type partition struct {
	topic    string
	id       int
	startHWM atomic.Int64 // high watermark when this consumer took the partition (or it restarted)
	pos      atomic.Int64 // next offset to hand to the Handler
	hwm      atomic.Int64 // newest high watermark seen
	restarts atomic.Int64 // times the partition was found recreated (restart)
	// restartMu orders restart against the watermark poller's raise
	// (raiseListedHWM), so that a watermark listed before a restart never
	// raises the new partition's.
	restartMu sync.Mutex
}

func (p *partition) lag() int64 { return max(0, p.hwm.Load()-p.pos.Load()) }

// raiseHWM records h as the high watermark unless a newer one is known:
// fetches and the watermark poller report concurrently, and a watermark
// never goes back.
func (p *partition) raiseHWM(h int64) {
	for {
		cur := p.hwm.Load()
		if h <= cur || p.hwm.CompareAndSwap(cur, h) {
			return
		}
	}
}

// restart moves a partition that was deleted and created again back to
// pos, its first offset, with the new partition's high watermark: its
// watermarks go down, which raiseHWM never does, and a replay not yet
// caught up waits for the new partition's end, not the old one's.
func (p *partition) restart(pos, hwm int64) {
	p.restartMu.Lock()
	defer p.restartMu.Unlock()
	p.restarts.Add(1)
	p.pos.Store(pos)
	p.hwm.Store(hwm)
	p.startHWM.Store(min(p.startHWM.Load(), hwm))
}

// raiseListedHWM raises the watermark to h, listed when the partition
// had restarted `restarts` times, unless it restarted since: h is then
// the old partition's.
func (p *partition) raiseListedHWM(h, restarts int64) {
	p.restartMu.Lock()
	defer p.restartMu.Unlock()
	if p.restarts.Load() == restarts {
		p.raiseHWM(h)
	}
}

// gateTarget is h, the watermark a First gate waits for p to reach, or
// p's new end when p restarted (was deleted and created again) since,
// which the gate would otherwise wait for in vain.
func (p *partition) gateTarget(h int64) int64 {
	if p.restarts.Load() > 0 {
		return min(h, p.startHWM.Load())
	}
	return h
}

// MaxBatchSize bounds Params.BatchSize and PublisherParams.BatchSize. A
// partition's consumer holds three batches' message buffers from its
// start (the one handled and two taken ahead), whatever comes: at
// 100,000 messages and the 46 partitions of the default topics, serve
// with an empty store held 114 MB; at 1,000,000, 1.96 GB; at
// 100,000,000 the kernel killed it for memory (24 GB). A batch is cut at
// the partition's high watermark and after BatchWait anyway, so a larger
// cap buys nothing.
const MaxBatchSize = 100_000

// New validates p and returns a Consumer.
func New(p Params) (*Consumer, error) {
	if len(p.Brokers) == 0 {
		return nil, errors.New("kafka: Brokers is required")
	}
	if p.Handler == nil && p.Parser != nil {
		parser := p.Parser
		p.Handler = func(ctx context.Context, msgs []indexer.Message) error { return parser.HandleParsed(ctx, msgs, nil) }
	}
	if p.Handler == nil {
		return nil, errors.New("kafka: Handler (or Parser) is required")
	}
	if len(p.Topics) == 0 {
		p.Topics = events.Topics()
	}
	if p.First == nil {
		if loc, err := events.TopicFor(events.LocationUpserted); err == nil {
			p.First = []string{loc}
		}
	}
	params.Default(&p.BatchSize, 2000)
	if p.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("kafka: BatchSize %d is over %d", p.BatchSize, MaxBatchSize)
	}
	params.Default(&p.BatchWait, 20*time.Millisecond)
	params.Default(&p.MaxFetchBytes, 1<<20)
	params.Default(&p.FetchWait, 500*time.Millisecond)
	params.Default(&p.BackoffMin, 100*time.Millisecond)
	params.Default(&p.BackoffMax, 10*time.Second)
	params.Default(&p.DrainTimeout, 10*time.Second)
	params.Default(&p.PartitionWatchInterval, 10*time.Second)
	params.Default(&p.LagInterval, 5*time.Second)
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	log := p.Logger.With("component", "kafka-consumer")
	if p.Group != "" {
		log = log.With("group", p.Group)
	}
	tr, err := p.Security.transport("permitd-indexer")
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	dialer, err := p.Security.dialer("permitd-indexer")
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return &Consumer{
		p:         p,
		log:       log,
		transport: tr,
		dialer:    dialer,
		parts:     map[topicPartition]*partition{},
		stopping:  make(chan struct{}),
		answers:   make([]sync.Pool, answerClass(max(p.MaxFetchBytes, 1))+1),
	}, nil
}

// Run consumes until ctx ends; call it once. Then it stops fetching, lets each
// partition finish the batch in hand and commit it (bounded by
// DrainTimeout), leaves the group and closes its connections. It returns
// nil after a clean shutdown; failures while running are retried, not
// returned.
func (c *Consumer) Run(ctx context.Context) error {
	stopped := func() { c.stopOnce.Do(func() { close(c.stopping) }) }
	defer stopped()
	defer context.AfterFunc(ctx, stopped)()
	// drain outlives ctx by DrainTimeout: the batch in hand and its commit
	// run under it.
	drain, cancelDrain := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	var drainTimer sync.WaitGroup
	drainTimer.Go(func() {
		select {
		case <-ctx.Done():
			t := time.NewTimer(c.p.DrainTimeout)
			defer t.Stop()
			select {
			case <-t.C:
			case <-done:
			}
		case <-done:
		}
		cancelDrain()
	})
	defer func() {
		close(done)
		drainTimer.Wait()
		c.transport.CloseIdleConnections()
	}()
	poll, stopPoll := context.WithCancel(ctx)
	var poller sync.WaitGroup
	poller.Go(func() { c.pollWatermarks(poll) })
	defer func() {
		stopPoll()
		poller.Wait()
	}()

	c.log.Info("kafka consumer starting", "brokers", c.p.Brokers, "topics", c.p.Topics, "mode", c.mode())
	var err error
	if c.p.Group == "" {
		err = c.runReplay(ctx, drain)
	} else {
		err = c.runGroup(ctx, drain)
	}
	c.log.Info("kafka consumer stopped", "batches", c.batches.Load(), "commits", c.commits.Load())
	return err
}

func (c *Consumer) mode() string {
	if c.p.Group == "" {
		return "replay"
	}
	return "group"
}

// SetStartOffsets makes replay mode start each listed partition at its
// offset instead of the earliest (a snapshot of the read model holds what
// came before); partitions not listed start at the earliest. Call it
// before Run. An offset below the partition's first one (removed by
// retention) starts at the first.
func (c *Consumer) SetStartOffsets(offsets map[string]map[int]int64) {
	c.startAt = map[topicPartition]int64{}
	for topic, ps := range offsets {
		for id, o := range ps {
			c.startAt[topicPartition{topic, id}] = o
		}
	}
}

func (c *Consumer) retried() {
	if m := c.p.Metrics; m != nil {
		m.Retries.Inc()
	}
}

// client is a kafka-go admin client on the consumer's transport.
func (c *Consumer) client() *kafkago.Client {
	return &kafkago.Client{Addr: kafkago.TCP(c.p.Brokers...), Transport: c.transport, Timeout: 10 * time.Second}
}

// sleep waits d or until ctx ends; false means ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff doubles d up to the configured maximum.
func (c *Consumer) backoff(d time.Duration) time.Duration { return min(d*2, c.p.BackoffMax) }

// retryAfter counts a retry, logs msg with err and the wait, sleeps *delay
// and doubles it (to BackoffMax) for the next failure; false, at once and
// without a log line, when ctx has ended (the failure is then the
// shutdown's), or when it ends during the sleep.
func (c *Consumer) retryAfter(ctx context.Context, delay *time.Duration, msg string, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	c.retried()
	c.log.Warn(msg, "err", err, "backoff", *delay)
	if !sleep(ctx, *delay) {
		return false
	}
	*delay = c.backoff(*delay)
	return true
}

// kafkaLogger sends kafka-go's internal logs to slog at level.
func kafkaLogger(log *slog.Logger, level slog.Level) kafkago.Logger {
	return kafkago.LoggerFunc(func(format string, args ...any) {
		log.Log(context.Background(), level, fmt.Sprintf(format, args...))
	})
}
