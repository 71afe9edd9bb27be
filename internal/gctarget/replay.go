package gctarget

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A replay into the memory backend (serve's start without a snapshot)
// builds the read model from nothing, and nobody reads it until it is
// done: the process is not ready. What it allocates is partly kept (the
// read model grows all along) and partly garbage (the messages, their
// decoded events), and each collection cycle marks the read model built
// so far. At Go's default target (100, serve by hand: no memory limit)
// that marking was about a seventh of the replay's CPU in the real mix
// (IngestMix: 0 collections a round at 400 against 2 at 100, 13% more
// events a second; docs/kafka-history.md, fifty-eighth session).
//
// Replay raises the target for that phase only, bounded: the target is
// what lets the heap peak at replayShare of the memory the process may
// have (the cgroup's limit, else the machine's), from the live heap the
// last cycle marked, never below 100 (the heap never peaks lower than at
// the default; a replay larger than the bound runs as before) and never
// above Auto. With a memory limit set (as deployed) or a target chosen
// (GOGC, --gc-percent), it does nothing: the target is already what the
// operator wants.

// replayShare is the share of the process's memory a replay's heap may
// peak at before its target falls back to the default: an eighth. With a
// quarter, the 1M-permit replay (BenchmarkRestart) peaked at 6.3 GB RSS
// on a 24 GB machine against 4.1 to 4.3 GB at the default, and was no
// faster; with an eighth it peaked at 4.4 GB, and the real mix's replay
// still ran without a collection.
const replayShare = 0.125

// replayPoll is how often the replay's tuner reads the live heap.
var replayPoll = 100 * time.Millisecond

// autoDefault is set when Apply left Go's default (auto, no GOGC, no
// memory limit): the one case Replay tunes.
var autoDefault atomic.Bool

// memoryFiles are where Replay reads the memory the process may have:
// the cgroup's limits (v2, then v1) and the machine's total.
var memoryFiles = struct{ cgroup2, cgroup1, meminfo string }{
	"/sys/fs/cgroup/memory.max",
	"/sys/fs/cgroup/memory/memory.limit_in_bytes",
	"/proc/meminfo",
}

// Replay tunes the target for a replay when Apply left Go's default, and
// returns what ends the phase (safe to call more than once, from any
// goroutine): the target is 100 again, and the next cycle, which may
// come at once (the garbage the phase left is freed), runs at it. It
// reports the bound it tunes to, 0 when it does nothing.
func Replay() (end func(), bound uint64) {
	if !autoDefault.Load() || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}, 0
	}
	total := processMemory()
	if total == 0 {
		return func() {}, 0
	}
	bound = uint64(float64(total) * replayShare)
	supersede() // the replay tunes the target from now on
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		last := -1
		t := time.NewTicker(replayPoll)
		defer t.Stop()
		for {
			metrics.Read(s)
			if pct := replayPercent(bound, s[0].Value.Uint64()); pct != last {
				debug.SetGCPercent(pct)
				last = pct
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			debug.SetGCPercent(100)
		})
	}, bound
}

// replayPercent is the target that lets a heap whose last cycle marked
// live bytes grow to bound before the next cycle, within [100, Auto].
func replayPercent(bound, live uint64) int {
	if live == 0 || bound <= 2*live {
		return 100
	}
	return int(min(float64(bound-live)/float64(live)*100, Auto))
}

// processMemory is the memory the process may have: the lowest of its
// cgroup's limit and the machine's total, 0 when neither can be read.
func processMemory() uint64 {
	var total uint64
	lower := func(n uint64) {
		if n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	for _, f := range []string{memoryFiles.cgroup2, memoryFiles.cgroup1} {
		if b, err := os.ReadFile(f); err == nil {
			// "max" (v2) or a number near 2^63 (v1): no limit.
			if n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err == nil && n < 1<<62 {
				lower(n)
			}
		}
	}
	if f, err := os.Open(memoryFiles.meminfo); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemTotal:")); ok {
				fields := bytes.Fields(v) // "24683792 kB"
				if len(fields) == 2 && string(fields[1]) == "kB" {
					if n, err := strconv.ParseUint(string(fields[0]), 10, 64); err == nil {
						lower(n << 10)
					}
				}
				break
			}
		}
	}
	return total
}
