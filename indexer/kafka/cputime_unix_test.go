//go:build unix

package kafka_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process used so far.
func cpuTime() time.Duration {
	u := kernelUse()
	return u.user + u.sys
}

// kernelUse is what getrusage says this process used so far (zero where
// it fails).
func kernelUse() procUse {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return procUse{}
	}
	return procUse{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()), faults: int64(ru.Minflt)}
}
