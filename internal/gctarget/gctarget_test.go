package gctarget_test

import (
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
