//go:build !unix

package kafka_test

import "time"

// cpuTime is not measured on this platform.
func cpuTime() time.Duration { return 0 }

// kernelUse is not measured on this platform.
func kernelUse() procUse { return procUse{} }
