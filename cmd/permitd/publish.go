package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	kafkasrc "github.com/permitd/permitd/indexer/kafka"
)

// publishConfig is the publish command's configuration.
type publishConfig struct {
	commonConfig
	Brokers           string
	File              string
	CreateTopics      bool
	Partitions        int
	ReplicationFactor int
	Batch             int
	BatchBytes        int
	Compression       string
	DryRun            bool
	Progress          time.Duration
	Linger            time.Duration
	Security          kafkaSecurityConfig
}

func (c *publishConfig) bind(fs *flagSet) {
	c.commonConfig.bind(fs)
	fs.StringVar(&c.Brokers, "brokers", "", "comma-separated Kafka bootstrap brokers (host:port)")
	fs.StringVar(&c.Brokers, "kafka-brokers", "", "same as -brokers (PERMITD_KAFKA_BROKERS works for every command)")
	fs.StringVar(&c.File, "file", "-", "NDJSON file of event envelopes, one per line, plain, gzip or zstd; - for stdin")
	fs.BoolVar(&c.CreateTopics, "create-topics", true, "create missing topics (entity topics and the dead-letter topic) first")
	fs.IntVar(&c.Partitions, "partitions", 0, "partitions of created topics (at most 2147483647); 0: each family's suggested count (docs/kafka.md)")
	fs.IntVar(&c.ReplicationFactor, "replication-factor", 1, "replication factor of created topics (3 in production; at most 32767)")
	fs.IntVar(&c.Batch, "batch", 5000, "most messages per synchronous write (1 to 100000)")
	fs.IntVar(&c.BatchBytes, "batch-bytes", kafkasrc.DefaultBatchBytes, "most bytes (keys and values, before compression) of one partition's record batch; keep it under the broker's message.max.bytes (1 MB by default)")
	fs.StringVar(&c.Compression, "compression", "none", "record batch compression: none, gzip, snappy, lz4 or zstd")
	fs.BoolVar(&c.DryRun, "dry-run", false, "check every line as the indexer takes it (its event schema and the projection's rules) and report each bad line; publish nothing (no broker needed)")
	fs.DurationVar(&c.Linger, "linger", 100*time.Millisecond, "how long a batch waits for more lines before it is written (a stream on stdin is published as it comes); 0: only when full (--batch) or at the end; at most 1h")
	fs.DurationVar(&c.Progress, "progress", time.Second, "how often a progress line (events, rate, percent of the file) goes to stderr; 0: never")
	c.Security.bind(fs)
}

// Validate checks every field.
func (c *publishConfig) Validate() error {
	errs := []error{c.commonConfig.validate()}
	brokers := splitCSV(c.Brokers)
	if len(brokers) == 0 && !c.DryRun {
		errs = append(errs, errors.New("brokers is required"))
	}
	for _, b := range brokers {
		if err := validateAddr(b); err != nil {
			errs = append(errs, fmt.Errorf("brokers: %w", err))
		}
	}
	if c.File == "" {
		errs = append(errs, errors.New("file is required (- for stdin)"))
	}
	// The protocol's fields: a topic's partition count is 32 bits, its
	// replication factor 16 (kafka-go truncates a larger int, and -1 there
	// asks for the broker's default).
	if c.Partitions < 0 || c.Partitions > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("partitions must be 0 to %d", math.MaxInt32))
	}
	if c.ReplicationFactor < 1 || c.ReplicationFactor > math.MaxInt16 {
		errs = append(errs, fmt.Errorf("replication-factor must be 1 to %d", math.MaxInt16))
	}
	if c.Batch < 1 || c.Batch > kafkasrc.MaxBatchSize {
		errs = append(errs, fmt.Errorf("batch must be 1 to %d", kafkasrc.MaxBatchSize))
	}
	if c.BatchBytes < 1024 || c.BatchBytes > kafkasrc.MaxBatchBytes {
		errs = append(errs, fmt.Errorf("batch-bytes must be 1024 to %d", kafkasrc.MaxBatchBytes))
	}
	if _, err := kafkasrc.ParseCompression(c.Compression); err != nil {
		errs = append(errs, err)
	}
	if c.Progress < 0 {
		errs = append(errs, errors.New("progress must not be negative"))
	}
	if c.Linger < 0 || c.Linger > time.Hour {
		errs = append(errs, errors.New("linger must be 0 to 1h"))
	}
	errs = append(errs, c.Security.validate())
	return errors.Join(errs...)
}

