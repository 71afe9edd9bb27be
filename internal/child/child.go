// Package child stops the child processes that tests and the load
// drivers start (permitd, the broker, the flood helpers).
package child

import (
	"os/exec"
	"syscall"
	"time"
)

// Stop sends cmd's process SIGTERM and waits for it to exit; if it has
// not exited after grace, Stop kills it (SIGKILL) and waits for that.
// killed says whether it had to; err is what cmd.Wait returned. cmd must
// have been started, and nothing else may Wait for it.
func Stop(cmd *exec.Cmd, grace time.Duration) (killed bool, err error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return false, err
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		return true, <-done
	}
}
