//go:build !linux

package resolve

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
