//go:build !linux

package kafka_test

import "time"

// processCPU is not measured on this platform.
func processCPU(int) (time.Duration, bool) { return 0, false }
