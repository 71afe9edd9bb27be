// Package e2e runs permitd the way a user does: separate processes.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/stretchr/testify/require"
)

// TestKafkaPathAsProcesses builds permitd, starts the standalone
// Kafka-protocol broker (../shared/tools/kfake-broker, default limits,
// loopback), `permitd serve --data none --kafka-brokers ...`, then
// `permitd publish` of a file whose permits come before their
// locations, and polls the HTTP API until the data is served with exact
// counts.
func TestKafkaPathAsProcesses(t *testing.T) {
	permitd, brokers := binaries(t)

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

// A serve process killed with SIGKILL while it ingests restarts from its
// last periodic snapshot and replays what came after: it then serves
// exactly what a clean replay serves.
func TestSnapshotSurvivesKill9(t *testing.T) {
	permitd, brokers := binaries(t)
	file, zip, state, permits := writeEvents(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	publish := func(f string) {
		out, err := exec.CommandContext(ctx, permitd, "publish", "--brokers", brokers, "--file", f, "--log-level", "error").CombinedOutput()
		require.NoError(t, err, "publish: %s", out)
	}
	publish(file)
	snap := filepath.Join(t.TempDir(), "memory.snapshot")
	serve := func() (*process, string) {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := startProcess(t, permitd, "serve", "--data", "none", "--kafka-brokers", brokers, "--addr", addr,
			"--api-keys", "e2e-test-key-0123456789", "--snapshot-file", snap, "--snapshot-interval", "100ms", "--log-level", "info")
		return p, "http://" + addr
	}
	waitCounts := func(base string, zipWant, stateWant int64) {
		for {
			z, s := permitCount(t, base, zip), permitCount(t, base, state)
			if z == zipWant && s == stateWant && ready(base) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("not served: ZIP %d permits (want %d), state %d (want %d)", z, zipWant, s, stateWant)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first, base := serve()
	waitCounts(base, int64(permits), int64(permits+1))
	for !strings.Contains(first.output(), "snapshot written") {
		require.NoError(t, ctx.Err(), "no periodic snapshot:\n%s", first.output())
		time.Sleep(20 * time.Millisecond)
	}
	// More permits while it runs, then kill -9 in the middle of them.
	more := morePermits(t, 5000)
	published := make(chan error, 1)
	go func() {
		out, err := exec.CommandContext(ctx, permitd, "publish", "--brokers", brokers, "--file", more, "--batch", "50", "--log-level", "error").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, out)
		}
		published <- err
	}()
	time.Sleep(150 * time.Millisecond)
	t.Logf("killed with %d of %d permits in ZIP 98101 served", permitCount(t, base, zip), permits+5000)
	require.NoError(t, first.cmd.Process.Kill())
	_ = first.cmd.Wait()

	require.NoError(t, <-published)
	second, base := serve()
	waitCounts(base, int64(permits+5000), int64(permits+1+5000))
	require.Contains(t, second.output(), "snapshot loaded; replaying what came after it")
}

// morePermits writes n more permits in ZIP 98101.
func morePermits(t *testing.T, n int) string {
	t.Helper()
	at := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	for i := range n {
		num := fmt.Sprintf("MORE-%05d", i)
		buf.Write(envelopeLine(t, events.PermitUpserted, events.PermitDocID("e2e", num), 1, at, events.Permit{
			PermitNumber: num, PermitType: "Building", IssueDate: "2025-02-03", Source: "e2e",
			Address: events.PermitAddress{Line: fmt.Sprintf("%d MAIN ST", i), City: "SEATTLE", State: "WA", Zipcode: "98101", ZipSource: "source"},
		}))
	}
	file := filepath.Join(t.TempDir(), "more.ndjson")
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o600))
	return file
}

// envelopeLine is an event envelope's NDJSON line (newline included),
// from source "e2e".
func envelopeLine(t *testing.T, typ events.Type, id string, version int64, at time.Time, data any) []byte {
	t.Helper()
	env, err := events.New(typ, id, version, at, "e2e", data)
	require.NoError(t, err)
	raw, err := json.Marshal(env)
	require.NoError(t, err)
	return append(raw, '\n')
}

