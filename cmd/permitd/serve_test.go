package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/servelines"
)

// startServe runs `permitd serve` in process on a free port and returns its
// base URL and the printed development key. It stops at test end.
func startServe(t *testing.T, args ...string) (base, key string) {
	t.Helper()
	base, key, _ = startServeAdmin(t, args...)
	return base, key
}

// startServeAdmin is startServe that also returns the admin listener's
// base URL (on a free port too).
func startServeAdmin(t *testing.T, args ...string) (base, key, admin string) {
	t.Helper()
	return startServeAdminEnv(t, map[string]string{}, args...)
}

// startServeAdminEnv is startServeAdmin with the command's environment.
func startServeAdminEnv(t *testing.T, env map[string]string, args ...string) (base, key, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-log-level", "warn", "-admin-addr", "127.0.0.1:0", "-drain-delay", "0s"}, args...),
			func(k string) string { return env[k] }, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20s of cancellation")
		}
	})
	lines := servelines.Read(pr, servelines.All)
	base, key, admin = lines.Base, lines.DevKey, lines.Admin
	if base == "" || key == "" || admin == "" {
		t.Fatalf("serve printed no address or key (base %q key %q admin %q)", base, key, admin)
	}
	return base, key, admin
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServeLifecycle(t *testing.T) {
	base, key := startServe(t, "-data", "none")
	if code, _ := get(t, base+"/v1/health/live", ""); code != http.StatusOK {
		t.Fatalf("live: %d", code)
	}
	if code, _ := get(t, base+"/v1/locations/gabc", ""); code != http.StatusForbidden {
		t.Fatalf("no key: %d", code)
	}
	if code, body := get(t, base+"/v1/locations/gabc", key); code != http.StatusNotFound {
		t.Fatalf("with key: %d %s", code, body)
	}
	if code, body := get(t, base+"/v1/openapi.json", ""); code != http.StatusOK || !strings.Contains(body, `"openapi"`) {
		t.Fatalf("openapi: %d", code)
	}
	// An API-only replica is ready once an indexer elsewhere has filled the
	// read model; this one is empty.
	if code, body := get(t, base+"/v1/health/ready", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, `"read_model"`) ||
		!strings.Contains(body, `"quota":{"keys_file"`) || !strings.Contains(body, `"store":"memory"`) {
		t.Fatalf("ready with an empty read model: %d %s", code, body)
	}
}

