package gctarget_test

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/permitd/permitd/internal/gctarget"
)

// Current reads the target without changing it; Apply's choices are
// tested through serve's flag (cmd/permitd, TestGCPercent).
func TestCurrent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(250))
	if got := gctarget.Current(); got != 250 {
		t.Fatalf("Current %d, want 250", got)
	}
	if got := debug.SetGCPercent(250); got != 250 {
		t.Fatalf("Current changed the target to %d", got)
	}
}

// Under a memory limit auto picks Auto.
func TestAutoUnderALimit(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(8 << 30))
	chosen, err := gctarget.Apply("auto", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := gctarget.Current(); got != gctarget.Auto {
		t.Fatalf("target %d (%s), want %d", got, chosen, gctarget.Auto)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	debug.SetGCPercent(100)
	if _, err := gctarget.Apply("auto", func(string) string { return "" }); err != nil || gctarget.Current() != 100 {
		t.Fatalf("without a limit: %v, target %d, want 100", err, gctarget.Current())
	}
}