func runPublish(ctx context.Context, e env, args []string) error {
	var cfg publishConfig
	if err := loadConfig("publish", e, args, &cfg); err != nil {
		return err
	}
	log := cfg.logger(e.stderr)
	brokers := splitCSV(cfg.Brokers)

	raw, size, closeRaw, err := openInput(cfg.File)
	if err != nil {
		return err
	}
	defer closeRaw()
	prog := &progress{w: e.stderr, every: cfg.Progress, size: size, start: time.Now()}
	// The percentage follows the file's bytes, compressed or not.
	in, closeIn, err := uncompressedInput(prog.count(raw), log)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer closeIn()
	if cfg.DryRun {
		return dryRun(in, e.stdout, prog)
	}
	log.Info("starting permitd publish", append([]any{"file", cfg.File, "batch", cfg.Batch, "batch_bytes", cfg.BatchBytes, "compression", cfg.Compression}, cfg.Security.logValue()...)...)
	sec := cfg.Security.security()
	if cfg.CreateTopics {
		topics := kafkasrc.DefaultTopics()
		if cfg.Partitions > 0 {
			for i := range topics {
				topics[i].Partitions = cfg.Partitions
			}
		}
		if err := kafkasrc.CreateTopicsWith(ctx, brokers, sec, cfg.ReplicationFactor, topics...); err != nil {
			return err
		}
	}
	pub, err := kafkasrc.NewPublisherWith(kafkasrc.PublisherParams{
		Brokers: brokers, BatchSize: cfg.Batch, BatchBytes: int64(cfg.BatchBytes), Compression: cfg.Compression, Security: sec,
	})
	if err != nil {
		return err
	}
	res, err := publishEvents(ctx, in, pub, cfg.Batch, cfg.Linger, prog)
	if cerr := pub.Close(); err == nil && cerr != nil {
		err = cerr
	}
	prog.done(res.published)
	var counts []string
	for _, s := range events.TopicSpecs {
		if c := res.perTopic[s.Name]; c > 0 {
			counts = append(counts, fmt.Sprintf("%s=%d", s.Name, c))
		}
	}
	log.Info("published", "events", res.published, "failed", res.errs.total(), "topics", strings.Join(counts, " "), "took", time.Since(prog.start).Round(time.Millisecond))
	fmt.Fprintf(e.stdout, "published %d events\n", res.published)
	if err != nil {
		var before string
		if n := res.errs.total(); n > 0 {
			before = fmt.Sprintf("; %d events before it were not published: %s", n, res.errs)
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// An interrupt, not a failure: say so, not "context canceled".
			return fmt.Errorf("publish: interrupted (%d events published, the lines read before the interrupt among them%s; publishing again is harmless)", res.published, before)
		}
		return fmt.Errorf("publish: %w (%d events published before the error%s; publishing again is harmless)", err, res.published, before)
	}
	if n := res.errs.total(); n > 0 {
		return fmt.Errorf("publish: %d of %d events not published: %s (the others are published; publishing the file again after a fix is harmless)", n, n+res.published, res.errs)
	}
	return nil
}

// publishResult is what publishEvents did.
type publishResult struct {
	published int
	perTopic  map[string]int
	errs      errorSummary
}

