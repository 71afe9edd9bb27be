package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/permitd/permitd/events"
)

// Publisher writes envelopes to their family's topic, keyed by entity_id
// (`permitd publish`, tests, benchmarks). Keys are partitioned with
// murmur2 like the Java client's default partitioner, so a JVM pipeline
// and permitd put an entity on the same partition.
type Publisher struct {
	w          *kafkago.Writer
	transport  *kafkago.Transport
	batchBytes int64
}

// DefaultBatchBytes bounds the records of one partition's batch: a
// broker's message.max.bytes (1 MB by default, 1048588 bytes) applies to a
// whole record batch, so batches stay well under it with the record
// overhead kafka-go does not count.
const DefaultBatchBytes = 512 << 10

// MaxBatchBytes bounds PublisherParams.BatchBytes: a record batch's
// length is a signed 32-bit field of the Kafka protocol, and so is a
// broker's message.max.bytes.
const MaxBatchBytes = math.MaxInt32

// PublisherParams configure a Publisher.
type PublisherParams struct {
	Brokers []string // required
	// BatchBytes bounds the messages of one partition's record batch
	// (uncompressed key and value bytes); default DefaultBatchBytes, at
	// most MaxBatchBytes. A
	// single larger message fails with kafkago.MessageTooLargeError.
	BatchBytes int64
	// BatchSize bounds the messages of one batch; default 5000, at most
	// MaxBatchSize (kafka-go's writer reserves room for a batch of it:
	// at 2,000,000,000 publish stopped, out of memory).
	BatchSize int
	// Compression: "", "none", "gzip", "snappy", "lz4" or "zstd".
	Compression string
	// Security: TLS and SASL; nil for plaintext.
	Security *Security
	// MaxAttempts is how often a batch is tried before its records fail;
	// default kafka-go's 10 (about 7 s of backoff against a broker that
	// is gone).
	MaxAttempts int
}

// ParseCompression maps a codec name to kafka-go's codec ("" and "none"
// are no compression).
func ParseCompression(name string) (kafkago.Compression, error) {
	switch name {
	case "", "none":
		return 0, nil
	case "gzip":
		return kafkago.Gzip, nil
	case "snappy":
		return kafkago.Snappy, nil
	case "lz4":
		return kafkago.Lz4, nil
	case "zstd":
		return kafkago.Zstd, nil
	}
	return 0, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// NewPublisher returns a synchronous, durable (acks=all) publisher with
// the default settings; Close it when done.
func NewPublisher(brokers []string) (*Publisher, error) {
	return NewPublisherWith(PublisherParams{Brokers: brokers})
}

// NewPublisherWith returns a synchronous, durable (acks=all) publisher;
// Close it when done.
func NewPublisherWith(p PublisherParams) (*Publisher, error) {
	if len(p.Brokers) == 0 {
		return nil, errors.New("kafka: publisher: brokers are required")
	}
	if p.BatchBytes <= 0 {
		p.BatchBytes = DefaultBatchBytes
	}
	if p.BatchSize <= 0 {
		p.BatchSize = 5000
	}
	if p.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("kafka: publisher: BatchSize %d is over %d", p.BatchSize, MaxBatchSize)
	}
	if p.BatchBytes > MaxBatchBytes {
		return nil, fmt.Errorf("kafka: publisher: BatchBytes %d is over %d", p.BatchBytes, MaxBatchBytes)
	}
	codec, err := ParseCompression(p.Compression)
	if err != nil {
		return nil, fmt.Errorf("kafka: publisher: %w", err)
	}
	tr, err := p.Security.transport("permitd-publish")
	if err != nil {
		return nil, fmt.Errorf("kafka: publisher: %w", err)
	}
	return &Publisher{transport: tr, batchBytes: p.BatchBytes, w: &kafkago.Writer{
		Addr:         kafkago.TCP(p.Brokers...),
		Balancer:     &kafkago.Murmur2Balancer{},
		Transport:    tr,
		RequiredAcks: kafkago.RequireAll,
		// A synchronous writer flushes a partial batch only after
		// BatchTimeout (1s by default): keep it short.
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    p.BatchSize,
		BatchBytes:   p.BatchBytes,
		Compression:  codec,
		MaxAttempts:  p.MaxAttempts,
	}}, nil
}

