package child

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// childMode, when set in the environment, makes this test binary the
// child process a test starts (TestMain), so the tests need no sleep or
// sh binary on the machine.
const childMode = "PERMITD_CHILD_TEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(childMode) {
	case "":
		os.Exit(m.Run())
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Println("ready") // after the signal disposition is set
	time.Sleep(time.Minute)
	os.Exit(0)
}

// start runs this test binary as a child in mode and returns once it
// says it is ready.
func start(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childMode+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child did not start: %q, %v", line, err)
	}
	return cmd
}

func TestStopEndsAProcessThatHeedsSIGTERM(t *testing.T) {
	cmd := start(t, "sleep")
	begin := time.Now()
	killed, err := Stop(cmd, 10*time.Second)
	if killed {
		t.Fatal("the child was killed: SIGTERM did not end it")
	}
	if err == nil || cmd.ProcessState.Exited() {
		t.Fatalf("want a process ended by a signal, got err %v state %v", err, cmd.ProcessState)
	}
	if time.Since(begin) > 5*time.Second {
		t.Fatalf("Stop took %v", time.Since(begin))
	}
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	cmd := start(t, "ignore-term")
	killed, err := Stop(cmd, 300*time.Millisecond)
	if !killed {
		t.Fatalf("not killed (err %v): the child ignores SIGTERM", err)
	}
	if err == nil {
		t.Fatal("a killed process's Wait returns an error")
	}
}