// publishEvents decodes each NDJSON line as an envelope and writes it,
// byte for byte, to its family's topic keyed by entity_id, in batches of
// at most batchSize (the publisher bounds each partition's record batch
// in bytes). A batch is written once it is full, once its first line has
// waited linger (0: only when full), and at the end of the input: a
// stream on stdin that brings a few events a second is published as it
// comes (each waited for a batch of 5,000 before, or for the end of the
// input). A line that is not a valid envelope is not published; a
// record the broker refuses for what it is (aboutTheRecord) is counted.
// Both go into the summary (a count per kind and the first line of each),
// and publishing goes on. An error that is not about one record (the
// broker unreachable or failing after the writer's retries) stops the
// run and is returned; what the batch it stopped in wrote is counted as
// published. When ctx ends (an interrupt), the lines read so far are
// written, for at most interruptGrace, and ctx's error is returned.
func publishEvents(ctx context.Context, in io.Reader, pub *kafkasrc.Publisher, batchSize int, linger time.Duration, prog *progress) (publishResult, error) {
	res := publishResult{perTopic: map[string]int{}}
	var (
		batch []kafkasrc.Record
		lines []int // line number of each record of batch
	)
	flush := func(ctx context.Context) error {
		if len(batch) == 0 {
			return nil
		}
		err := pub.PublishRaw(ctx, batch...)
		var we kafkago.WriteErrors
		switch {
		case err == nil:
			res.published += len(batch)
			for _, r := range batch {
				res.perTopic[r.Topic]++
			}
		case errors.As(err, &we) && len(we) == len(batch) && ctx.Err() == nil:
			var stop error
			for i, r := range batch {
				switch {
				case we[i] == nil:
					res.published++
					res.perTopic[r.Topic]++
				case aboutTheRecord(we[i]):
					res.errs.add(brokerErrorKind(we[i]), lines[i], we[i])
				case stop == nil:
					stop = fmt.Errorf("stopped at line %d: the broker did not take its batch after the writer's retries: %w", lines[i], we[i])
				}
			}
			if stop != nil {
				return stop
			}
		default:
			return err
		}
		batch, lines = batch[:0], lines[:0]
		prog.tick(res.published)
		return nil
	}

	// The input is read and decoded on a goroutine of its own, so that a
	// batch can be written while its next line has not come yet. A read
	// blocked on stdin is left behind when the run ends early: the
	// process exits after it.
	items := make(chan publishItem, min(batchSize, 4096))
	done := make(chan struct{})
	defer close(done)
	readErr := make(chan error, 1)
	go func() {
		defer close(items)
		send := func(it publishItem) error {
			select {
			case items <- it:
				return nil
			case <-done:
				return errPublishDone
			}
		}
		readErr <- events.EachNDJSONLineOver(in, func(line int, raw []byte) error {
			env, err := events.Decode(raw)
			var topic string
			if err == nil {
				topic, err = events.TopicFor(env.Type)
			}
			if err != nil {
				return send(publishItem{line: line, err: err})
			}
			return send(publishItem{line: line, rec: kafkasrc.Record{Topic: topic, Key: []byte(env.EntityID), Value: append([]byte(nil), raw...)}})
		}, func(line int, n int64) error {
			return send(publishItem{line: line, err: events.TooLong(n)})
		})
	}()

	wait := time.NewTimer(time.Hour)
	wait.Stop()
	defer wait.Stop()
	take := func(it publishItem) {
		if it.err != nil {
			res.errs.add("invalid event", it.line, it.err)
			return
		}
		batch = append(batch, it.rec)
		lines = append(lines, it.line)
		if len(batch) == 1 && linger > 0 {
			wait.Reset(linger)
		}
	}
	for {
		select {
		case it, ok := <-items:
			if !ok {
				err := flush(ctx)
				if rerr := <-readErr; rerr != nil {
					return res, rerr // the lines before it are published
				}
				return res, err
			}
			take(it)
			if len(batch) >= batchSize {
				wait.Stop()
				if err := flush(ctx); err != nil {
					return res, err
				}
			}
		case <-wait.C:
			if err := flush(ctx); err != nil {
				return res, err
			}
		case <-ctx.Done():
			// The lines already read are written before the run ends: a
			// stream interrupted would otherwise lose the batch in hand
			// (and those decoded, not yet taken).
			for more := true; more; {
				select {
				case it, ok := <-items:
					if more = ok; ok {
						take(it)
					}
				default:
					more = false
				}
			}
			grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptGrace)
			err := flush(grace)
			cancel()
			return res, errors.Join(ctx.Err(), err)
		}
	}
}

// publishItem is a line read for publishEvents: its record, or err when
// it is not a valid envelope.
type publishItem struct {
	line int
	rec  kafkasrc.Record
	err  error
}

// errPublishDone stops the reading goroutine once publishEvents returned.
var errPublishDone = errors.New("publish: done")

// interruptGrace bounds the write of the lines read before an interrupt.
const interruptGrace = 10 * time.Second

// aboutTheRecord reports whether a record's write error is about the
// record, so that publishing goes on and the record is counted in the
// summary: larger than --batch-bytes, or refused by the broker for what
// it is (Message Size Too Large, Corrupt Message, a policy or an
// authorization of its topic). Any other error is about the broker: it
// could not be reached, or kept answering a transient error (Request
// Timed Out, Not Enough Replicas, Leader Not Available) through the
// writer's retries. Every later batch would then wait through the same
// retries and fail the same way, so the run stops: with the broker gone a
// 200 MB file took 4.5 minutes to be counted line by line as "write
// failed".
func aboutTheRecord(err error) bool {
	var mt kafkago.MessageTooLargeError
	if errors.As(err, &mt) {
		return true
	}
	var ke kafkago.Error
	return errors.As(err, &ke) && (!ke.Temporary() || ke == kafkago.InvalidMessage)
}

