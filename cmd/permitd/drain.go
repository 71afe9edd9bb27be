package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/permitd/permitd/api"
)

// drain is serve's shutdown sequence for the HTTP server. On SIGTERM:
//
//  1. readiness answers 503 at once (check "shutdown"), so a load
//     balancer stops sending new requests;
//  2. the server goes on serving everything for Delay, on open
//     keep-alive connections and new ones alike, while the balancer
//     notices;
//  3. http.Server.Shutdown: the listener closes, idle keep-alive
//     connections are closed, requests in flight finish within the
//     shutdown timeout (past it, their connections are closed).
//
// The indexers stop at SIGTERM itself: each finishes and commits the
// batch in hand (see kafkaIndexer.Run), which needs no HTTP.
type drain struct {
	Delay    time.Duration
	draining atomic.Bool
	since    atomic.Int64 // unix nanos
}

// Check is the readiness check: not ready from the moment shutdown begins.
func (d *drain) Check(context.Context) api.Check {
	if !d.draining.Load() {
		return api.Check{Name: "shutdown", OK: true, Detail: map[string]any{"draining": false}}
	}
	return api.Check{Name: "shutdown", Detail: map[string]any{
		"draining": true, "drain_delay": d.Delay.String(),
		"draining_for": time.Since(time.Unix(0, d.since.Load())).Round(time.Millisecond).String(),
	}}
}

// serve runs srv on ln in g; once ctx (g's context) ends it drains as
// above, letting requests in flight finish within timeout.
func (d *drain) serve(ctx context.Context, g *errgroup.Group, srv *http.Server, ln net.Listener, timeout time.Duration, log *slog.Logger) {
	serveOn(g, srv, ln)
	g.Go(func() error {
		<-ctx.Done()
		d.since.Store(time.Now().UnixNano())
		d.draining.Store(true)
		log.Info("draining: readiness is 503; still serving", "addr", ln.Addr().String(), "for", d.Delay)
		time.Sleep(d.Delay)
		log.Info("shutting down: no new connections; finishing requests in flight", "addr", ln.Addr().String(), "timeout", timeout)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
			return err
		}
		return nil
	})
}