func TestServeConfigIsValidated(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"bad addr":         {[]string{"serve", "-addr", "nope"}, `config: addr "nope": address nope: missing port in address`},
		"port past 65535":  {[]string{"serve", "-addr", ":99999"}, `config: addr ":99999": want a port from 0 to 65535`},
		"empty port":       {[]string{"serve", "-addr", "127.0.0.1:"}, `config: addr "127.0.0.1:": want a port from 0 to 65535`},
		"bad backend":      {[]string{"serve", "-backend", "sqlite"}, `config: backend "sqlite": want one of [memory opensearch]`},
		"bad now":          {[]string{"serve", "-now", "yesterday"}, `config: now: want RFC 3339 or YYYY-MM-DD, got "yesterday"`},
		"now year 0":       {[]string{"serve", "-now", "0000-01-01"}, `config: now: want an instant after 1970-01-01T00:00:00Z in a year up to 9000, got "0000-01-01"`},
		"now at the epoch": {[]string{"serve", "-now", "1970-01-01"}, `config: now: want an instant after 1970-01-01T00:00:00Z in a year up to 9000, got "1970-01-01"`},
		"now year 9999":    {[]string{"serve", "-now", "9999-12-31T23:00:00Z"}, `config: now: want an instant after 1970-01-01T00:00:00Z in a year up to 9000, got "9999-12-31T23:00:00Z"`},
		"short secret":     {[]string{"serve", "-cursor-secret", "short"}, "config: cursor-secret must be at least 16 bytes"},
		"extra args":       {[]string{"serve", "extra"}, "unexpected arguments: [extra]"},
		// Accepted before, each of these killed or busied the process: the
		// batch buffers outgrew the memory (24 GB, killed), the lag and
		// snapshot periods spun a core, the cache size wrapped or was off
		// unannounced.
		"huge kafka batch": {[]string{"serve", "-kafka-brokers", "127.0.0.1:9", "-kafka-batch-size", "100000000"}, "config: kafka-batch-size must be 1 to 100000"},
		"1ns lag interval": {[]string{"serve", "-kafka-brokers", "127.0.0.1:9", "-kafka-lag-interval", "1ns"}, "config: kafka-lag-interval must be at least 100ms"},
		"1ns snapshots":    {[]string{"serve", "-kafka-brokers", "127.0.0.1:9", "-snapshot-interval", "1ns"}, "config: snapshot-interval must be at least 10ms"},
		"unknown topic":    {[]string{"serve", "-kafka-brokers", "127.0.0.1:9", "-kafka-topics", "permitd.locations.v1,permitd.permit.v1"}, `config: kafka-topics: "permitd.permit.v1" is not an event topic (want some of permitd.locations.v1,permitd.permits.v1,permitd.properties.v1,permitd.geo-signals.v1,permitd.permit-leads.v1,permitd.catalog.v1)`},
		"negative cache":   {[]string{"serve", "-response-cache-mb", "-1"}, "config: response-cache-mb must be 0 (off) to 1048576"},
		"cache that wraps": {[]string{"serve", "-response-cache-mb", "17592186044416"}, "config: response-cache-mb must be 0 (off) to 1048576"},
	} {
		t.Run(name, func(t *testing.T) {
			err := run(context.Background(), tc.args, func(string) string { return "" }, io.Discard, io.Discard)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	err := run(context.Background(), []string{"serve"}, func(k string) string {
		return map[string]string{"PERMITD_ADDR": "bad"}[k]
	}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "addr") {
		t.Fatalf("PERMITD_ADDR not applied: %v", err)
	}
	// A variable its flag cannot parse is named with its value and the
	// form wanted (it was "PERMITD_MAX_CONNS: parse error").
	for k, want := range map[string]string{
		"PERMITD_MAX_CONNS":        `PERMITD_MAX_CONNS="abc": want a whole number (as -max-conns)`,
		"PERMITD_PPROF":            `PERMITD_PPROF="abc": want true or false (as -pprof)`,
		"PERMITD_SHUTDOWN_TIMEOUT": `PERMITD_SHUTDOWN_TIMEOUT="abc": want a duration such as 100ms, 5s or 2m (as -shutdown-timeout)`,
		"PERMITD_KEY_CACHE_TTL":    `PERMITD_KEY_CACHE_TTL="abc": want a duration such as 100ms, 5s or 2m (as -key-cache-ttl)`,
	} {
		err := run(context.Background(), []string{"serve"}, func(v string) string {
			return map[string]string{k: "abc"}[v]
		}, io.Discard, io.Discard)
		if err == nil || err.Error() != want {
			t.Errorf("%s=abc: err %v, want %q", k, err, want)
		}
	}
}

// TestNoDevKeyWhenTheStartFails: the generated development key is printed
// only once serve is built; a key file that does not parse used to have
// it print a key nothing would accept, then stop.
func TestNoDevKeyWhenTheStartFails(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "keys.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"keys":[`), 0o600))
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "", "-data", "none", "-keys-file", bad},
		func(string) string { return "" }, &stdout, io.Discard)
	require.ErrorContains(t, err, "key file "+bad)
	require.NotContains(t, stdout.String(), servelines.DevKey)
}

// TestBundledPoisonStopsTheFeed: the embedded feed has no dead-letter
// topic, so an event it can never project stops it with the event named,
// rather than being logged and skipped.
func TestBundledPoisonStopsTheFeed(t *testing.T) {
	rm := newMemoryReadModel(false)
	ix, err := indexer.New(indexer.Params{Writer: rm, Lookup: rm, DeadLetter: feedDeadLetter})
	if err != nil {
		t.Fatal(err)
	}
	feed := indexer.NewFeed(ix, 16)
	err = feed.Run(context.Background(), func(_ context.Context, emit indexer.Emit) error {
		return emit("permitd.locations.v1", []byte("g1"), []byte(`{"schema_version":1,"truncated`))
	})
	if err == nil || !strings.Contains(err.Error(), "can never be projected") || !strings.Contains(err.Error(), `key "g1"`) {
		t.Fatalf("feed error %v", err)
	}
	if feed.CaughtUp() {
		t.Fatal("a failed feed must not report caught up")
	}
}
