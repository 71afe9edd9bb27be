package kafka_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/readmodel/memory"
)

// Every kind of poison message lands in the dead-letter topic with its
// reason and source position, exactly once each, and the partition keeps
// moving: the valid events around them are all applied.
func TestPoisonMessagesGoToDeadLetterTopic(t *testing.T) {
	b := newBroker(t, 3)
	valid := locations(t, "v", 40, 1)
	enc := func(env events.Envelope) []byte {
		raw, err := json.Marshal(env)
		require.NoError(t, err)
		return raw
	}
	// mutate returns a valid location envelope's JSON changed by fn.
	mutate := func(id string, fn func(map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(enc(location(t, id, 1)), &m))
		fn(m)
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		return raw
	}
	big := location(t, "poison-oversize", 1)
	big.Data = json.RawMessage(strings.Replace(string(big.Data), `"name":"City poison-oversize"`, `"name":"`+strings.Repeat("x", 8000)+`"`, 1))
	type poisonCase struct {
		name   string
		key    string
		value  []byte
		reason string
	}
	poison := []poisonCase{
		{"malformed JSON", "poison-malformed", []byte(`{"schema_version":1,`), "envelope"},
		{"truncated envelope", "poison-truncated", enc(location(t, "poison-truncated", 1))[:60], "envelope"},
		{"invalid UTF-8", "poison-utf8", bytes.Replace(enc(location(t, "poison-utf8", 1)), []byte("City"), []byte("C\xffty"), 1), "UTF-8"},
		{"unknown schema version", "poison-version", mutate("poison-version", func(m map[string]any) { m["schema_version"] = 2 }), "schema_version"},
		{"unknown type", "poison-type", mutate("poison-type", func(m map[string]any) { m["type"] = "location.renamed" }), "unknown type"},
		{"unknown field", "poison-field", mutate("poison-field", func(m map[string]any) { m["extra"] = true }), "unknown field"},
		{"schema violation", "poison-schema", mutate("poison-schema", func(m map[string]any) { m["data"].(map[string]any)["lat"] = 200 }), "lat/lon"},
		{"delete with data", "poison-delete", mutate("poison-delete", func(m map[string]any) { m["type"] = "location.deleted" }), "carries no data"},
		{"key differs from entity_id", "poison-other-key", enc(location(t, "someone-else", 1)), "differs from entity_id"},
		{"over the size limit (the broker accepts it)", "poison-oversize", enc(big), "exceeds the limit"},
	}
	require.Greater(t, len(poison[len(poison)-1].value), 4096, "oversize case must exceed the indexer's 4096-byte limit")

	var recs []kafka.Record
	for i, env := range valid {
		recs = append(recs, kafka.Record{Topic: locTopic, Key: []byte(env.EntityID), Value: enc(env)})
		if i%4 == 0 && i/4 < len(poison) {
			p := poison[i/4]
			recs = append(recs, kafka.Record{Topic: locTopic, Key: []byte(p.key), Value: p.value})
		}
	}
	b.publishRaw(recs...)

	dlq, err := kafka.NewDeadLetterWriter(kafka.DeadLetterParams{Brokers: b.addrs})
	require.NoError(t, err)
	defer dlq.Close()
	store := memory.New(memory.Params{})
	m := indexer.NewMetrics(prometheus.NewRegistry())
	ix, err := indexer.New(indexer.Params{Writer: store, Lookup: store, DeadLetter: dlq.DeadLetter, MaxMessageBytes: 4096, Metrics: m, Logger: testLogger()})
	require.NoError(t, err)
	p := parserParams(b, "", ix)
	p.BatchSize = 7 // poison spread over many batches
	c := start(t, p)
	eventually(t, 20*time.Second, "caught up", c.CaughtUp)

	require.Equal(t, expected(t, valid...), stateOf(t, store), "every valid event around the poison is applied")
	require.Equal(t, int64(len(poison)), ix.Progress().DeadLetters)
	require.Equal(t, float64(len(poison)), value(t, m.DeadLetters.WithLabelValues(locTopic)))

	// The dead-letter topic holds each poison message once, with headers
	// naming its reason and exact source position.
	source := map[string]int64{} // key -> "partition/offset"
	sourcePart := map[string]int{}
	for _, msg := range b.readAll(locTopic) {
		if strings.HasPrefix(string(msg.Key), "poison-") {
			source[string(msg.Key)] = msg.Offset
			sourcePart[string(msg.Key)] = msg.Partition
		}
	}
	dead := b.readAll(events.DeadLetterTopic)
	require.Len(t, dead, len(poison))
	got := map[string]bool{}
	for _, msg := range dead {
		h := map[string]string{}
		for _, hd := range msg.Headers {
			h[hd.Key] = string(hd.Value)
		}
		key := string(msg.Key)
		require.False(t, got[key], "dead-lettered twice: %s", key)
		got[key] = true
		require.Equal(t, locTopic, h[kafka.HeaderSourceTopic], key)
		require.Equal(t, strconv.Itoa(sourcePart[key]), h[kafka.HeaderSourcePartition], key)
		require.Equal(t, strconv.FormatInt(source[key], 10), h[kafka.HeaderSourceOffset], key)
		i := slices.IndexFunc(poison, func(p poisonCase) bool { return p.key == key })
		require.GreaterOrEqual(t, i, 0, "dead-lettered a message that is not poison: %s", key)
		require.Contains(t, h[kafka.HeaderReason], poison[i].reason, poison[i].name)
		require.Equal(t, poison[i].value, msg.Value, "%s: the original bytes are kept", poison[i].name)
	}
	require.Len(t, got, len(poison))
}

// A dead letter larger than MaxValueBytes is cut, and says how big the
// original was.
func TestDeadLetterCutsOversizedValues(t *testing.T) {
	b := newBroker(t, 1)
	dlq, err := kafka.NewDeadLetterWriter(kafka.DeadLetterParams{Brokers: b.addrs, MaxValueBytes: 100})
	require.NoError(t, err)
	defer dlq.Close()
	m := indexer.Message{Topic: locTopic, Partition: 0, Offset: 42, Key: []byte("k"), Value: bytes.Repeat([]byte("a"), 1000)}
	require.NoError(t, dlq.DeadLetter(t.Context(), m, events.ErrInvalid))
	dead := b.readAll(events.DeadLetterTopic)
	require.Len(t, dead, 1)
	require.Len(t, dead[0].Value, 100)
	h := map[string]string{}
	for _, hd := range dead[0].Headers {
		h[hd.Key] = string(hd.Value)
	}
	require.Equal(t, "1000", h[kafka.HeaderOriginalSize])
	require.Equal(t, "42", h[kafka.HeaderSourceOffset])
}
