package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	kafkasrc "github.com/permitd/permitd/indexer/kafka"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/readmodel/memory"
)

// defaultBroker is kfake with a real broker's default limits (kfake's
// message.max.bytes default is 1 MB like Kafka's).
func defaultBroker(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}

var (
	gazetteerOnce sync.Once
	gazetteerFile string
	gazetteerN    int
	gazetteerErr  error
)

// gazetteerNDJSON writes the gazetteer's location events once per test
// binary.
func gazetteerNDJSON(t *testing.T) (string, int) {
	t.Helper()
	gazetteerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "permitd-gazetteer")
		if err != nil {
			gazetteerErr = err
			return
		}
		gazetteerFile = filepath.Join(dir, "locations.ndjson")
		f, err := os.Create(gazetteerFile)
		if err != nil {
			gazetteerErr = err
			return
		}
		defer f.Close()
		var rep gazetteer.Report
		rep, gazetteerErr = gazetteer.WriteNDJSON(context.Background(), f)
		gazetteerN = rep.Events
	})
	require.NoError(t, gazetteerErr)
	return gazetteerFile, gazetteerN
}

// The gazetteer's ~98k location events publish with the default settings
// to a broker with default limits (the issue: every 16 MB batch was
// refused with Message Size Too Large), with a progress line, and land
// whole: the topic holds every event.
func TestPublishGazetteerToADefaultBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes ~98k events")
	}
	file, n := gazetteerNDJSON(t)
	require.Greater(t, n, 90_000)
	brokers := defaultBroker(t)
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--compression", "lz4", "--progress", "1ns", "--log-level", "error"}, kafkaNoEnv, &out, &errOut)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("published %d events\n", n), out.String())
	require.Contains(t, errOut.String(), "% of the file")
	require.Contains(t, errOut.String(), "progress: "+fmt.Sprint(n)+" events")
	require.Equal(t, int64(n), topicSize(t, brokers, "permitd.locations.v1"))
}

// topicSize sums the end offsets of topic's partitions.
func topicSize(t *testing.T, brokers, topic string) int64 {
	t.Helper()
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafkago.Client{Addr: kafkago.TCP(splitCSV(brokers)...), Transport: tr, Timeout: 10 * time.Second}
	md, err := cl.Metadata(t.Context(), &kafkago.MetadataRequest{Topics: []string{topic}})
	require.NoError(t, err)
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, p := range md.Topics[0].Partitions {
		req.Topics[topic] = append(req.Topics[topic], kafkago.LastOffsetOf(p.ID))
	}
	res, err := cl.ListOffsets(t.Context(), req)
	require.NoError(t, err)
	var n int64
	for _, p := range res.Topics[topic] {
		require.NoError(t, p.Error)
		n += p.LastOffset
	}
	return n
}

// Every codec publishes (a small file, through the same broker).
func TestPublishCompressionCodecs(t *testing.T) {
	brokers, file := kafkaFixture(t, 30)
	for i, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		var out bytes.Buffer
		err := run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--compression", codec, "--log-level", "error"}, kafkaNoEnv, &out, io.Discard)
		require.NoError(t, err, codec)
		require.Equal(t, "published 31 events\n", out.String())
		require.Equal(t, int64(31*(i+1)), topicSize(t, brokers, "permitd.locations.v1"))
	}
	err := run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--compression", "brotli"}, kafkaNoEnv, io.Discard, io.Discard)
	require.ErrorContains(t, err, `compression "brotli"`)
}