// ndjsonLines splits an NDJSON file's bytes into its lines, each with
// its newline.
func ndjsonLines(b []byte) [][]byte {
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
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
		buf.Write(envelopeLine(t, typ, id, 1, at, data))
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
	if res.StatusCode != http.StatusOK {
		return -1
	}
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
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

// TestLivePublishLinksLocations is the quick start run against a server
// that is already up: `permitd serve --data none` settles on a permits
// topic while no locations topic exists, then the gazetteer is published
// and, right after it, the Seattle permits. The server reads them concurrently (the permits may
// be read before the locations they name); each permit batch whose ZIP
// or city is not known yet waits for the locations published before it.
// The live counts of Washington, Seattle and ZIP 98101 then equal a
// clean replay's (a second server reading everything from the start).
func TestLivePublishLinksLocations(t *testing.T) {
	permitd, brokers := binaries(t)
	dir := t.TempDir()
	gaz, sea := filepath.Join(dir, "gazetteer.ndjson"), filepath.Join(dir, "seattle.ndjson")
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	for _, f := range []struct{ dataset, out string }{{"gazetteer", gaz}, {"seattle", sea}} {
		out, err := exec.CommandContext(ctx, permitd, "import", f.dataset, "-out", f.out).CombinedOutput()
		require.NoError(t, err, "import %s: %s", f.dataset, out)
	}
	serve := func() (*process, string) {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := startProcess(t, permitd, "serve", "--data", "none", "--kafka-brokers", brokers, "--addr", addr,
			"--admin-addr", "127.0.0.1:0", "--api-keys", "e2e-test-key-0123456789", "--log-level", "info")
		return p, "http://" + addr
	}
	live, liveBase := serve()
	// One permit (in a ZIP no location names) creates the permits topic;
	// the server settles on it while the locations topic does not exist.
	first, _, _, _ := writeEvents(t)
	raw, err := os.ReadFile(first)
	require.NoError(t, err)
	orphan := filepath.Join(dir, "orphan.ndjson")
	i := bytes.Index(raw, []byte(`"99999"`))
	require.Positive(t, i)
	start, end := bytes.LastIndexByte(raw[:i], '\n')+1, i+bytes.IndexByte(raw[i:], '\n')+1
	require.NoError(t, os.WriteFile(orphan, raw[start:end], 0o600))
	out, err := exec.CommandContext(ctx, permitd, "publish", "--brokers", brokers, "--file", orphan, "--log-level", "error").CombinedOutput()
	require.NoError(t, err, "publish: %s", out)
	for !strings.Contains(live.output(), "kafka consumer caught up") {
		require.NoError(t, ctx.Err(), "the server did not settle:\n%s", live.output())
		time.Sleep(20 * time.Millisecond)
	}
	for _, f := range []string{gaz, sea} {
		out, err := exec.CommandContext(ctx, permitd, "publish", "--brokers", brokers, "--file", f, "--log-level", "error").CombinedOutput()
		require.NoError(t, err, "publish %s: %s", f, out)
	}

	geos := []string{events.GeoID("state", "WA"), events.GeoID("city", "1840021117"), events.GeoID("zip", "98101")}
	counts := func(base string) []int64 {
		out := make([]int64, len(geos))
		for i, g := range geos {
			out[i] = permitCount(t, base, g)
		}
		return out
	}
	// The clean replay: a second server started after everything is
	// published reads the locations before it settles.
	_, replayBase := serve()
	var want []int64
	for prev := []int64(nil); ; prev = want {
		want = counts(replayBase)
		if ready(replayBase) && slices.Equal(want, prev) && want[2] > 0 {
			break
		}
		require.NoError(t, ctx.Err(), "the replaying server was not ready with stable counts: %v", want)
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("clean replay: Washington, Seattle, ZIP 98101 permit counts %v", want)
	// The live server serves what the clean replay serves (polled: it may
	// still be re-linking when the replay is ready).
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := counts(liveBase)
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live server: Washington, Seattle, ZIP 98101 permit counts %v, a clean replay's %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLivePermitBeforeItsZip: a server that settled, then permits
// published before their ZIP's location (only the state's exists): the
// permits are served at once, linked to their state; the ZIP and city
// published afterwards re-link them, and the counts of Washington,
// Seattle and ZIP 98101 equal a clean replay's.
func TestLivePermitBeforeItsZip(t *testing.T) {
	permitd, brokers := binaries(t)
	file, zip, state, permits := writeEvents(t)
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	lines := ndjsonLines(raw)
	require.Len(t, lines, permits+4) // permits, one outside any ZIP, state, city, ZIP
	dir := t.TempDir()
	part := func(name string, ls [][]byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, bytes.Join(ls, nil), 0o600))
		return p
	}
	stateFile := part("state.ndjson", lines[permits+1:permits+2])
	permitsFile := part("permits.ndjson", lines[:permits+1])
	zipFile := part("zip.ndjson", lines[permits+2:])

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	publish := func(f string) {
		out, err := exec.CommandContext(ctx, permitd, "publish", "--brokers", brokers, "--file", f, "--log-level", "error").CombinedOutput()
		require.NoError(t, err, "publish %s: %s", f, out)
	}
	serve := func() (*process, string) {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := startProcess(t, permitd, "serve", "--data", "none", "--kafka-brokers", brokers, "--addr", addr,
			"--admin-addr", "127.0.0.1:0", "--api-keys", "e2e-test-key-0123456789", "--log-level", "info")
		return p, "http://" + addr
	}
	city := events.GeoID("city", "1840021117")
	counts := func(base string) []int64 {
		return []int64{permitCount(t, base, state), permitCount(t, base, city), permitCount(t, base, zip)}
	}
	waitCounts := func(p *process, base string, want []int64) {
		for {
			got := counts(base)
			if slices.Equal(got, want) && ready(base) {
				return
			}
			require.NoError(t, ctx.Err(), "Washington, Seattle, ZIP 98101 permit counts %v, want %v\n%s", got, want, p.output())
			time.Sleep(50 * time.Millisecond)
		}
	}

	publish(stateFile)
	live, liveBase := serve()
	for !strings.Contains(live.output(), "kafka consumer caught up") {
		require.NoError(t, ctx.Err(), "the server did not settle:\n%s", live.output())
		time.Sleep(20 * time.Millisecond)
	}
	publish(permitsFile)
	// Served at once at state level: the city and ZIP are unknown (-1).
	waitCounts(live, liveBase, []int64{int64(permits + 1), -1, -1})
	publish(zipFile)
	waitCounts(live, liveBase, []int64{int64(permits + 1), int64(permits), int64(permits)})

	replay, replayBase := serve()
	waitCounts(replay, replayBase, []int64{int64(permits + 1), int64(permits), int64(permits)})
}
