package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/syncbuf"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// kafkaFixture is a kfake broker and an NDJSON file of n locations, one
// of them deleted.
func kafkaFixture(t *testing.T, n int) (brokers, file string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f := &eventFile{t: t, at: time.Unix(1700000000, 0)}
	for i := range n {
		f.add(events.LocationUpserted, fmt.Sprintf("g%04d", i), 1, events.Location{
			GeoType: "city", Name: "C", DisplayName: "C, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		})
	}
	f.at = f.at.Add(time.Second)
	f.add(events.LocationDeleted, "g0000", 2, nil)
	f.buf.WriteString("\n") // a blank line is skipped
	return strings.Join(c.ListenAddrs(), ","), f.write()
}

func kafkaNoEnv(string) string { return "" }

// publish loads an NDJSON file into the topics; the serve hook's indexer
// (memory backend, replay) then holds exactly those events and reports
// ready.
func TestPublishThenKafkaIndexer(t *testing.T) {
	brokers, file := kafkaFixture(t, 50)
	var out bytes.Buffer
	if err := run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--partitions", "3", "--log-level", "error"}, kafkaNoEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "published 51 events\n" {
		t.Fatalf("stdout %q", got)
	}

	var cfg kafkaConfig
	fs := newFlagSet("test", env{getenv: kafkaNoEnv, stderr: io.Discard})
	cfg.bind(fs)
	if err := fs.parse([]string{"--kafka-brokers", brokers}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.validate(true); err != nil {
		t.Fatal(err)
	}
	store := memory.New(memory.Params{})
	k, err := newKafkaIndexer(cfg, "memory", store, store, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	check := k.Check()
	if check(t.Context()).OK {
		t.Fatal("ready before consuming")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !check(t.Context()).OK {
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %+v", check(t.Context()).Detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
	counts, _ := store.Counts(t.Context())
	if counts[readmodel.KindLocation] != 49 {
		t.Fatalf("locations = %d, want 49", counts[readmodel.KindLocation])
	}
	if d := check(t.Context()).Detail; d["mode"] != "replay" || d["lag"] != int64(0) {
		t.Fatalf("detail %+v", d)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// publish stops at an invalid line and names it.
func TestPublishRejectsInvalidLine(t *testing.T) {
	brokers, file := kafkaFixture(t, 2)
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"schema_version":1}` + "\n")
	f.Close()
	err = run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--log-level", "error"}, kafkaNoEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("err = %v, want the invalid line 5 named", err)
	}
}

// index runs the indexer only, with /health/ready and /metrics, and stops
// cleanly on cancel.
func TestIndexCommand(t *testing.T) {
	brokers, file := kafkaFixture(t, 20)
	if err := run(t.Context(), []string{"publish", "--kafka-brokers", brokers, "--file", file, "--log-level", "error"}, kafkaNoEnv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var out syncbuf.Buffer
	done := make(chan error, 1)
	getenv := func(k string) string {
		if k == "PERMITD_KAFKA_BROKERS" {
			return brokers
		}
		return ""
	}
	go func() {
		done <- run(ctx, []string{"index", "--addr", "127.0.0.1:0", "--log-level", "error"}, getenv, &out, io.Discard)
	}()
	re := regexp.MustCompile(`http://(\S+)`)
	var base string
	deadline := time.Now().Add(20 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil && base == "" {
			base = "http://" + m[1]
		}
		if base == "" {
			continue
		}
		res, err := http.Get(base + "/health/ready")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			break
		}
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(body, []byte(`permitd_indexer_consumer_lag{partition="0",topic="permitd.locations.v1"} 0`)) ||
		!bytes.Contains(body, []byte(`permitd_indexer_events_total{result="applied"} 21`)) {
		t.Fatalf("metrics lack lag or applied events:\n%s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// index fails fast when its address is taken, and leaves no consumer
// running behind the error.
func TestIndexAddressTaken(t *testing.T) {
	brokers, _ := kafkaFixture(t, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	err = run(t.Context(), []string{"index", "--kafka-brokers", brokers, "--addr", ln.Addr().String(), "--log-level", "error"}, kafkaNoEnv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v, want the taken address", err)
	}
}
