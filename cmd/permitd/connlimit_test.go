package main

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startLimited serves a trivial handler behind a connLimit of max.
func startLimited(t *testing.T, max int, nearIdle time.Duration) (*connLimit, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cl := newConnLimit(ln, max, nearIdle, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		// Long enough that only the limiter can free a slot in time.
		ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute,
	}
	cl.attach(srv)
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() { _ = srv.Close() })
	return cl, "http://" + ln.Addr().String()
}

func TestConnCapEvictsTheLongestIdle(t *testing.T) {
	const max = 20
	cl, base := startLimited(t, max, time.Minute)
	// Twice the cap in connections that send nothing, and keep-alive
	// connections left idle.
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for range 2 * max {
		c, err := net.Dial("tcp", base[len("http://"):])
		require.NoError(t, err)
		held = append(held, c)
	}
	idle := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max}}
	defer idle.CloseIdleConnections()
	time.Sleep(newIdleGrace + 100*time.Millisecond) // the silent ones are past their grace

	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	for range 5 {
		res, err := fresh.Get(base)
		require.NoError(t, err, "a new client is served at the cap")
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	assert.LessOrEqual(t, metricValue(cl.gauge), float64(max))
	assert.GreaterOrEqual(t, metricValue(cl.evicted), float64(max), "silent connections were closed to make room")
}

func TestConnCapShortensIdleNearTheCap(t *testing.T) {
	const max = 10
	cl, base := startLimited(t, max, time.Second)
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range max {
		c, err := net.Dial("tcp", base[len("http://"):])
		require.NoError(t, err)
		conns = append(conns, c)
	}
	require.Eventually(t, func() bool { return metricValue(cl.gauge) == max }, 5*time.Second, 10*time.Millisecond)
	for _, c := range conns {
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n")
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	require.Eventually(t, func() bool { return metricValue(cl.gauge) == 0 }, 10*time.Second, 50*time.Millisecond,
		"near the cap, idle keep-alive connections get the short idle timeout, not the server's minute")
}

func metricValue(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		panic(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
