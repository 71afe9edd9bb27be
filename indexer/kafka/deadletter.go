package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
)

// Dead-letter headers. The value and key are the original message's.
const (
	HeaderReason          = "permitd-dlq-reason"
	HeaderSourceTopic     = "permitd-dlq-source-topic"
	HeaderSourcePartition = "permitd-dlq-source-partition"
	HeaderSourceOffset    = "permitd-dlq-source-offset"
	// HeaderOriginalSize is set when the value was cut to MaxValueBytes:
	// the original size in bytes (the original stays at its source offset
	// until retention removes it).
	HeaderOriginalSize = "permitd-dlq-original-size"
)

// DeadLetterParams configure a DeadLetterWriter.
type DeadLetterParams struct {
	Brokers []string // required
	Topic   string   // default events.DeadLetterTopic
	// MaxValueBytes cuts longer values (an oversized message may be too
	// big for the dead-letter topic too); default 512 KiB.
	MaxValueBytes int
	WriteTimeout  time.Duration // per attempt; default 10s
	Security      *Security     // TLS and SASL; nil for plaintext
}

// DeadLetterWriter stores poison messages in the dead-letter topic. Its
// DeadLetter method is an indexer.DeadLetterFunc.
type DeadLetterWriter struct {
	p         DeadLetterParams
	w         *kafkago.Writer
	transport *kafkago.Transport
}

// NewDeadLetterWriter returns a writer; Close it when done.
func NewDeadLetterWriter(p DeadLetterParams) (*DeadLetterWriter, error) {
	if len(p.Brokers) == 0 {
		return nil, errors.New("kafka: dead letters: Brokers is required")
	}
	if p.Topic == "" {
		p.Topic = events.DeadLetterTopic
	}
	if p.MaxValueBytes <= 0 {
		p.MaxValueBytes = 512 << 10
	}
	if p.WriteTimeout <= 0 {
		p.WriteTimeout = 10 * time.Second
	}
	tr, err := p.Security.transport("permitd-indexer-dlq")
	if err != nil {
		return nil, fmt.Errorf("kafka: dead letters: %w", err)
	}
	return &DeadLetterWriter{p: p, transport: tr, w: &kafkago.Writer{
		Addr:      kafkago.TCP(p.Brokers...),
		Topic:     p.Topic,
		Balancer:  &kafkago.Murmur2Balancer{},
		Transport: tr,
		// Durable and synchronous: WriteMessages returns once every
		// in-sync replica has the dead letter. One message per write, so
		// nothing waits for a batch to fill.
		RequiredAcks: kafkago.RequireAll,
		BatchSize:    1,
		BatchTimeout: time.Millisecond,
		BatchBytes:   int64(p.MaxValueBytes) + 64<<10,
		WriteTimeout: p.WriteTimeout,
		MaxAttempts:  3,
	}}, nil
}

// DeadLetter implements indexer.DeadLetterFunc: it returns nil once the
// message is durable in the dead-letter topic with its reason and source
// position in headers. An error makes the batch fail and be retried, so a
// dead letter is stored at least once (a retried batch may store its
// earlier dead letters again).
func (d *DeadLetterWriter) DeadLetter(ctx context.Context, m indexer.Message, reason error) error {
	msg := kafkago.Message{
		Key:   m.Key,
		Value: m.Value,
		Headers: []kafkago.Header{
			{Key: HeaderReason, Value: []byte(reason.Error())},
			{Key: HeaderSourceTopic, Value: []byte(m.Topic)},
			{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(m.Partition))},
			{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
		},
	}
	if len(msg.Value) > d.p.MaxValueBytes {
		msg.Value = msg.Value[:d.p.MaxValueBytes]
		msg.Headers = append(msg.Headers, kafkago.Header{Key: HeaderOriginalSize, Value: []byte(strconv.Itoa(len(m.Value)))})
	}
	if len(msg.Key) > 1024 {
		msg.Key = msg.Key[:1024]
	}
	if err := d.w.WriteMessages(ctx, msg); err != nil {
		return fmt.Errorf("write to %s: %w", d.p.Topic, err)
	}
	return nil
}

// Close flushes and closes the writer and its connections.
func (d *DeadLetterWriter) Close() error {
	err := d.w.Close()
	d.transport.CloseIdleConnections()
	return err
}

var _ indexer.DeadLetterFunc = (*DeadLetterWriter)(nil).DeadLetter
