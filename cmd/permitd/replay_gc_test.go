package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/internal/gctarget"
	"github.com/permitd/permitd/internal/syncbuf"
	"github.com/permitd/permitd/readmodel/memory"
)

// A replay into the memory backend, when auto left Go's default (no
// GOGC, no memory limit), runs with the collector's target raised and
// bounded (gctarget.Replay), logs the bound, and is back at 100 once the
// consumer has caught up; under a memory limit the target is left alone.
func TestReplayRaisesTheCollectorTarget(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	brokers, file := kafkaFixture(t, 30)
	if err := run(t.Context(), []string{"publish", "--brokers", brokers, "--file", file, "--log-level", "error"}, kafkaNoEnv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	// replay runs a replay to ready and returns its log and the target
	// once ready.
	replay := func(t *testing.T) (string, int) {
		var cfg kafkaConfig
		fs := newFlagSet("test", env{getenv: kafkaNoEnv, stderr: io.Discard})
		cfg.bind(fs)
		if err := fs.parse([]string{"--kafka-brokers", brokers}); err != nil {
			t.Fatal(err)
		}
		var logs syncbuf.Buffer
		store := memory.New(memory.Params{})
		k, err := newKafkaIndexer(cfg, "memory", store, store, slog.New(slog.NewTextHandler(&logs, nil)), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- k.Run(ctx) }()
		check := k.Check()
		for deadline := time.Now().Add(20 * time.Second); !check(t.Context()).OK; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("not ready")
			}
		}
		after := gctarget.Current()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return logs.String(), after
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if _, err := gctarget.Apply("auto", kafkaNoEnv); err != nil {
		t.Fatal(err)
	}
	logs, after := replay(t)
	if !strings.Contains(logs, "the replay raises the target") || !strings.Contains(logs, "bound_bytes=") {
		t.Fatalf("no replay phase logged:\n%s", logs)
	}
	if after != 100 {
		t.Fatalf("target %d once caught up, want 100", after)
	}

	debug.SetMemoryLimit(8 << 30)
	if _, err := gctarget.Apply("auto", kafkaNoEnv); err != nil {
		t.Fatal(err)
	}
	logs, after = replay(t)
	if strings.Contains(logs, "the replay raises the target") {
		t.Fatalf("a replay phase under a memory limit:\n%s", logs)
	}
	if after != gctarget.Auto {
		t.Fatalf("target %d under the memory limit, want %d", after, gctarget.Auto)
	}
}
