package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permitd/permitd/internal/servelines"
	"github.com/permitd/permitd/internal/syncbuf"
)

// permitd is the binary under test, built once by TestMain.
var permitd string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "permitd-faults")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	permitd = filepath.Join(dir, "permitd")
	build := exec.Command("go", "build", "-o", permitd, "github.com/permitd/permitd/cmd/permitd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "faults: building permitd:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// service is one `permitd serve` process.
type service struct {
	t      *testing.T
	Base   string // http://127.0.0.1:port
	Admin  string // the admin listener (metrics): http://127.0.0.1:port
	DevKey string
	Logs   *syncbuf.Buffer
	client *http.Client
}

// startService runs `permitd serve` with args (no bundled data, no drain
// delay unless args say otherwise) and stops it with SIGTERM at test end.
func startService(t *testing.T, args ...string) *service {
	t.Helper()
	cmd := exec.Command(permitd, append([]string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", "none", "-drain-delay", "0s",
		"-keys-file", filepath.Join(t.TempDir(), "keys.json")}, args...)...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	logs := &syncbuf.Buffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("permitd serve: %v\n%s", err, logs)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("permitd serve did not stop within 20s of SIGTERM")
		}
	})
	lines := servelines.Read(out, servelines.All)
	s := &service{t: t, Base: lines.Base, Admin: lines.Admin, DevKey: lines.DevKey, Logs: logs, client: &http.Client{Timeout: 30 * time.Second}}
	if s.Base == "" {
		t.Fatalf("permitd serve printed no address:\n%s", logs)
	}
	return s
}

// reply is what a client saw.
type reply struct {
	Status     int
	Header     http.Header
	Body       string
	Took       time.Duration
	Err        error
	errorCode  string
	gatewayMsg string
}

func (s *service) get(path, key string) reply {
	s.t.Helper()
	return s.getAt(s.Base, path, key)
}

// getAt is get against another listener of the process (base).
func (s *service) getAt(base, path, key string) reply {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		return reply{Err: err}
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	start := time.Now()
	res, err := s.client.Do(req)
	r := reply{Took: time.Since(start), Err: err}
	if err != nil {
		return r
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	r.Status, r.Header, r.Body, r.Err = res.StatusCode, res.Header, string(b), err
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		r.errorCode, r.gatewayMsg = e.Error.Code, e.Message
	}
	return r
}

// metric is the value of the first /metrics sample whose line starts with
// name (labels included); -1 when absent.
func (s *service) metric(name string) float64 {
	s.t.Helper()
	r := s.getAt(s.Admin, "/metrics", "")
	for _, line := range strings.Split(r.Body, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// ready is /v1/health/ready's body.
func (s *service) ready() (int, map[string]map[string]any) {
	s.t.Helper()
	r := s.get("/v1/health/ready", "")
	var body struct {
		Checks map[string]map[string]any `json:"checks"`
	}
	_ = json.Unmarshal([]byte(r.Body), &body)
	return r.Status, body.Checks
}

// eventually polls cond every 20ms for up to within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
