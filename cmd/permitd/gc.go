package main

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
)

// gcConfig is serve's garbage-collector target (-gc-percent).
//
// The memory backend keeps a large, long-lived, pointer-rich heap (the
// read model), and every collection cycle marks all of it; a request's
// allocations only decide how soon the next cycle comes. The cost of
// collection per request is therefore about the bytes a request
// allocates divided by the percentage the heap may grow between cycles,
// whatever the read model's size: raising the percentage is the one
// lever besides allocating less (docs/operations.md, "Garbage collection").
type gcConfig struct {
	GCPercent string
}

// autoGCPercent is the target "auto" picks when a memory limit
// (GOMEMLIMIT) bounds the heap: the collector then runs rarely while memory
// is plentiful and as often as it must near the limit.
const autoGCPercent = 400

func (c *gcConfig) bind(fs *flagSet) {
	fs.StringVar(&c.GCPercent, "gc-percent", "auto",
		"garbage-collector target (GOGC), a percentage or off; auto: GOGC when set, else "+strconv.Itoa(autoGCPercent)+" when a memory limit (GOMEMLIMIT) is set, else Go's default 100")
}

func (c *gcConfig) validate() error {
	_, _, err := parseGCPercent(c.GCPercent)
	return err
}

// parseGCPercent reads -gc-percent: auto (ok false), off (-1) or a
// non-negative percentage.
func parseGCPercent(s string) (pct int, set bool, err error) {
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

// apply sets the target and says what it chose and why, for the log.
// "off" without a memory limit is refused at start: the heap would grow
// without bound.
func (c *gcConfig) apply(getenv func(string) string) (string, error) {
	pct, set, err := parseGCPercent(c.GCPercent)
	if err != nil {
		return "", err
	}
	limited := debug.SetMemoryLimit(-1) != math.MaxInt64
	switch {
	case set && pct < 0 && !limited:
		return "", fmt.Errorf("gc-percent off needs a memory limit (GOMEMLIMIT)")
	case set:
		debug.SetGCPercent(pct)
		return "gc-percent " + c.GCPercent, nil
	case getenv("GOGC") != "":
		return "GOGC " + getenv("GOGC"), nil
	case limited:
		debug.SetGCPercent(autoGCPercent)
		return "auto: " + strconv.Itoa(autoGCPercent) + " under the memory limit (GOMEMLIMIT)", nil
	}
	return "auto: Go's default 100 (no memory limit)", nil
}
