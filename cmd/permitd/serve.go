package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

func init() {
	register("serve", "serve the API with the embedded indexer (bundled data by default)", runServe)
}

// serveConfig is the serve command's configuration: flags, with
// PERMITD_<FLAG> variables as defaults.
type serveConfig struct {
	commonConfig
	openSearchConfig
	quotaConfig
	kafkaConfig
	opsConfig
	gcConfig
	Addr            string
	APIKeys         string
	Backend         string
	Data            string
	Now             string
	CursorSecret    string
	ShutdownTimeout time.Duration
	DrainDelay      time.Duration
	RequestTimeout  time.Duration
	MaxConns        int
	ResponseCacheMB int

	now time.Time // parsed Now
}

func (c *serveConfig) bind(fs *flagSet) {
	c.commonConfig.bind(fs)
	c.openSearchConfig.bind(fs)
	c.quotaConfig.bind(fs)
	c.kafkaConfig.bind(fs)
	c.opsConfig.bind(fs)
	c.gcConfig.bind(fs)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&c.APIKeys, "api-keys", "", "comma-separated development API keys (one is generated and printed when empty)")
	fs.StringVar(&c.Backend, "backend", "memory", "read-model backend: memory or opensearch")
	fs.StringVar(&c.Data, "data", "bundled", "initial events: bundled (the shipped real data) or none")
	fs.StringVar(&c.Now, "now", "", "service clock override (RFC 3339 or YYYY-MM-DD); empty: system clock")
	fs.StringVar(&c.CursorSecret, "cursor-secret", "", "HMAC secret for cursors (>= 16 bytes); replicas must share it; random when empty")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "after the drain delay, how long requests in flight may take to finish")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 5*time.Second, "on SIGTERM, how long readiness answers 503 while the server still serves, before it stops accepting")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 10*time.Second, "bound on a business request's reads (read-model retries included); past it: 503 BACKEND_UNAVAILABLE")
	fs.IntVar(&c.ResponseCacheMB, "response-cache-mb", 64, "encoded 200 bodies kept per read-model version (memory backend; 0 turns the cache off)")
	fs.IntVar(&c.MaxConns, "max-conns", 10000, "cap on open HTTP connections (lowered to fit the file-descriptor limit); at the cap the longest idle one is closed")
}

// cacheBytes is api.Deps.ResponseCacheBytes for -response-cache-mb (0: off).
func cacheBytes(mb int) int64 {
	if mb <= 0 {
		return -1
	}
	return int64(mb) << 20
}

// Validate checks every field and fails fast.
func (c *serveConfig) Validate() error {
	var errs []error
	errs = append(errs, c.commonConfig.validate(), validateAddr(c.Addr),
		c.quotaConfig.validate(), c.kafkaConfig.validate(false), c.opsConfig.validate(), c.gcConfig.validate())
	if err := validBackend(c.Backend); err != nil {
		errs = append(errs, err)
	} else if c.Backend == "opensearch" {
		errs = append(errs, c.openSearchConfig.validate())
	}
	if c.Data != "bundled" && c.Data != "none" {
		errs = append(errs, fmt.Errorf("data %q: want bundled or none", c.Data))
	}
	if c.CursorSecret != "" && len(c.CursorSecret) < 16 {
		errs = append(errs, errors.New("cursor-secret must be at least 16 bytes"))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("shutdown-timeout must be positive"))
	}
	if c.DrainDelay < 0 {
		errs = append(errs, errors.New("drain-delay must not be negative"))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, errors.New("request-timeout must be positive"))
	}
	if c.MaxConns < 1 {
		errs = append(errs, errors.New("max-conns must be at least 1"))
	}
	t, err := parseNow(c.Now)
	errs = append(errs, err)
	c.now = t
	return errors.Join(errs...)
}

// logValue lists the configuration with secrets masked.
func (c *serveConfig) logValue() []any {
	out := []any{
		"addr", c.Addr, "backend", c.Backend, "data", c.Data,
		"api_keys", maskList(splitCSV(c.APIKeys)), "cursor_secret", mask(c.CursorSecret),
		"now", c.Now, "log_level", c.LogLevel,
		"shutdown_timeout", c.ShutdownTimeout, "drain_delay", c.DrainDelay, "request_timeout", c.RequestTimeout, "max_conns", c.MaxConns, "response_cache_mb", c.ResponseCacheMB,
	}
	if c.Backend == "opensearch" {
		out = append(out, c.openSearchConfig.logValue()...)
	}
	out = append(out, c.quotaConfig.logValue()...)
	out = append(out, c.opsConfig.logValue()...)
	return append(out, c.kafkaConfig.logValue()...)
}