// TestPublishConfigBounds: values past what the Kafka protocol or the
// memory holds are refused before anything is read or sent. --batch
// 2000000000 used to stop publish, out of memory (kafka-go reserves room
// for a whole batch); a replication factor past 32767 was truncated to
// 16 bits (65535 is -1, the broker's default).
func TestPublishConfigBounds(t *testing.T) {
	for args, want := range map[string]string{
		"--batch 0":                        "config: batch must be 1 to 100000",
		"--batch 2000000000":               "config: batch must be 1 to 100000",
		"--batch-bytes 1000":               "config: batch-bytes must be 1024 to 2147483647",
		"--batch-bytes 3000000000":         "config: batch-bytes must be 1024 to 2147483647",
		"--replication-factor 65535":       "config: replication-factor must be 1 to 32767",
		"--partitions -1":                  "config: partitions must be 0 to 2147483647",
		"--partitions 3000000000":          "config: partitions must be 0 to 2147483647",
		"--replication-factor 0 --batch 1": "config: replication-factor must be 1 to 32767",
		"--linger -1ms":                    "config: linger must be 0 to 1h",
		"--linger 2h":                      "config: linger must be 0 to 1h",
	} {
		err := run(t.Context(), append([]string{"publish", "--brokers", "127.0.0.1:9", "--file", "-"}, strings.Fields(args)...), kafkaNoEnv, io.Discard, io.Discard)
		require.EqualError(t, err, want, args)
	}
}

// Bad lines and records the broker refuses are summarised, a count per
// kind with the first offending line; the good ones are published; the
// exit status is an error.
func TestPublishSummarisesErrors(t *testing.T) {
	brokers, file := kafkaFixture(t, 3) // lines 1-3 locations, 4 a delete, 5 blank
	big, err := events.New(events.LocationUpserted, "gbig", 1, time.Unix(1700000000, 0), "test", events.Location{
		GeoType: "city", Name: strings.Repeat("N", 2<<20), DisplayName: "C, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
	})
	require.NoError(t, err)
	rawBig, err := json.Marshal(big)
	require.NoError(t, err)
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString(`{"schema_version":1}` + "\n") // line 6
	_, _ = f.Write(append(rawBig, '\n'))                // line 7
	_, _ = f.WriteString(`not json` + "\n")             // line 8
	// Line 9 is over the 16 MiB a line may take: counted, and the file
	// read on (line 10, the first line again, is published).
	first, err := os.ReadFile(file)
	require.NoError(t, err)
	_, _ = f.WriteString(`{"x":"` + strings.Repeat("z", 16<<20) + `"}` + "\n")
	_, _ = f.WriteString(strings.SplitN(string(first), "\n", 2)[0] + "\n")
	require.NoError(t, f.Close())

	var out bytes.Buffer
	err = run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--log-level", "error"}, kafkaNoEnv, &out, io.Discard)
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "4 of 9 events not published")
	require.Contains(t, msg, "invalid event: 3 (first at line 6:")
	require.Contains(t, msg, "record larger than --batch-bytes: 1 (first at line 7:")
	require.Equal(t, "published 5 events\n", out.String())
	require.Equal(t, int64(5), topicSize(t, brokers, "permitd.locations.v1"))

	// Over the broker's limit but within --batch-bytes: the broker's
	// refusal is summarised the same way.
	err = run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--batch-bytes", fmt.Sprint(4 << 20), "--log-level", "error"}, kafkaNoEnv, io.Discard, io.Discard)
	require.ErrorContains(t, err, "Message Size Too Large: 1 (first at line 7:")
}