// brokerErrorKind names a record's write error for the summary.
func brokerErrorKind(err error) string {
	var mt kafkago.MessageTooLargeError
	if errors.As(err, &mt) {
		return "record larger than --batch-bytes"
	}
	var ke kafkago.Error
	if errors.As(err, &ke) {
		return ke.Title()
	}
	return "write failed"
}

// dryRun checks every line as the indexer would take it (indexer.Check:
// its event schema, the decoder and the projection's own rules, each
// geography taken as known) and prints each bad one with its number and
// the reason; it returns an error (exit status 1) when any line is bad.
func dryRun(in io.Reader, out io.Writer, prog *progress) error {
	var valid, bad int
	err := events.EachNDJSONLineOver(in, func(line int, raw []byte) error {
		if err := indexer.Check(raw); err != nil {
			bad++
			fmt.Fprintf(out, "line %d: %v\n", line, err)
		} else {
			valid++
		}
		prog.tick(valid + bad)
		return nil
	}, func(line int, n int64) error {
		bad++
		fmt.Fprintf(out, "line %d: %v\n", line, events.TooLong(n))
		prog.tick(valid + bad)
		return nil
	})
	if err != nil {
		return fmt.Errorf("dry run: %w", err)
	}
	prog.done(valid + bad)
	fmt.Fprintf(out, "dry run: %d events valid, %d invalid; nothing published\n", valid, bad)
	if bad > 0 {
		return fmt.Errorf("dry run: %d of %d events invalid", bad, valid+bad)
	}
	return nil
}

// errorSummary counts errors per kind and keeps the first line of each.
type errorSummary struct {
	kinds []string
	by    map[string]*errorKind
}

type errorKind struct {
	count     int
	firstLine int
	first     error
}

func (s *errorSummary) add(kind string, line int, err error) {
	if s.by == nil {
		s.by = map[string]*errorKind{}
	}
	k := s.by[kind]
	if k == nil {
		k = &errorKind{firstLine: line, first: err}
		s.by[kind] = k
		s.kinds = append(s.kinds, kind)
	}
	k.count++
	if line < k.firstLine {
		k.firstLine, k.first = line, err
	}
}

func (s *errorSummary) total() int {
	n := 0
	for _, k := range s.by {
		n += k.count
	}
	return n
}

// String lists the kinds by count, most first: "invalid event: 2 (first
// at line 7: ...); Message Size Too Large: 1 (first at line 12: ...)".
func (s errorSummary) String() string {
	kinds := slices.Clone(s.kinds)
	slices.SortStableFunc(kinds, func(a, b string) int { return s.by[b].count - s.by[a].count })
	parts := make([]string, len(kinds))
	for i, name := range kinds {
		k := s.by[name]
		parts[i] = fmt.Sprintf("%s: %d (first at line %d: %v)", name, k.count, k.firstLine, k.first)
	}
	return strings.Join(parts, "; ")
}

// progress prints "published N events (R/s, P%)" to w at most every
// interval while a long file is published or checked.
type progress struct {
	w     io.Writer
	every time.Duration
	size  int64 // bytes of the input; 0 when unknown
	start time.Time
	read  atomic.Int64 // bytes read: the reading goroutine adds, the writer's reads
	last  time.Time
	shown bool
	// printed and readShown are the events and bytes the last line said.
	printed   int
	readShown int64
}

// count wraps in so that the percentage follows the bytes read.
func (p *progress) count(in io.Reader) io.Reader {
	return readFunc(func(b []byte) (int, error) {
		n, err := in.Read(b)
		p.read.Add(int64(n))
		return n, err
	})
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(b []byte) (int, error) { return f(b) }

func (p *progress) tick(n int) {
	if p.every <= 0 {
		return
	}
	now := time.Now()
	if p.last.IsZero() {
		p.last = p.start
	}
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	p.shown = true
	p.print(n, now)
}

// done prints the final line when a progress line was shown, unless the
// last one shown already said n.
func (p *progress) done(n int) {
	if p.shown && (p.printed != n || p.read.Load() != p.readShown) {
		p.print(n, time.Now())
	}
}

func (p *progress) print(n int, now time.Time) {
	read := p.read.Load()
	p.printed, p.readShown = n, read
	rate := float64(n) / max(now.Sub(p.start).Seconds(), 1e-9)
	if p.size > 0 {
		fmt.Fprintf(p.w, "progress: %d events, %.0f/s, %.0f%% of the file\n", n, rate, 100*float64(min(read, p.size))/float64(p.size))
		return
	}
	fmt.Fprintf(p.w, "progress: %d events, %.0f/s\n", n, rate)
}
