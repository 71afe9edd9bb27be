package main

import (
	"container/list"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// connLimit caps the server's open connections (a file descriptor each)
// below the process's limit, so that a flood of idle connections cannot
// starve new clients. What it does that x/net/netutil.LimitListener does
// not (which only blocks Accept at the cap, leaving new clients in the
// kernel's backlog behind the idle ones):
//
//   - at the cap, Accept closes the connection idle the longest (a
//     keep-alive connection between requests, or one that has sent
//     nothing for newIdleGrace) to make room for the new one, as nginx
//     reuses keep-alive connections when it runs out; only when every
//     connection is busy does Accept wait for one to close;
//   - above nearFraction of the cap, idle keep-alive connections and
//     connections that have not sent a request yet get nearCapIdle
//     instead of the server's IdleTimeout and ReadHeaderTimeout.
//
// Wire it with attach, which installs the ConnState hook.
type connLimit struct {
	net.Listener
	max         int
	near        int
	nearCapIdle time.Duration
	log         *slog.Logger

	mu    sync.Mutex
	open  int
	openN atomic.Int64 // open, for nearCap without the lock
	idle  *list.List   // *limitedConn, longest idle first
	freed chan struct{}

	gauge   prometheus.Gauge
	evicted prometheus.Counter
	waits   prometheus.Counter
}

const (
	nearFraction = 0.9
	newIdleGrace = time.Second
)

func newConnLimit(ln net.Listener, max int, nearCapIdle time.Duration, reg prometheus.Registerer, log *slog.Logger) *connLimit {
	l := &connLimit{
		Listener: ln, max: max, near: int(float64(max) * nearFraction), nearCapIdle: nearCapIdle, log: log,
		idle: list.New(), freed: make(chan struct{}, 1),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "permitd_http_connections", Help: "Open HTTP connections (capped by -max-conns).",
		}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "permitd_http_connections_evicted_total", Help: "Idle HTTP connections closed at the connection cap to admit a new one.",
		}),
		waits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "permitd_http_accept_waits_total", Help: "Accepts that waited at the connection cap because every connection was busy.",
		}),
	}
	max_ := prometheus.NewGauge(prometheus.GaugeOpts{Name: "permitd_http_connections_max", Help: "The connection cap (-max-conns)."})
	max_.Set(float64(max))
	if reg != nil {
		reg.MustRegister(l.gauge, l.evicted, l.waits, max_)
	}
	return l
}

// attach makes srv report connection states to l.
func (l *connLimit) attach(srv *http.Server) {
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if lc, ok := c.(*limitedConn); ok {
			l.track(lc, s)
		}
		if prev != nil {
			prev(c, s)
		}
	}
}

// Accept waits for a free slot (evicting the longest idle connection at
// the cap), then accepts.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for waited := false; ; {
		l.mu.Lock()
		if l.open < l.max {
			l.open++
			l.openN.Store(int64(l.open))
			l.gauge.Set(float64(l.open))
			lc := &limitedConn{Conn: c, l: l, since: time.Now(), state: http.StateNew}
			lc.elem = l.idle.PushBack(lc)
			l.mu.Unlock()
			return lc, nil
		}
		victim := l.oldestIdle()
		l.mu.Unlock()
		if victim != nil {
			l.evicted.Inc()
			victim.Close() // frees the slot at once
			continue
		}
		if !waited {
			waited = true
			l.waits.Inc()
		}
		select {
		case <-l.freed:
		case <-time.After(50 * time.Millisecond): // a new connection may have aged past its grace
		}
	}
}

// oldestIdle is the longest idle connection that may be closed, or nil.
// Caller holds l.mu.
func (l *connLimit) oldestIdle() *limitedConn {
	now := time.Now()
	for e := l.idle.Front(); e != nil; e = e.Next() {
		c := e.Value.(*limitedConn)
		if c.state == http.StateIdle || now.Sub(c.since) >= newIdleGrace {
			return c
		}
	}
	return nil
}

func (l *connLimit) track(c *limitedConn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return
	}
	c.state = s
	switch s {
	case http.StateIdle:
		c.since = time.Now()
		if c.elem != nil {
			l.idle.MoveToBack(c.elem)
		} else {
			c.elem = l.idle.PushBack(c)
		}
	case http.StateActive, http.StateHijacked:
		if c.elem != nil {
			l.idle.Remove(c.elem)
			c.elem = nil
		}
	}
}

func (l *connLimit) release(c *limitedConn) {
	l.mu.Lock()
	if c.closed {
		l.mu.Unlock()
		return
	}
	c.closed = true
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
	l.open--
	l.openN.Store(int64(l.open))
	l.gauge.Set(float64(l.open))
	l.mu.Unlock()
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// nearCap reports whether the server is close to the cap.
func (l *connLimit) nearCap() bool { return l.openN.Load() >= int64(l.near) }

// limitedConn is one accepted connection; fields under l.mu.
type limitedConn struct {
	net.Conn
	l      *connLimit
	elem   *list.Element // in l.idle while new or idle
	since  time.Time     // accepted, or became idle
	state  http.ConnState
	closed bool
}

func (c *limitedConn) Close() error {
	c.l.release(c)
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection, as net/http does before
// closing one on which it answered an error.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SetReadDeadline shortens the deadline the server sets while the
// connection waits for a request (new or idle keep-alive) when the server
// is near its cap.
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && c.l.nearCap() {
		c.l.mu.Lock()
		waiting := c.state == http.StateNew || c.state == http.StateIdle
		c.l.mu.Unlock()
		if d := time.Now().Add(c.l.nearCapIdle); waiting && t.After(d) {
			t = d
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline applies SetReadDeadline's rule to the read side.
func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit (the Go
// runtime does so too, since Go 1.19; this makes it explicit and logs
// both) and returns the soft limit in force.
func raiseFileLimit(log *slog.Logger) uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		log.Warn("cannot read the file-descriptor limit", "err", err)
		return 0
	}
	before := r.Cur
	if r.Cur < r.Max {
		r.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			log.Warn("cannot raise the file-descriptor limit", "soft", before, "hard", r.Max, "err", err)
			r.Cur = before
		}
	}
	log.Info("file-descriptor limit", "soft", r.Cur, "hard", r.Max, "soft_at_start", before)
	return r.Cur
}

// nearCapIdle is the idle and header timeout near the connection cap.
const nearCapIdle = 2 * time.Second

// fitConns lowers the connection cap to leave fdReserve descriptors of the
// soft limit for everything else (Redis, Kafka, files).
func fitConns(want int, softLimit uint64, log *slog.Logger) int {
	const fdReserve = 512
	if softLimit == 0 || uint64(want)+fdReserve <= softLimit {
		return want
	}
	fit := max(int(softLimit)-fdReserve, 1)
	log.Warn("max-conns lowered to fit the file-descriptor limit", "max_conns", want, "lowered_to", fit, "soft_limit", softLimit)
	return fit
}