// A stream on stdin that brings a few lines and then waits is published
// as it comes: a batch waits at most --linger for more lines, not for
// 5,000 of them or the end of the input (it waited for those before). An
// interrupt writes the lines read before it and ends the run with ctx's
// error.
func TestPublishStreamsAsLinesCome(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.NoError(t, kafkasrc.CreateTopicsWith(t.Context(), c.ListenAddrs(), nil, 1, kafkasrc.DefaultTopics()...))
	brokers := strings.Join(c.ListenAddrs(), ",")
	f := &eventFile{t: t, at: time.Unix(1700000000, 0)}
	for i := range 5 {
		f.add(events.LocationUpserted, fmt.Sprintf("g%04d", i), 1, events.Location{
			GeoType: "city", Name: "C", DisplayName: "C, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		})
	}
	lines := strings.SplitAfter(f.buf.String(), "\n") // each ends with its newline
	pub, err := kafkasrc.NewPublisherWith(kafkasrc.PublisherParams{Brokers: c.ListenAddrs()})
	require.NoError(t, err)
	defer pub.Close()

	stream := func(linger time.Duration) (*io.PipeWriter, context.CancelFunc, <-chan error, *publishResult) {
		pr, pw := io.Pipe()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		res := new(publishResult)
		go func() {
			var err error
			*res, err = publishEvents(ctx, pr, pub, 5000, linger, &progress{w: io.Discard})
			done <- err
		}()
		return pw, cancel, done, res
	}
	published := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for topicSize(t, brokers, "permitd.locations.v1") < n {
			require.True(t, time.Now().Before(deadline), "not published while the stream is open")
			time.Sleep(10 * time.Millisecond)
		}
	}

	pw, cancel, done, res := stream(20 * time.Millisecond)
	_, err = io.WriteString(pw, lines[0]+lines[1]+lines[2])
	require.NoError(t, err)
	published(3) // the stream is still open
	require.NoError(t, pw.Close())
	require.NoError(t, <-done)
	require.Equal(t, 3, res.published)
	cancel()

	// Lines held by a long linger are written when the run is interrupted.
	pw, cancel, done, res = stream(time.Hour)
	defer pw.Close()
	_, err = io.WriteString(pw, lines[3]+lines[4])
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // decoded and taken: the write returned once they were read
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Equal(t, 2, res.published)
	require.Equal(t, int64(5), topicSize(t, brokers, "permitd.locations.v1"))
}

// A gzip or zstd file is published, and checked by the dry run, as the
// NDJSON it holds; the progress line counts the file's own bytes. Before,
// a .gz file was read as lines of binary, each an invalid event.
func TestPublishCompressedFiles(t *testing.T) {
	brokers, file := kafkaFixture(t, 20) // 20 locations and a delete
	plain, err := os.ReadFile(file)
	require.NoError(t, err)
	gzFile := filepath.Join(t.TempDir(), "events.ndjson.gz")
	writeGzip(t, gzFile, plain)
	var zs bytes.Buffer
	zsw, err := zstd.NewWriter(&zs)
	require.NoError(t, err)
	_, _ = zsw.Write(plain)
	require.NoError(t, zsw.Close())
	zsFile := filepath.Join(t.TempDir(), "events.ndjson.zst")
	require.NoError(t, os.WriteFile(zsFile, zs.Bytes(), 0o600))

	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"publish", "--dry-run", "--file", gzFile}, kafkaNoEnv, &out, io.Discard))
	require.Equal(t, "dry run: 21 events valid, 0 invalid; nothing published\n", out.String())
	for i, f := range []string{gzFile, zsFile} {
		out.Reset()
		var errOut bytes.Buffer
		require.NoError(t, run(t.Context(), []string{"publish", "--brokers", brokers, "--file", f, "--progress", "1ns"}, kafkaNoEnv, &out, &errOut))
		require.Equal(t, "published 21 events\n", out.String())
		require.Contains(t, errOut.String(), "file is compressed; reading it uncompressed")
		require.Contains(t, errOut.String(), "progress: 21 events")
		require.Contains(t, errOut.String(), "100% of the file")
		require.Equal(t, int64(21*(i+1)), topicSize(t, brokers, "permitd.locations.v1"))
	}
}

