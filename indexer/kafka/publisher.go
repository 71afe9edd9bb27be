package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/permitd/permitd/events"
)

// Publisher writes envelopes to their family's topic, keyed by entity_id
// (`permitd publish`, tests, benchmarks). Keys are partitioned with
// murmur2 like the Java client's default partitioner, so a JVM pipeline
// and permitd put an entity on the same partition.
type Publisher struct {
	w         *kafkago.Writer
	transport *kafkago.Transport
}

// NewPublisher returns a synchronous, durable (acks=all) publisher; Close
// it when done.
func NewPublisher(brokers []string) (*Publisher, error) {
	if len(brokers) == 0 {
		return nil, errors.New("kafka: publisher: brokers are required")
	}
	tr := &kafkago.Transport{ClientID: "permitd-publish"}
	return &Publisher{transport: tr, w: &kafkago.Writer{
		Addr:         kafkago.TCP(brokers...),
		Balancer:     &kafkago.Murmur2Balancer{},
		Transport:    tr,
		RequiredAcks: kafkago.RequireAll,
		// A synchronous writer flushes a partial batch only after
		// BatchTimeout (1s by default): keep it short.
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    5000,
		BatchBytes:   16 << 20,
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

// PublishRaw writes records as given, in order per partition.
func (p *Publisher) PublishRaw(ctx context.Context, recs ...Record) error {
	msgs := make([]kafkago.Message, len(recs))
	for i, r := range recs {
		msgs[i] = kafkago.Message{Topic: r.Topic, Key: r.Key, Value: r.Value}
	}
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

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
	tr := &kafkago.Transport{ClientID: "permitd-admin"}
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
