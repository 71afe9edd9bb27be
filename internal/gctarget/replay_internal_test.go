package gctarget

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The target lets the heap grow to the bound from the live heap, never
// below the default and never above Auto.
func TestReplayPercent(t *testing.T) {
	const gb = 1 << 30
	for _, c := range []struct {
		bound, live uint64
		want        int
	}{
		{6 * gb, 0, 100},          // no cycle yet: the default
		{6 * gb, 1 * gb, 400},     // 500% would fit: capped at Auto
		{6 * gb, 2 * gb, 200},     // grows to 6 GB
		{6 * gb, 3 * gb, 100},     // the default already reaches the bound
		{6 * gb, 4 * gb, 100},     // beyond it: never below the default
		{6 * gb, 5 * gb / 2, 140}, // 2.5 GB may grow by 3.5
	} {
		require.Equal(t, c.want, replayPercent(c.bound, c.live), "bound %d, live %d", c.bound, c.live)
	}
}

// The memory a process may have is the lowest of its cgroup's limit and
// the machine's total; "max" and v1's near-2^63 mean no limit.
func TestProcessMemory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	old := memoryFiles
	defer func() { memoryFiles = old }()
	meminfo := write("meminfo", "MemFree:  100 kB\nMemTotal:       24683792 kB\nSwapTotal: 0 kB\n")
	missing := filepath.Join(dir, "missing")

	memoryFiles.cgroup2, memoryFiles.cgroup1, memoryFiles.meminfo = write("v2", "max\n"), write("v1", "9223372036854771712\n"), meminfo
	require.Equal(t, uint64(24683792)<<10, processMemory(), "no cgroup limit: the machine's")
	memoryFiles.cgroup2 = write("v2", "4294967296\n")
	require.Equal(t, uint64(4<<30), processMemory(), "a cgroup v2 limit")
	memoryFiles.cgroup2, memoryFiles.cgroup1 = missing, write("v1", "2147483648\n")
	require.Equal(t, uint64(2<<30), processMemory(), "a cgroup v1 limit")
	memoryFiles.cgroup1 = write("v1", "107374182400\n")
	require.Equal(t, uint64(24683792)<<10, processMemory(), "a limit above the machine's total")
	memoryFiles.cgroup1, memoryFiles.meminfo = missing, missing
	require.Zero(t, processMemory(), "nothing readable")
}

// Replay raises the target only when Apply left Go's default, and its end
// sets 100 again; with a memory limit or a chosen target it does nothing.
func TestReplay(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	oldPoll := replayPoll
	defer func() { replayPoll = oldPoll }()
	replayPoll = time.Millisecond
	getenv := func(string) string { return "" }

	_, err := Apply("auto", getenv)
	require.NoError(t, err)
	runtime.GC() // the live heap: a test binary's few MB, far under an eighth of any machine
	end, bound := Replay()
	require.NotZero(t, bound)
	require.Eventually(t, func() bool { return Current() == Auto }, 10*time.Second, time.Millisecond)
	end()
	end() // twice: a no-op
	require.Equal(t, 100, Current())

	_, err = Apply("150", getenv)
	require.NoError(t, err)
	end, bound = Replay()
	require.Zero(t, bound, "a chosen target is kept")
	end()
	require.Equal(t, 150, Current())

	debug.SetMemoryLimit(8 << 30)
	_, err = Apply("auto", getenv)
	require.NoError(t, err)
	end, bound = Replay()
	require.Zero(t, bound, "under a memory limit the target is Auto already")
	end()
	require.Equal(t, Auto, Current())
}
