// Package redistest starts a real redis-server for tests: on a free
// loopback port, without persistence, stopped when the test ends. When the
// binary is missing the test is skipped with the reason, unless
// REQUIRE_REDIS=1 (CI), where it fails.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/internal/freeport"
)

// Server is one redis-server process.
type Server struct {
	// Addr is host:port on 127.0.0.1; it stays the same across Restart.
	Addr string

	tb   testing.TB
	bin  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts redis-server (PATH, or the REDIS_SERVER variable) and waits
// until it answers PING.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		msg := fmt.Sprintf("redis-server not found (%v): install it (apt-get install redis-server) or set REDIS_SERVER", err)
		if os.Getenv("REQUIRE_REDIS") == "1" {
			tb.Fatal("REQUIRE_REDIS=1: " + msg)
		}
		tb.Skip("skipping: " + msg)
	}
	s := &Server{tb: tb, bin: path, port: freePort(tb)}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	s.start()
	tb.Cleanup(s.Stop)
	return s
}

func freePort(tb testing.TB) int {
	port, err := freeport.Loopback()
	if err != nil {
		tb.Fatalf("redistest: free port: %v", err)
	}
	return port
}

func (s *Server) start() {
	s.tb.Helper()
	s.cmd = exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--loglevel", "warning", "--logfile", "")
	s.cmd.Dir = s.tb.TempDir()
	var out strings.Builder
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("redistest: start %s: %v", s.bin, err)
	}
	done := make(chan struct{})
	s.done = done
	cmd := s.cmd
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ping(s.Addr) == nil {
			return
		}
		select {
		case <-done:
			s.tb.Fatalf("redistest: redis-server exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.tb.Fatalf("redistest: redis-server on %s did not answer PING within 10s: %s", s.Addr, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ping sends PING in the RESP protocol and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("redistest: PING answered %q", line)
	}
	return nil
}

// Stop kills the server (SIGKILL: an abrupt outage, no goodbye to
// clients) and waits for it to exit. Stopping a stopped server is a no-op.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart starts a fresh, empty server on the same address.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start()
}
