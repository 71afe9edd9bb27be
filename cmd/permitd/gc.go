package main

import (
	"strconv"

	"github.com/permitd/permitd/internal/gctarget"
)

// gcConfig is serve's garbage-collector target (-gc-percent); the choice
// is package gctarget's, which the ingest benchmarks apply too.
type gcConfig struct {
	GCPercent string
}

// autoGCPercent is the target "auto" picks under a memory limit.
const autoGCPercent = gctarget.Auto

func (c *gcConfig) bind(fs *flagSet) {
	fs.StringVar(&c.GCPercent, "gc-percent", "auto",
		"garbage-collector target (GOGC), a percentage or off; auto: GOGC when set, else "+strconv.Itoa(autoGCPercent)+" when a memory limit (GOMEMLIMIT) is set, else Go's default 100, raised during a replay while the heap stays under an eighth of the memory")
}

func (c *gcConfig) validate() error {
	_, _, err := gctarget.Parse(c.GCPercent)
	return err
}

// apply sets the target and says what it chose and why, for the log.
func (c *gcConfig) apply(getenv func(string) string) (string, error) {
	return gctarget.Apply(c.GCPercent, getenv)
}
