// Package gctarget is serve's choice of the garbage collector's target
// (GOGC), shared with the benchmarks that measure serve's ingest so that
// they run it as serve would in the same environment.
//
// The memory backend keeps a large, long-lived, pointer-rich heap (the
// read model), and every collection cycle marks all of it; what a request
// or a message allocates only decides how soon the next cycle comes. The
// cost of collection per request is therefore about the bytes it
// allocates divided by the percentage the heap may grow between cycles,
// whatever the read model's size: raising the percentage is the one lever
// besides allocating less (docs/operations.md, "Garbage collection").
package gctarget

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
)

// Auto is the target "auto" picks when a memory limit (GOMEMLIMIT)
// bounds the heap: the collector then runs rarely while memory is
// plentiful and as often as it must near the limit.
const Auto = 400

// Parse reads a setting: auto (set false), off (-1) or a non-negative
// percentage.
func Parse(s string) (pct int, set bool, err error) {
	switch s {
	case "auto", "":
		return 0, false, nil
	case "off":
		return -1, true, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("gc-percent %q: want auto, off or a percentage >= 0", s)
	}
	return n, true, nil
}

// Apply sets the target the setting s names and says what it chose and
// why, for the log: auto keeps GOGC when getenv has it, else Auto when a
// memory limit is set, else Go's default. "off" without a memory limit is
// refused: the heap would grow without bound.
func Apply(s string, getenv func(string) string) (string, error) {
	pct, set, err := Parse(s)
	if err != nil {
		return "", err
	}
	limited := debug.SetMemoryLimit(-1) != math.MaxInt64
	supersede() // a pending Resume's target does not undo this one
	autoDefault.Store(false)
	switch {
	case set && pct < 0 && !limited:
		return "", fmt.Errorf("gc-percent off needs a memory limit (GOMEMLIMIT)")
	case set:
		debug.SetGCPercent(pct)
		return "gc-percent " + s, nil
	case getenv("GOGC") != "":
		return "GOGC " + getenv("GOGC"), nil
	case limited:
		debug.SetGCPercent(Auto)
		return "auto: " + strconv.Itoa(Auto) + " under the memory limit (GOMEMLIMIT)", nil
	}
	autoDefault.Store(true) // a replay raises it, bounded (Replay)
	return "auto: Go's default 100 (no memory limit; a replay tunes it, bounded)", nil
}

// Current is the target now (debug.SetGCPercent, which has no getter).
func Current() int {
	pct := debug.SetGCPercent(100)
	debug.SetGCPercent(pct)
	return pct
}