func runServe(ctx context.Context, e env, args []string) error {
	var cfg serveConfig
	if err := loadConfig("serve", e, args, &cfg); err != nil {
		return err
	}
	log := cfg.logger(e.stderr)
	log.Info("starting permitd serve", cfg.logValue()...)
	gc, err := cfg.gcConfig.apply(e.getenv)
	if err != nil {
		return err
	}
	log.Info("garbage collector", "target", gc)
	// The access log is buffered (no write syscall per request), flushed
	// every second and, once the server has drained, on the way out.
	var stderr io.Writer = os.Stderr
	if e.stderr != nil {
		stderr = e.stderr
	}
	accessBuf := api.NewBufferedWriter(stderr, 0)
	defer func() { _ = accessBuf.Flush() }()
	maxConns := fitConns(cfg.MaxConns, raiseFileLimit(log), log)

	keys := splitCSV(cfg.APIKeys)
	if len(keys) == 0 {
		k := apikey.NewDevKey()
		keys = []string{k}
		fmt.Fprintf(e.stdout, "development API key: %s\n", k)
	}
	secret := []byte(cfg.CursorSecret)
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
		log.Warn("no cursor secret configured: cursors will not survive a restart nor work across replicas")
	}

	reg := newRegistry()
	sm := newServeMetrics(reg)
	tel, stopTracing, err := newTelemetry(ctx, e.getenv, sm.backend, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	cfg.openSearchConfig.wrap, cfg.quotaConfig.instrument = tel.openSearchTransport, tel.instrumentRedis
	rm, err := openReadModel(ctx, cfg.Backend, cfg.openSearchConfig, log)
	if err != nil {
		return err
	}
	reg.MustRegister(newReadModelSize(rm))
	metrics := sm.indexer
	ix, err := indexer.New(indexer.Params{
		Writer: rm, Lookup: rm, DeadLetter: feedDeadLetter, Logger: log, Metrics: metrics,
	})
	if err != nil {
		return err
	}
	feed := indexer.NewFeed(ix, 4096)
	feedCheck := "indexer"
	var kix *kafkaIndexer
	if cfg.kafkaConfig.enabled() {
		feedCheck = "bundled_feed"
		if kix, err = newKafkaIndexer(cfg.kafkaConfig, cfg.Backend, rm, rm, log, metrics); err != nil {
			return err
		}
	}

	q, err := buildQuota(ctx, cfg.quotaConfig, keys, log, reg)
	if err != nil {
		return err
	}
	defer q.Close()

	clock, source := time.Now, "system"
	if !cfg.now.IsZero() {
		fixed := cfg.now
		clock, source = func() time.Time { return fixed }, "PERMITD_NOW"
	}
	oas, err := openAPIDocument()
	if err != nil {
		return err
	}
	embeddedFeed := cfg.Data != "none"
	var producers []indexer.Producer
	var signalsCheck api.ReadinessCheck
	if embeddedFeed {
		if producers, signalsCheck, err = withSignals(bundledSignalData(clock(), cfg.Data), bundledProducers(cfg.Data)); err != nil {
			return err
		}
	}
	// Readiness: the read model answers, and whatever indexes into it in
	// this process has caught up. An API-only replica (no bundled data, no
	// Kafka: a separate `permitd index` feeds a durable backend) is ready
	// once the read model holds documents, i.e. an indexer applied a batch.
	dr := &drain{Delay: cfg.DrainDelay}
	checks := []api.ReadinessCheck{dr.Check, readModelCheck(rm, !embeddedFeed && kix == nil), q.Check}
	if embeddedFeed {
		checks = append(checks, signalsCheck, func(context.Context) api.Check {
			p := ix.Progress()
			return api.Check{Name: feedCheck, OK: feed.CaughtUp() && p.Batches > 0, Detail: map[string]any{
				"source": "embedded:" + cfg.Data, "caught_up": feed.CaughtUp(), "lag": feed.Lag(),
				"batches_applied": p.Batches, "events_applied": p.Applied, "dead_letters": p.DeadLetters,
			}}
		})
	}
	if kix != nil {
		checks = append(checks, kix.Check())
	}
	deps := api.Deps{
		Reader:             rm,
		Auth:               q.Auth,
		Limiter:            q.Limiter,
		Logger:             log,
		AccessLog:          cfg.logger(accessBuf),
		Now:                clock,
		ClockSource:        source,
		CursorSecret:       secret,
		OpenAPI:            oas,
		HTTPMetrics:        sm.http,
		Tracing:            tel.apiTracing(),
		CORS:               cfg.cors(),
		Checks:             checks,
		RequestTimeout:     cfg.RequestTimeout,
		ResponseCacheBytes: cacheBytes(cfg.ResponseCacheMB),
	}
	handler, err := api.NewServer(deps)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "serving on http://%s\n", ln.Addr())
	serveAdmin, err := listenAdmin(cfg.opsConfig, deps, reg, e, log)
	if err != nil {
		ln.Close()
		return err
	}
	cl := newConnLimit(ln, maxConns, nearCapIdle, reg, log)
	srv := newHTTPServer(handler, log)
	cl.attach(srv)

	g, gctx := errgroup.WithContext(ctx)
	dr.serve(gctx, g, srv, cl, cfg.ShutdownTimeout, log)
	// The admin port (probes, metrics) stays up through the drain delay,
	// so probes read the 503 readiness rather than a refused connection.
	actx, acancel := context.WithCancel(context.WithoutCancel(gctx))
	g.Go(func() error {
		defer acancel()
		<-gctx.Done()
		time.Sleep(cfg.DrainDelay)
		return nil
	})
	serveAdmin(actx, g, cfg.ShutdownTimeout)
	g.Go(func() error { return q.Run(gctx) })
	g.Go(func() error { return accessBuf.Run(gctx, time.Second) })
	if kix != nil {
		g.Go(func() error { return kix.Run(gctx) })
	}
	g.Go(func() error {
		start := time.Now()
		if err := feed.Run(gctx, producers...); err != nil {
			if gctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("embedded indexer: %w", err)
		}
		p := ix.Progress()
		log.Info("embedded indexer caught up", "events_applied", p.Applied, "dead_letters", p.DeadLetters, "took", time.Since(start).Round(time.Millisecond))
		return nil
	})
	return g.Wait()
}

