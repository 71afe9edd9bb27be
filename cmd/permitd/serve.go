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
	"github.com/permitd/permitd/internal/servelines"
	"github.com/permitd/permitd/readmodel"
)

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
	fs.StringVar(&c.Now, "now", "", "service clock override (RFC 3339 or YYYY-MM-DD, after 1970-01-01T00:00:00Z, years up to 9000); empty: system clock")
	fs.StringVar(&c.CursorSecret, "cursor-secret", "", "HMAC secret for cursors (>= 16 bytes); replicas must share it; random when empty")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "after the drain delay, how long requests in flight may take to finish")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 5*time.Second, "on SIGTERM, how long readiness answers 503 while the server still serves, before it stops accepting")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 10*time.Second, "bound on a business request's reads (read-model retries included); past it: 503 BACKEND_UNAVAILABLE")
	fs.IntVar(&c.ResponseCacheMB, "response-cache-mb", 64, "encoded 200 bodies kept per read-model version (memory backend; 0 turns the cache off; at most 1048576)")
	fs.IntVar(&c.MaxConns, "max-conns", 10000, "cap on open HTTP connections (lowered to fit the file-descriptor limit); at the cap the longest idle one is closed")
}

// maxResponseCacheMB bounds -response-cache-mb: 1 TiB.
const maxResponseCacheMB = 1 << 20

// cacheBytes is api.Params.ResponseCacheBytes for -response-cache-mb (0: off).
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
	if c.ResponseCacheMB < 0 || c.ResponseCacheMB > maxResponseCacheMB {
		// A negative size turned the cache off unannounced, and one past
		// 2^43 MiB wrapped to a byte count of 0 (the api's default).
		errs = append(errs, fmt.Errorf("response-cache-mb must be 0 (off) to %d", maxResponseCacheMB))
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
	s := &serveProcess{cfg: &cfg, e: e, log: log}
	defer s.close()
	if err := s.build(ctx); err != nil {
		return err
	}
	return s.run(ctx)
}

// serveProcess is the serve command's parts: build wires them, run serves
// them in one errgroup, close releases them in reverse order.
type serveProcess struct {
	cfg *serveConfig
	e   env
	log *slog.Logger

	reg       *prometheus.Registry
	accessLog *api.BufferedWriter
	maxConns  int
	embedded  *embeddedIndexer
	kafka     *kafkaIndexer // nil without -kafka-brokers
	quota     quotaParts
	drain     *drain
	deps      api.Params
	handler   http.Handler
	closers   []func()
}

// build wires the parts, in the order each needs the others: telemetry,
// the read model, the indexers that feed it, the quota, then the API
// over all of them.
func (s *serveProcess) build(ctx context.Context) error {
	cfg, log := s.cfg, s.log
	// The access log is buffered (no write syscall per request), flushed
	// every second and, once the server has drained, on the way out.
	s.accessLog = api.NewBufferedWriter(stderrOf(s.e), 0)
	s.onClose(func() { _ = s.accessLog.Flush() })
	s.maxConns = fitConns(cfg.MaxConns, raiseFileLimit(log), log)
	// The generated key is printed once everything is built: a start that
	// fails (a key file that does not parse, say) printed a key nothing
	// would ever accept.
	keys, announceKey := devKeys(cfg.APIKeys, s.e.stdout)
	secret := cursorSecret(cfg.CursorSecret, log)

	s.reg = newRegistry()
	sm := newServeMetrics(s.reg)
	tel, stopTracing, err := newTelemetry(ctx, s.e.getenv, sm.backend, log)
	if err != nil {
		return err
	}
	s.onClose(stopTracing)
	cfg.openSearchConfig.wrap, cfg.quotaConfig.instrument = tel.openSearchTransport, tel.instrumentRedis
	rm, err := openReadModel(ctx, cfg.Backend, cfg.openSearchConfig, cfg.kafkaConfig.enabled(), log)
	if err != nil {
		return err
	}
	s.reg.MustRegister(newReadModelSize(rm))

	clock, clockSource := serviceClock(cfg.now)
	if s.embedded, err = newEmbeddedIndexer(rm, cfg.Data, clock(), cfg.kafkaConfig.enabled(), log, sm.indexer); err != nil {
		return err
	}
	if cfg.kafkaConfig.enabled() {
		if s.kafka, err = newKafkaIndexer(cfg.kafkaConfig, cfg.Backend, rm, rm, log, sm.indexer); err != nil {
			return err
		}
	}
	if s.quota, err = buildQuota(ctx, cfg.quotaConfig, keys, log, s.reg); err != nil {
		return err
	}
	s.onClose(func() { _ = s.quota.Close() })
	s.drain = &drain{Delay: cfg.DrainDelay}

	oas, err := openAPIDocument()
	if err != nil {
		return err
	}
	s.deps = api.Params{
		Reader:             rm,
		Auth:               s.quota.Auth,
		Limiter:            s.quota.Limiter,
		Logger:             log,
		AccessLog:          cfg.accessLogger(s.accessLog),
		Now:                clock,
		ClockSource:        clockSource,
		CursorSecret:       secret,
		OpenAPI:            oas,
		HTTPMetrics:        sm.http,
		Tracing:            tel.apiTracing(),
		CORS:               cfg.cors(),
		Checks:             s.readiness(rm),
		RequestTimeout:     cfg.RequestTimeout,
		ResponseCacheBytes: cacheBytes(cfg.ResponseCacheMB),
	}
	if s.handler, err = api.NewServer(s.deps); err != nil {
		return err
	}
	announceKey()
	return nil
}

