package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
)

// A fetch answer's buffer goes back to the consumer's pool only once
// every batch holding one of its messages is done: here each buffer
// given back is overwritten at once (ScribbleReleased), the partition's
// next batch is parsed while the last is handled (a Parser), and every
// message must still read as published both when it is parsed and when
// it is handled. The answers of about 128 KiB are pooled, and the test
// fails unless buffers were used again.
func TestAnswerBuffersReusedOnlyOnceDone(t *testing.T) {
	defer kafka.ScribbleReleased()()
	b := newBroker(t, 1)
	const n = 4000
	value := func(i int) []byte {
		return append([]byte(fmt.Sprintf("%08d:", i)), bytes.Repeat([]byte{byte('a' + i%26)}, 1015)...)
	}
	recs := make([]kafka.Record, n)
	for i := range recs {
		recs[i] = kafka.Record{Topic: locTopic, Key: []byte(fmt.Sprintf("k%d", i)), Value: value(i)}
	}
	for lo := 0; lo < n; lo += 100 { // record batches of about 100 KiB
		b.publishRaw(recs[lo : lo+100]...)
	}

	p := fastParams(b, "", nil)
	p.Topics = []string{locTopic}
	p.MaxFetchBytes = 128 << 10 // an answer a record batch: 40, each pooled (pooledAnswerMin is 64 KiB)
	chk := &checkingParser{t: t, value: value}
	p.Parser = chk
	c := start(t, p)
	eventually(t, 30*time.Second, "caught up", c.CaughtUp)
	require.Equal(t, int64(n), chk.handled.Load())
	require.Positive(t, c.AnswersReused(), "no answer buffer was used again")
}

// checkingParser checks each message's bytes against what was published
// at offset Offset, as it is parsed and again as it is handled.
type checkingParser struct {
	t       *testing.T
	value   func(int) []byte
	handled atomic.Int64
}

func (p *checkingParser) check(when string, msgs []indexer.Message) {
	for _, m := range msgs {
		if want := p.value(int(m.Offset)); !bytes.Equal(m.Value, want) {
			p.t.Errorf("offset %d %s: %.20q, want %.20q", m.Offset, when, m.Value, want)
		}
	}
}

func (p *checkingParser) ParseInto(_ *indexer.Parsed, msgs []indexer.Message) *indexer.Parsed {
	p.check("parsed", msgs)
	return &indexer.Parsed{}
}

func (p *checkingParser) HandleParsed(_ context.Context, msgs []indexer.Message, _ *indexer.Parsed) error {
	time.Sleep(time.Millisecond) // the fetcher gets ahead
	p.check("handled", msgs)
	p.handled.Add(int64(len(msgs)))
	return nil
}
