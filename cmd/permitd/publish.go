package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/permitd/permitd/events"
	kafkasrc "github.com/permitd/permitd/indexer/kafka"
)

func init() {
	register("publish", "publish NDJSON event envelopes to their Kafka topics: publish -brokers H:P -file FILE", runPublish)
}

// publishConfig is the publish command's configuration.
type publishConfig struct {
	commonConfig
	Brokers           string
	File              string
	CreateTopics      bool
	Partitions        int
	ReplicationFactor int
	Batch             int
}

func (c *publishConfig) bind(fs *flagSet) {
	c.commonConfig.bind(fs)
	fs.StringVar(&c.Brokers, "brokers", "", "comma-separated Kafka bootstrap brokers (host:port)")
	fs.StringVar(&c.Brokers, "kafka-brokers", "", "same as -brokers (PERMITD_KAFKA_BROKERS works for every command)")
	fs.StringVar(&c.File, "file", "-", "NDJSON file of event envelopes, one per line; - for stdin")
	fs.BoolVar(&c.CreateTopics, "create-topics", true, "create missing topics (entity topics and the dead-letter topic) first")
	fs.IntVar(&c.Partitions, "partitions", 0, "partitions of created topics; 0: each family's suggested count (docs/kafka.md)")
	fs.IntVar(&c.ReplicationFactor, "replication-factor", 1, "replication factor of created topics (3 in production)")
	fs.IntVar(&c.Batch, "batch", 5000, "messages per synchronous write")
}

// Validate checks every field.
func (c *publishConfig) Validate() error {
	errs := []error{c.commonConfig.validate()}
	brokers := splitCSV(c.Brokers)
	if len(brokers) == 0 {
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
	if c.Partitions < 0 || c.ReplicationFactor < 1 || c.Batch < 1 {
		errs = append(errs, errors.New("partitions must be >= 0, replication-factor and batch >= 1"))
	}
	return errors.Join(errs...)
}

func runPublish(ctx context.Context, e env, args []string) error {
	var cfg publishConfig
	if err := loadConfig("publish", e, args, &cfg); err != nil {
		return err
	}
	log := cfg.logger(e.stderr)
	brokers := splitCSV(cfg.Brokers)

	in := io.Reader(os.Stdin)
	if cfg.File != "-" {
		f, err := os.Open(cfg.File)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	if cfg.CreateTopics {
		topics := kafkasrc.DefaultTopics()
		if cfg.Partitions > 0 {
			for i := range topics {
				topics[i].Partitions = cfg.Partitions
			}
		}
		if err := kafkasrc.CreateTopics(ctx, brokers, cfg.ReplicationFactor, topics...); err != nil {
			return err
		}
	}
	pub, err := kafkasrc.NewPublisher(brokers)
	if err != nil {
		return err
	}
	start := time.Now()
	n, perTopic, err := publishEvents(ctx, in, pub, cfg.Batch)
	if cerr := pub.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("publish: %w (%d events published before the error; publishing again is harmless)", err, n)
	}
	var counts []string
	for _, s := range events.TopicSpecs {
		if c := perTopic[s.Name]; c > 0 {
			counts = append(counts, fmt.Sprintf("%s=%d", s.Name, c))
		}
	}
	log.Info("published", "events", n, "topics", strings.Join(counts, " "), "took", time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(e.stdout, "published %d events\n", n)
	return nil
}

// publishEvents validates each NDJSON line as an envelope and writes it,
// byte for byte, to its family's topic keyed by entity_id, in batches. An
// invalid line stops the run with its line number; what was written
// before stays (envelopes are idempotent, so publishing the fixed file
// again is harmless).
func publishEvents(ctx context.Context, in io.Reader, pub *kafkasrc.Publisher, batchSize int) (int, map[string]int, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var (
		batch    []kafkasrc.Record
		n, line  int
		perTopic = map[string]int{}
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := pub.PublishRaw(ctx, batch...); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if len(raw) == 0 {
			continue
		}
		env, err := events.Decode(raw)
		if err != nil {
			return n, perTopic, fmt.Errorf("line %d: %w", line, err)
		}
		topic, err := events.TopicFor(env.Type)
		if err != nil {
			return n, perTopic, fmt.Errorf("line %d: %w", line, err)
		}
		perTopic[topic]++
		batch = append(batch, kafkasrc.Record{Topic: topic, Key: []byte(env.EntityID), Value: append([]byte(nil), raw...)})
		if len(batch) >= batchSize {
			if err := flush(); err != nil {
				return n, perTopic, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return n, perTopic, err
	}
	return n, perTopic, flush()
}