// Record is one raw message for PublishRaw.
type Record struct {
	Topic      string
	Key, Value []byte
}

// Publish writes envelopes; it returns once all are durable.
func (p *Publisher) Publish(ctx context.Context, envs ...events.Envelope) error {
	recs := make([]Record, 0, len(envs))
	for _, env := range envs {
		topic, err := events.TopicFor(env.Type)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(env)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", env.Type, env.EntityID, err)
		}
		recs = append(recs, Record{Topic: topic, Key: []byte(env.EntityID), Value: raw})
	}
	return p.PublishRaw(ctx, recs...)
}

// PublishRaw writes records as given, in order per partition. When only
// some fail the error is a kafkago.WriteErrors (errors.As) whose entry i
// is record i's error (nil once it is durable); a record larger than
// BatchBytes fails alone with kafkago.MessageTooLargeError and the others
// are written.
func (p *Publisher) PublishRaw(ctx context.Context, recs ...Record) error {
	msgs := make([]kafkago.Message, 0, len(recs))
	var idx []int // recs index of each message, when some are too large
	var errs kafkago.WriteErrors
	for i, r := range recs {
		if int64(len(r.Key)+len(r.Value)+recordOverhead) > p.batchBytes {
			if errs == nil {
				errs = make(kafkago.WriteErrors, len(recs))
				for k := range msgs {
					idx = append(idx, k)
				}
			}
			errs[i] = kafkago.MessageTooLargeError{Message: kafkago.Message{Topic: r.Topic, Key: r.Key}}
			continue
		}
		if errs != nil {
			idx = append(idx, i)
		}
		msgs = append(msgs, kafkago.Message{Topic: r.Topic, Key: r.Key, Value: r.Value})
	}
	var err error
	if len(msgs) > 0 {
		err = p.w.WriteMessages(ctx, msgs...)
	}
	if errs == nil {
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		return nil
	}
	var we kafkago.WriteErrors
	switch {
	case err == nil:
	case errors.As(err, &we):
		for k, e := range we {
			errs[idx[k]] = e
		}
	default:
		return fmt.Errorf("publish: %w", err)
	}
	return fmt.Errorf("publish: %w", errs)
}

// recordOverhead is more than kafka-go counts per record beside its key
// and value (22 bytes without headers).
const recordOverhead = 64

// Close flushes and closes the publisher.
func (p *Publisher) Close() error {
	err := p.w.Close()
	p.transport.CloseIdleConnections()
	return err
}

// TopicConfig is one topic to create.
type TopicConfig struct {
	Name       string
	Partitions int
}

// DefaultTopics are the entity topics with their suggested partition
// counts, and the dead-letter topic.
func DefaultTopics() []TopicConfig {
	out := make([]TopicConfig, 0, len(events.TopicSpecs)+1)
	for _, s := range events.TopicSpecs {
		out = append(out, TopicConfig{Name: s.Name, Partitions: s.Partitions})
	}
	return append(out, TopicConfig{Name: events.DeadLetterTopic, Partitions: 1})
}

// CreateTopics creates the topics that do not exist yet; existing ones
// are left as they are.
func CreateTopics(ctx context.Context, brokers []string, replicationFactor int, topics ...TopicConfig) error {
	return CreateTopicsWith(ctx, brokers, nil, replicationFactor, topics...)
}

// CreateTopicsWith is CreateTopics over TLS and SASL as sec says.
func CreateTopicsWith(ctx context.Context, brokers []string, sec *Security, replicationFactor int, topics ...TopicConfig) error {
	tr, err := sec.transport("permitd-admin")
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	cl := &kafkago.Client{Addr: kafkago.TCP(brokers...), Transport: tr, Timeout: 10 * time.Second}
	req := &kafkago.CreateTopicsRequest{}
	for _, t := range topics {
		req.Topics = append(req.Topics, kafkago.TopicConfig{Topic: t.Name, NumPartitions: t.Partitions, ReplicationFactor: replicationFactor})
	}
	res, err := cl.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	var errs []error
	for name, err := range res.Errors {
		if err != nil && !errors.Is(err, kafkago.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