// newHTTPServer bounds every phase of a request and the header size.
func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// newRegistry is a process's Prometheus registry, with the Go runtime and
// process collectors and permitd_build_info.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newBuildInfo())
	return reg
}

// serveHTTP runs srv on ln in g; once ctx (g's context) ends it shuts srv
// down, letting requests in flight finish within timeout.
func serveHTTP(ctx context.Context, g *errgroup.Group, srv *http.Server, ln net.Listener, timeout time.Duration, log *slog.Logger) {
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		log.Info("shutting down", "addr", ln.Addr().String())
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		return srv.Shutdown(sctx)
	})
}

// readModelCheck reports whether the read model answers; with needDocs it
// also needs at least one document (evidence that an indexer elsewhere
// has applied a batch).
func readModelCheck(r readmodel.Reader, needDocs bool) api.ReadinessCheck {
	return func(ctx context.Context) api.Check {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		h, err := r.Health(ctx)
		if err != nil {
			return api.Check{Name: "read_model", Detail: map[string]any{"error": err.Error()}}
		}
		counts := map[string]int64{}
		var total int64
		for k, v := range h.Counts {
			counts[string(k)] = v
			total += v
		}
		return api.Check{Name: "read_model", OK: !needDocs || total > 0, Detail: map[string]any{"backend": h.Backend, "documents": counts}}
	}
}

// feedDeadLetter is the embedded feed's dead-letter sink. There is no
// dead-letter topic in process, and the bundled data is built and tested
// to have no poison event, so one is a defect of the build: rather than log
// and skip it, the feed fails and serve stops, naming the event and why.
func feedDeadLetter(_ context.Context, m indexer.Message, reason error) error {
	return fmt.Errorf("bundled event %d (%s, key %q) can never be projected: %w", m.Offset, m.Topic, m.Key, reason)
}
