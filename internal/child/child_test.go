package child

import (
	"os/exec"
	"testing"
	"time"
)

func TestStopEndsAProcessThatHeedsSIGTERM(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	start := time.Now()
	killed, err := Stop(cmd, 10*time.Second)
	if killed {
		t.Fatal("sleep was killed: SIGTERM did not end it")
	}
	if err == nil || cmd.ProcessState.Exited() {
		t.Fatalf("want a process ended by a signal, got err %v state %v", err, cmd.ProcessState)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("Stop took %v", time.Since(start))
	}
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap "" TERM; while :; do sleep 0.1; done`)
	if err := cmd.Start(); err != nil {
		t.Skip("no sh binary:", err)
	}
	time.Sleep(200 * time.Millisecond) // let the shell set its trap
	killed, err := Stop(cmd, 300*time.Millisecond)
	if !killed {
		t.Fatalf("not killed (err %v): the shell ignores SIGTERM", err)
	}
	if err == nil {
		t.Fatal("a killed process's Wait returns an error")
	}
}
