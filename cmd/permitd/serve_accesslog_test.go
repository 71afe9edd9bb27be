package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/servelines"
	"github.com/permitd/permitd/internal/syncbuf"
)

// TestShutdownUnderLoadLosesNoAccessLogLine: serve's context is
// cancelled (what SIGTERM does) while clients keep requesting; every 200
// a client saw has its line in the (buffered) access log once serve has
// returned.
func TestShutdownUnderLoadLosesNoAccessLogLine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	stderr := &syncbuf.Buffer{} // serve logs while the test reads
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-drain-delay", "0s", "-log-level", "info", "-data", "none"},
			func(string) string { return "" }, pw, stderr)
		pw.Close()
	}()
	lines := servelines.Read(pr, servelines.BaseKey)
	base, key := lines.Base, lines.DevKey
	require.NotEmpty(t, base)

	var seen atomic.Int64
	client := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				req, _ := http.NewRequest(http.MethodGet, base+"/v1/locations/resolve?q=seattle", nil)
				req.Header.Set("X-API-Key", key)
				res, err := client.Do(req)
				if err != nil {
					return // the server has stopped accepting
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err == nil && res.StatusCode == http.StatusOK {
					seen.Add(1)
				}
			}
		})
	}
	require.Eventually(t, func() bool { return seen.Load() >= 300 }, 20*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	wg.Wait()

	logged := 0
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "msg=request ") && strings.Contains(l, "route=/v1/locations/resolve") && strings.Contains(l, "status=200") {
			logged++
		}
	}
	require.EqualValues(t, seen.Load(), logged, "every 200 a client saw is in the access log")
}

// TestServeAccessLogFormats: serve's access log writes its request lines
// in the format -log-format names (the lines api.AccessLogger writes
// itself), with the request's fields.
func TestServeAccessLogFormats(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			pr, pw := io.Pipe()
			stderr := &syncbuf.Buffer{}
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "", "-drain-delay", "0s", "-log-level", "info", "-log-format", format, "-data", "none"},
					func(string) string { return "" }, pw, stderr)
				pw.Close()
			}()
			lines := servelines.Read(pr, servelines.BaseKey)
			require.NotEmpty(t, lines.Base)
			for _, key := range []string{lines.DevKey, "wrong"} {
				req, _ := http.NewRequest(http.MethodGet, lines.Base+"/v1/signals/catalog", nil)
				req.Header.Set("X-API-Key", key)
				req.Header.Set("X-Request-ID", "fmt-"+format+"-"+key[:1])
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			cancel()
			require.NoError(t, <-done)

			var got []map[string]any
			for _, l := range strings.Split(stderr.String(), "\n") {
				if !strings.Contains(l, "fmt-"+format) || !strings.Contains(l, "msg=request ") && !strings.Contains(l, `"msg":"request"`) {
					continue // another request's, or the failed key's own line
				}
				m := map[string]any{}
				if format == "json" {
					require.NoError(t, json.Unmarshal([]byte(l), &m), "%s", l)
				} else {
					require.True(t, strings.HasPrefix(l, "time="), "%s", l)
					for _, f := range strings.Fields(l) {
						k, v, _ := strings.Cut(f, "=")
						m[k] = v
					}
				}
				got = append(got, m)
			}
			require.Len(t, got, 2, "%s", stderr.String())
			for i, want := range []struct {
				status string
				keyID  bool
			}{{"200", true}, {"403", false}} {
				require.Equal(t, "request", got[i]["msg"])
				require.Equal(t, "/v1/signals/catalog", got[i]["route"])
				require.Equal(t, want.status, fmt.Sprint(got[i]["status"]))
				_, hasKey := got[i]["key_id"]
				require.Equal(t, want.keyID, hasKey)
				require.NotEmpty(t, got[i]["duration"])
			}
		})
	}
}
