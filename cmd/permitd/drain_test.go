package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/servelines"
)

// TestServeDrainsBeforeShutdown cancels serve's context (what SIGTERM
// does) and checks the sequence: readiness says draining at once, the
// server still answers on an open keep-alive connection and on new ones
// during the drain delay, then stops accepting, and serve returns nil.
func TestServeDrainsBeforeShutdown(t *testing.T) {
	const delay = 1500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-log-level", "warn", "-data", "none",
			"-drain-delay", delay.String(), "-shutdown-timeout", "5s"}, func(string) string { return "" }, pw, io.Discard)
		pw.Close()
	}()
	lines := servelines.Read(pr, servelines.BaseKey)
	base, key := lines.Base, lines.DevKey
	require.NotEmpty(t, base)

	keepAlive := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	call := func(c *http.Client, path string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("X-API-Key", key)
		res, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode, nil
	}
	shutdownCheck := func() map[string]any {
		res, err := http.Get(base + "/v1/health/ready")
		require.NoError(t, err)
		defer res.Body.Close()
		var body struct {
			Checks map[string]map[string]any `json:"checks"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
		return body.Checks["shutdown"]
	}
	code, err := call(keepAlive, "/v1/locations/gabc")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "ok", shutdownCheck()["status"])

	start := time.Now()
	cancel()
	require.Eventually(t, func() bool { return shutdownCheck()["status"] == "not_ready" }, time.Second, 5*time.Millisecond,
		"readiness turns 503 at once")
	assert.Equal(t, true, shutdownCheck()["draining"])
	for time.Since(start) < delay-500*time.Millisecond {
		code, err := call(keepAlive, "/v1/locations/gabc")
		require.NoError(t, err, "the open keep-alive connection is served during the drain")
		require.Equal(t, http.StatusNotFound, code)
		code, err = call(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, "/v1/health/live")
		require.NoError(t, err, "new connections are accepted during the drain")
		require.Equal(t, http.StatusOK, code)
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after the drain")
	}
	assert.GreaterOrEqual(t, time.Since(start), delay, "serve waited out the drain delay")
	_, err = call(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, "/v1/health/live")
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the port is closed after shutdown")
}