// readiness lists the checks of /v1/health/ready: not draining, the read
// model answers, the quota store (always OK), and whatever indexes into
// the read model in this process has caught up. An API-only replica (no
// bundled data, no Kafka: a separate `permitd index` feeds a durable
// backend) is ready once the read model holds documents, i.e. an indexer
// applied a batch.
func (s *serveProcess) readiness(rm readmodel.Reader) []api.ReadinessCheck {
	apiOnly := !s.embedded.hasData() && s.kafka == nil
	checks := []api.ReadinessCheck{s.drain.Check, readModelCheck(rm, apiOnly), s.quota.Check}
	checks = append(checks, s.embedded.checks()...)
	if s.kafka != nil {
		checks = append(checks, s.kafka.Check())
	}
	return checks
}

// run listens on the API and admin addresses and runs every part until
// ctx ends (SIGTERM) and the drain completes, or one part fails.
func (s *serveProcess) run(ctx context.Context) error {
	cfg, log := s.cfg, s.log
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.e.stdout, "%shttp://%s\n", servelines.Serving, ln.Addr())
	serveAdmin, err := listenAdmin(cfg.opsConfig, s.deps, s.reg, s.e, log)
	if err != nil {
		ln.Close()
		return err
	}
	cl := newConnLimit(ln, s.maxConns, nearCapIdle, s.reg, log)
	srv := newHTTPServer(s.handler, log)
	cl.attach(srv)

	g, gctx := errgroup.WithContext(ctx)
	s.drain.serve(gctx, g, srv, cl, cfg.ShutdownTimeout, log)
	serveAdmin(afterDrainDelay(gctx, g, cfg.DrainDelay), g, cfg.ShutdownTimeout)
	g.Go(func() error { return s.quota.Run(gctx) })
	g.Go(func() error { return s.accessLog.Run(gctx, time.Second) })
	if s.kafka != nil {
		g.Go(func() error { return s.kafka.Run(gctx) })
	}
	g.Go(func() error { return s.embedded.Run(gctx) })
	return g.Wait()
}

func (s *serveProcess) onClose(f func()) { s.closers = append(s.closers, f) }

// close releases what build acquired, last first.
func (s *serveProcess) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// afterDrainDelay is a context that ends DrainDelay after ctx, run in g:
// the admin port (probes, metrics) stays up through the drain delay, so
// probes read the 503 readiness rather than a refused connection.
func afterDrainDelay(ctx context.Context, g *errgroup.Group, delay time.Duration) context.Context {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.Go(func() error {
		defer cancel()
		<-ctx.Done()
		time.Sleep(delay)
		return nil
	})
	return actx
}

// stderrOf is e's stderr, the process's when e has none.
func stderrOf(e env) io.Writer {
	if e.stderr != nil {
		return e.stderr
	}
	return os.Stderr
}

// devKeys are the -api-keys; with none, one is generated, and announce
// prints it.
func devKeys(list string, stdout io.Writer) (keys []string, announce func()) {
	keys = splitCSV(list)
	if len(keys) > 0 {
		return keys, func() {}
	}
	k := apikey.NewDevKey()
	return []string{k}, func() { fmt.Fprintf(stdout, "%s%s\n", servelines.DevKey, k) }
}

// cursorSecret is the -cursor-secret, or a random one (with a warning)
// when it is empty.
func cursorSecret(configured string, log *slog.Logger) []byte {
	if configured != "" {
		return []byte(configured)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	log.Warn("no cursor secret configured: cursors will not survive a restart nor work across replicas")
	return secret
}

// serviceClock is the service clock: fixed at now when -now is set, else
// the system clock; the source names which for readiness.
func serviceClock(now time.Time) (clock func() time.Time, source string) {
	if now.IsZero() {
		return time.Now, "system"
	}
	return func() time.Time { return now }, "PERMITD_NOW"
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
	serveOn(g, srv, ln)
	g.Go(func() error {
		<-ctx.Done()
		log.Info("shutting down", "addr", ln.Addr().String())
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		return srv.Shutdown(sctx)
	})
}

// serveOn runs srv on ln in g until it is shut down.
func serveOn(g *errgroup.Group, srv *http.Server, ln net.Listener) {
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
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
