// Package faults is the fault-injection suite (`go test ./test/faults/`,
// part of `make test`): the real `permitd serve` binary, with a fault
// between it and each dependency, and assertions on what its clients saw
// and on what was counted or applied afterwards.
//
//   - Redis: a TCP Proxy (this file) between the service and a real
//     redis-server (started as api/quota/redistest does; skipped with the
//     reason when the binary is absent, failed under REQUIRE_REDIS=1):
//     down, slow past the timeout, and cut in the middle of a reply.
//   - Kafka: an in-process kfake broker whose fetches fail (connection
//     closed) for a while in the middle of an ingest.
//   - OpenSearch: an httptest server in place of the cluster, answering
//     5xx, 429, or too slowly, behind the real opensearch backend.
package faults

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy with faults on demand. It is our own (a few dozen
// lines) rather than toxiproxy: no toxiproxy binary is installed here,
// and its Go server would pull in a dependency tree for three faults.
type Proxy struct {
	ln      net.Listener
	target  string
	mode    atomic.Int32 // modePass, modeDown, modeCut
	latency atomic.Int64 // added to every reply chunk

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

const (
	modePass int32 = iota
	modeDown       // connections are closed as soon as they are accepted
	modeCut        // a reply is cut after its first byte, then the connection closed
)

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() { p.ln.Close(); p.closeAll() }

// Down refuses service: open connections are cut, new ones closed at once.
func (p *Proxy) Down() { p.mode.Store(modeDown); p.closeAll() }

// CutReplies cuts every reply after its first byte, then the connection.
func (p *Proxy) CutReplies() { p.mode.Store(modeCut) }

// Slow delays every reply chunk by d.
func (p *Proxy) Slow(d time.Duration) { p.latency.Store(int64(d)) }

// Heal passes everything through again, without delay.
func (p *Proxy) Heal() { p.mode.Store(modePass); p.latency.Store(0) }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.mode.Load() == modeDown {
			c.Close()
			continue
		}
		go p.pipe(c)
	}
}

func (p *Proxy) pipe(client net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, up)
	defer p.untrack(client, up)
	go func() { _, _ = io.Copy(up, client); up.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			time.Sleep(time.Duration(p.latency.Load()))
			chunk := buf[:n]
			if p.mode.Load() == modeCut {
				_, _ = client.Write(chunk[:1])
				return
			}
			if _, werr := client.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return // upstream closed or failed: so does the client's side
		}
	}
}

func (p *Proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}