// A broker gone in the middle of a file stops publish at the first batch
// it does not take, with the reason, instead of counting every later line
// as "write failed" after the writer's retries for each batch: with the
// broker gone a 200 MB file took 4.5 minutes so. The batch before the
// broker went is published and counted.
func TestPublishStopsWhenTheBrokerIsGone(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	f := &eventFile{t: t, at: time.Unix(1700000000, 0)}
	for i := range 60 {
		f.add(events.LocationUpserted, fmt.Sprintf("g%04d", i), 1, events.Location{
			GeoType: "city", Name: "C", DisplayName: "C, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		})
	}
	lines := strings.SplitAfter(strings.TrimSuffix(f.buf.String(), "\n"), "\n")
	require.NoError(t, kafkasrc.CreateTopicsWith(t.Context(), c.ListenAddrs(), nil, 1, kafkasrc.DefaultTopics()...))
	pub, err := kafkasrc.NewPublisherWith(kafkasrc.PublisherParams{Brokers: c.ListenAddrs(), MaxAttempts: 2})
	require.NoError(t, err)
	defer pub.Close()

	// One line a read, so that the file is read only a little ahead of
	// publishing; the broker goes once the first batch of 10 is published
	// (the progress line it prints).
	var served atomic.Int64 // the reading goroutine may still read after the run returned
	in := readFunc(func(b []byte) (int, error) {
		k := served.Load()
		if k == int64(len(lines)) {
			return 0, io.EOF
		}
		served.Store(k + 1)
		return copy(b, lines[k]), nil
	})
	var once sync.Once
	closing := writerFunc(func(b []byte) (int, error) {
		once.Do(c.Close)
		return len(b), nil
	})
	res, err := publishEvents(t.Context(), in, pub, 10, 0, &progress{w: closing, every: time.Nanosecond})
	require.ErrorContains(t, err, "stopped at line 11: the broker did not take its batch after the writer's retries")
	require.Equal(t, 10, res.published)
	require.Zero(t, res.errs.total(), "%s", res.errs)
	require.Less(t, served.Load(), int64(len(lines)), "the file is not read to its end")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// --dry-run checks every line against its schema and the projection's
// rules, names each bad one and publishes nothing; no broker is needed.
func TestPublishDryRun(t *testing.T) {
	_, file := kafkaFixture(t, 2)
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	good, err := os.ReadFile(file)
	require.NoError(t, err)
	first := strings.SplitN(string(good), "\n", 2)[0]
	_, _ = f.WriteString(strings.Replace(first, `"state":"WA"`, `"state":"Washington"`, 1) + "\n") // line 5
	_, _ = f.WriteString(`{"type":"thing.upserted"}` + "\n")                                       // line 6
	_, _ = f.WriteString(`"` + strings.Repeat("z", 16<<20) + `"` + "\n")                           // line 7: over 16 MiB
	_, _ = f.WriteString("[1]\n")                                                                  // line 8: read on after it
	// Line 9: valid against the schema, but its entity_id is not its
	// source's and number's, which the indexer refuses (dead letter).
	v := 1.0
	permit, err := events.New(events.PermitUpserted, "other:1", 1, time.Unix(1700000000, 0), "src", events.Permit{
		PermitNumber: "1", PermitType: "Building", Valuation: &v, Source: "src", Address: events.PermitAddress{Line: "1 MAIN ST", State: "WA"},
	})
	require.NoError(t, err)
	line9, err := json.Marshal(permit)
	require.NoError(t, err)
	_, _ = f.Write(append(line9, '\n'))
	require.NoError(t, f.Close())

	var out bytes.Buffer
	err = run(t.Context(), []string{"publish", "--dry-run", "--file", file}, kafkaNoEnv, &out, io.Discard)
	require.ErrorContains(t, err, "5 of 8 events invalid")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 6, out.String())
	require.True(t, strings.HasPrefix(lines[0], "line 5: "), lines[0])
	require.Contains(t, lines[0], "/data/state")
	require.True(t, strings.HasPrefix(lines[1], "line 6: "), lines[1])
	require.Contains(t, lines[1], `unknown event type "thing.upserted"`)
	require.Equal(t, "line 7: invalid event: line longer than 16 MiB (16777218 bytes)", lines[2])
	require.Equal(t, "line 8: invalid event: not a JSON object: a JSON array, where an object goes", lines[3])
	require.Equal(t, `line 9: invalid event: permit other:1: entity_id must be "src:1"`, lines[4])
	require.Equal(t, "dry run: 3 events valid, 5 invalid; nothing published", lines[5])

	_, clean := kafkaFixture(t, 2)
	out.Reset()
	require.NoError(t, run(t.Context(), []string{"publish", "--dry-run", "--file", clean}, kafkaNoEnv, &out, io.Discard))
	require.Equal(t, "dry run: 3 events valid, 0 invalid; nothing published\n", out.String())
}

// A poison message and a message over the indexer's size limit still end
// in the dead-letter topic of a broker with default limits (the value cut
// to the dead-letter writer's limit).
func TestDeadLettersOnADefaultBroker(t *testing.T) {
	brokers := defaultBroker(t)
	ctx := t.Context()
	require.NoError(t, kafkasrc.CreateTopics(ctx, splitCSV(brokers), 1, kafkasrc.DefaultTopics()...))
	big := `{"schema_version":1,"pad":"` + strings.Repeat("x", 900<<10) + `"}` // under the broker's 1 MB, over the indexer's limit
	pub, err := kafkasrc.NewPublisherWith(kafkasrc.PublisherParams{Brokers: splitCSV(brokers), BatchBytes: 1000 << 10})
	require.NoError(t, err)
	require.NoError(t, pub.PublishRaw(ctx,
		kafkasrc.Record{Topic: "permitd.permits.v1", Key: []byte("poison"), Value: []byte(`{"schema_version":1`)},
		kafkasrc.Record{Topic: "permitd.permits.v1", Key: []byte("big"), Value: []byte(big)},
	))
	require.NoError(t, pub.Close())

	dlq, err := kafkasrc.NewDeadLetterWriter(kafkasrc.DeadLetterParams{Brokers: splitCSV(brokers)})
	require.NoError(t, err)
	defer dlq.Close()
	store := memory.New(memory.Params{})
	ix, err := indexer.New(indexer.Params{Writer: store, DeadLetter: dlq.DeadLetter, MaxMessageBytes: 512 << 10})
	require.NoError(t, err)
	c, err := kafkasrc.New(kafkasrc.Params{Brokers: splitCSV(brokers), Parser: ix, Settle: ix.Settle, MaxFetchBytes: 4 << 20})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !c.CaughtUp() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)
	require.True(t, c.CaughtUp())
	require.Equal(t, int64(2), ix.Progress().DeadLetters)

	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: splitCSV(brokers), Topic: events.DeadLetterTopic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	keys := map[string]int{}
	readCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	for len(keys) < 2 {
		m, err := r.ReadMessage(readCtx)
		require.NoError(t, err)
		keys[string(m.Key)] = len(m.Value)
	}
	require.Equal(t, len(`{"schema_version":1`), keys["poison"])
	require.Equal(t, 512<<10, keys["big"], "the oversized value is cut to the dead-letter limit")
}

// publish logs in with SASL from PERMITD_* variables; the password never
// reaches the log. A wrong password fails.
func TestPublishSASLFromEnvironment(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "pipeline", "hunter22"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, file := kafkaFixture(t, 2)
	env := map[string]string{
		"PERMITD_KAFKA_BROKERS":        strings.Join(c.ListenAddrs(), ","),
		"PERMITD_KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
		"PERMITD_KAFKA_SASL_USERNAME":  "pipeline",
		"PERMITD_KAFKA_SASL_PASSWORD":  "hunter22",
	}
	getenv := func(k string) string { return env[k] }
	var out, logs bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"publish", "--file", file}, getenv, &out, &logs))
	require.Equal(t, "published 3 events\n", out.String())
	require.Contains(t, logs.String(), `kafka_sasl_password="***(8 chars)"`)
	require.NotContains(t, logs.String(), "hunter22")

	env["PERMITD_KAFKA_SASL_PASSWORD"] = "wrong"
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err = run(ctx, []string{"publish", "--file", file, "--log-level", "error"}, getenv, io.Discard, io.Discard)
	// kafka-go reports the refused login at the first request, topic
	// creation, as Broker Not Available.
	require.ErrorIs(t, err, kafkago.BrokerNotAvailable)
	require.ErrorContains(t, err, "create topics")
	require.NoError(t, ctx.Err(), "refused, not timed out")
}
