// Helpers of the end-to-end tests: building the binaries, a broker, and permitd and the indexer run as processes.

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/child"
	"github.com/permitd/permitd/internal/freeport"
)

// brokerSource finds ../shared/tools/kfake-broker (PERMITD_KFAKE_BROKER_DIR
// overrides), looking beside the repository and up to two levels above
// (a git worktree lives deeper than the main checkout).
func brokerSource(root string) string {
	if d := os.Getenv("PERMITD_KFAKE_BROKER_DIR"); d != "" {
		return d
	}
	dir := root
	for range 3 {
		dir = filepath.Dir(dir)
		if d := filepath.Join(dir, "shared", "tools", "kfake-broker"); fileExists(filepath.Join(d, "main.go")) {
			return d
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := freeport.Loopback()
	require.NoError(t, err)
	return port
}

// process is a started command whose stdout is scanned for lines.
type process struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   bytes.Buffer
	lines chan string
}

func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(name, args...), lines: make(chan string, 100)}
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = &lockedWriter{p: p}
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default:
			}
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		// Stop it by its PID: SIGTERM, then kill after 10s.
		_, _ = child.Stop(p.cmd, 10*time.Second)
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(name), p.output())
		}
	})
	return p
}

type lockedWriter struct{ p *process }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitLine returns the first stdout line with prefix.
func (p *process) waitLine(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-p.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line %q within %v", prefix, timeout)
		}
	}
}

var (
	buildOnce             sync.Once
	permitdBin, brokerBin string
	buildErr              error
	skipReason            string
)

// binaries builds permitd and the standalone broker once per test
// binary, starts a broker on a free loopback port and returns the
// permitd binary and the broker address; it skips when the broker's
// source is absent.
func binaries(t *testing.T) (permitd, brokers string) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := os.Getwd()
		if err != nil {
			buildErr = err
			return
		}
		root = filepath.Dir(filepath.Dir(root))
		src := brokerSource(root)
		if src == "" {
			skipReason = "no ../shared/tools/kfake-broker beside the repository (set PERMITD_KFAKE_BROKER_DIR): the separate-process Kafka tests need it"
			return
		}
		if _, err := exec.LookPath("go"); err != nil {
			skipReason = "no go command to build permitd and the broker"
			return
		}
		dir, err := os.MkdirTemp("", "permitd-e2e")
		if err != nil {
			buildErr = err
			return
		}
		permitdBin, brokerBin = filepath.Join(dir, "permitd"), filepath.Join(dir, "kfake-broker")
		for _, b := range []struct{ dir, pkg, out string }{{root, "./cmd/permitd", permitdBin}, {src, ".", brokerBin}} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v: %s", b.pkg, err, out)
				return
			}
		}
	})
	if skipReason != "" {
		// CI has ../shared beside the repository: there the separate-
		// process run must happen, not be skipped.
		if os.Getenv("CI") != "" {
			t.Fatal(skipReason)
		}
		t.Skip(skipReason)
	}
	require.NoError(t, buildErr)
	kport := freePort(t)
	b := startProcess(t, brokerBin, "-port", fmt.Sprint(kport))
	b.waitLine(t, "kfake broker on", 30*time.Second)
	return permitdBin, fmt.Sprintf("127.0.0.1:%d", kport)
}
