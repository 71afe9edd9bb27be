package gctarget_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

// After a phase with the collector off, Resume sets a target whose goal
// is pct above the heap as it is, so no cycle starts at once (setting
// the target alone starts one: the last cycle marked a small heap), and
// the target is pct again once the next cycle has run.
func TestResume(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC()
	debug.SetGCPercent(-1)
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	cycles := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := cycles()
	gctarget.Resume(100)
	for range 8 { // more than the goal the last cycle's heap gives
		keep = append(keep, make([]byte, 1<<20))
	}
	require.Equal(t, before, cycles(), "a cycle started after Resume")
	require.Greater(t, gctarget.Current(), 100)
	runtime.GC()
	require.Eventually(t, func() bool { return gctarget.Current() == 100 }, 10*time.Second, 10*time.Millisecond)
	runtime.KeepAlive(keep)
}

// A target set after a Resume (Apply here; a replay's too) stands: the
// Resume's goroutine, which sets its target once the next cycle has run,
// no longer undoes it. (It did: in cmd/permitd a snapshot test's Resume
// set its target in the middle of TestReplayRaisesTheCollectorTarget.)
func TestResumeYieldsToALaterTarget(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC()
	debug.SetGCPercent(-1)
	gctarget.Resume(150)
	if _, err := gctarget.Apply("250", func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	runtime.GC() // the cycle Resume's goroutine waits for
	time.Sleep(3 * 250 * time.Millisecond)
	require.Equal(t, 250, gctarget.Current())
}
