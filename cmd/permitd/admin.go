package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/internal/servelines"
)

// opsConfig configures serve's admin listener (/metrics, the health
// endpoints and, behind -pprof, Go's profiles) and CORS. The admin
// listener never faces the public: the default binds loopback; in a pod
// bind 0.0.0.0:9091 and expose it only to the kubelet and Prometheus
// (deploy/k8s).
type opsConfig struct {
	AdminAddr   string
	Pprof       bool
	CORSOrigins string
}

func (c *opsConfig) bind(fs *flagSet) {
	fs.StringVar(&c.AdminAddr, "admin-addr", "127.0.0.1:9091", "admin listen address: /metrics, /v1/health/live, /v1/health/ready, /debug/pprof/ (with -pprof); empty: none")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve Go's profiles under /debug/pprof/ on the admin address")
	fs.StringVar(&c.CORSOrigins, "cors-origins", "", "comma-separated browser origins (https://dash.example.com) allowed to call the API with their own key; empty: CORS off")
}

func (c *opsConfig) validate() error {
	var errs []error
	if c.AdminAddr != "" {
		if err := validateAddr(c.AdminAddr); err != nil {
			errs = append(errs, fmt.Errorf("admin-addr: %w", err))
		}
	} else if c.Pprof {
		errs = append(errs, errors.New("pprof needs an admin-addr to serve on"))
	}
	for _, o := range splitCSV(c.CORSOrigins) {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("cors-origins: %q is not an origin (scheme://host[:port])", o))
		}
	}
	return errors.Join(errs...)
}

func (c *opsConfig) logValue() []any {
	return []any{"admin_addr", c.AdminAddr, "pprof", c.Pprof, "cors_origins", c.CORSOrigins}
}

// cors is the API's CORS configuration.
func (c *opsConfig) cors() api.CORS { return api.CORS{Origins: splitCSV(c.CORSOrigins)} }

// listenAdmin listens on cfg.AdminAddr and returns what serves the admin
// handler in an errgroup until its context ends; with an empty address
// both are no-ops. Listening first makes a taken address fail fast.
func listenAdmin(cfg opsConfig, d api.Params, reg *prometheus.Registry, e env, log *slog.Logger) (func(ctx context.Context, g *errgroup.Group, timeout time.Duration), error) {
	if cfg.AdminAddr == "" {
		return func(context.Context, *errgroup.Group, time.Duration) {}, nil
	}
	ln, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		return nil, fmt.Errorf("admin-addr: %w", err)
	}
	fmt.Fprintf(e.stdout, "%shttp://%s\n", servelines.Admin, ln.Addr())
	h := api.NewAdmin(d, api.AdminParams{
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Pprof:   cfg.Pprof,
	})
	srv := newHTTPServer(h, log)
	if cfg.Pprof {
		// A CPU profile or an execution trace streams for ?seconds=.
		srv.WriteTimeout = 0
	}
	return func(ctx context.Context, g *errgroup.Group, timeout time.Duration) {
		serveHTTP(ctx, g, srv, ln, timeout, log)
	}, nil
}
