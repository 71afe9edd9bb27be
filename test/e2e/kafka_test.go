// Package e2e runs permitd the way a user does: separate processes.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
)

// repoRoot is the module root (this file is test/e2e/kafka_test.go).
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Dir(filepath.Dir(wd))
}

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

// goBuild builds pkg (run in dir) into bin.
func goBuild(t *testing.T, dir, pkg, bin string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, out)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
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
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
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

// TestKafkaPathAsProcesses builds permitd, starts the standalone
// Kafka-protocol broker (../shared/tools/kfake-broker, default limits,
// loopback), `permitd serve --data none --kafka-brokers ...`, then
// `permitd publish` of a file whose permits come before their
// locations, and polls the HTTP API until the data is served with exact
// counts.
func TestKafkaPathAsProcesses(t *testing.T) {
	root := repoRoot(t)
	src := brokerSource(root)
	if src == "" {
		t.Skip("no ../shared/tools/kfake-broker beside the repository (set PERMITD_KFAKE_BROKER_DIR): the separate-process Kafka test needs it")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build permitd and the broker")
	}
	bin := t.TempDir()
	permitd, broker := filepath.Join(bin, "permitd"), filepath.Join(bin, "kfake-broker")
	goBuild(t, root, "./cmd/permitd", permitd)
	goBuild(t, src, ".", broker)

	kport := freePort(t)
	b := startProcess(t, broker, "-port", fmt.Sprint(kport))
	b.waitLine(t, "kfake broker on", 30*time.Second)
	brokers := fmt.Sprintf("127.0.0.1:%d", kport)

	file, zip, state, permits := writeEvents(t)

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := startProcess(t, permitd, "serve", "--data", "none", "--kafka-brokers", brokers, "--addr", addr, "--admin-addr", "127.0.0.1:0", "--api-keys", "e2e-test-key-0123456789", "--log-level", "warn")

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	pub := exec.CommandContext(ctx, permitd, "publish", "--brokers", brokers, "--file", file, "--log-level", "error")
	out, err := pub.CombinedOutput()
	require.NoError(t, err, "publish: %s", out)
	require.Contains(t, string(out), fmt.Sprintf("published %d events", permits+4))

	base := "http://" + addr
	var zipCount, stateCount int64
	for {
		zipCount, stateCount = permitCount(t, base, zip), permitCount(t, base, state)
		if zipCount == int64(permits) && stateCount == int64(permits+1) && ready(base) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("not served within 60s: ZIP %d permits (want %d), state %d (want %d)\n%s", zipCount, permits, stateCount, permits+1, s.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeEvents writes permits in ZIP 98101 (and one in a ZIP no location
// names), then their state, city and ZIP locations.
func writeEvents(t *testing.T) (file, zip, state string, permits int) {
	t.Helper()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	zip, state = events.GeoID("zip", "98101"), events.GeoID("state", "WA")
	city := events.GeoID("city", "1840021117")
	var buf bytes.Buffer
	add := func(typ events.Type, id string, data any) {
		env, err := events.New(typ, id, 1, at, "e2e", data)
		require.NoError(t, err)
		raw, err := json.Marshal(env)
		require.NoError(t, err)
		buf.Write(append(raw, '\n'))
	}
	permits = 25
	for i := range permits + 1 {
		z := "98101"
		if i == permits {
			z = "99999"
		}
		n := fmt.Sprintf("E2E-%03d", i)
		add(events.PermitUpserted, events.PermitDocID("e2e", n), events.Permit{
			PermitNumber: n, PermitType: "Building", IssueDate: "2025-01-02", Source: "e2e",
			Address: events.PermitAddress{Line: fmt.Sprintf("%d PINE ST", 100+i), City: "SEATTLE", State: "WA", Zipcode: z, ZipSource: "source"},
		})
	}
	add(events.LocationUpserted, state, events.Location{GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", StateGeoID: state, Lat: 47.4, Lon: -120.5})
	add(events.LocationUpserted, city, events.Location{GeoType: "city", Name: "Seattle", DisplayName: "Seattle, WA", State: "WA", StateName: "Washington", City: "Seattle", StateGeoID: state, Lat: 47.6, Lon: -122.3})
	add(events.LocationUpserted, zip, events.Location{
		GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)", State: "WA", StateName: "Washington",
		City: "Seattle", Zipcode: "98101", StateGeoID: state, CityGeoID: city, Lat: 47.61, Lon: -122.33,
	})
	file = filepath.Join(t.TempDir(), "events.ndjson")
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o600))
	return file, zip, state, permits
}

// permitCount reads a location's permit_count; -1 while it is unknown.
func permitCount(t *testing.T, base, geoID string) int64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/v1/locations/"+geoID, nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", "e2e-test-key-0123456789")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1 // not listening yet
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return -1
	}
	var loc struct {
		PermitCount int64 `json:"permit_count"`
	}
	require.NoError(t, json.Unmarshal(body, &loc), "%s", body)
	return loc.PermitCount
}

func ready(base string) bool {
	res, err := http.Get(base + "/v1/health/ready")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}
