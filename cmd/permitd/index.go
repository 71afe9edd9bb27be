package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/indexer"
)

// indexConfig is the index command's configuration.
//
// The indexer-only process exists for durable backends (OpenSearch):
// several of them share a consumer group and the API replicas read the
// backend. The memory backend's state lives in the process: `index
// -backend memory` works (it replays every partition and reports progress
// and metrics) but serves no reads; use `serve -kafka-brokers ...` for API
// plus indexer in one process.
type indexConfig struct {
	commonConfig
	openSearchConfig
	Kafka           kafkaConfig
	Backend         string
	Addr            string
	ShutdownTimeout time.Duration
}

func (c *indexConfig) bind(fs *flagSet) {
	c.commonConfig.bind(fs)
	c.openSearchConfig.bind(fs)
	c.Kafka.bind(fs)
	fs.StringVar(&c.Backend, "backend", "memory", "read-model backend: memory or opensearch")
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:9464", "listen address of /metrics, /v1/health/live and /v1/health/ready (also at /health/live and /health/ready); empty: none")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long shutdown may drain")
}

// Validate checks every field and fails fast.
func (c *indexConfig) Validate() error {
	errs := []error{c.commonConfig.validate(), c.Kafka.validate(true)}
	if err := validBackend(c.Backend); err != nil {
		errs = append(errs, err)
	} else if c.Backend == "opensearch" {
		errs = append(errs, c.openSearchConfig.validate())
	}
	if c.Addr != "" {
		errs = append(errs, validateAddr(c.Addr))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("shutdown-timeout must be positive"))
	}
	return errors.Join(errs...)
}

func runIndex(ctx context.Context, e env, args []string) error {
	var cfg indexConfig
	if err := loadConfig("index", e, args, &cfg); err != nil {
		return err
	}
	log := cfg.logger(e.stderr)
	log.Info("starting permitd index", append([]any{"backend", cfg.Backend, "addr", cfg.Addr}, cfg.Kafka.logValue()...)...)
	if !durableBackend(cfg.Backend) {
		log.Warn("memory backend: the indexed state lives in this process and serves no reads; use serve -kafka-brokers for API plus indexer")
	}

	// Listen before anything starts, so a taken address fails fast and
	// leaves no consumer running.
	var ln net.Listener
	if cfg.Addr != "" {
		var err error
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return err
		}
		defer ln.Close() // on an early return; Shutdown closes it otherwise
		fmt.Fprintf(e.stdout, "metrics and health on http://%s\n", ln.Addr())
	}

	reg := newRegistry()
	cfg.openSearchConfig.wrap = telemetry{metrics: newBackendMetrics(reg)}.openSearchTransport
	rm, err := openReadModel(ctx, cfg.Backend, cfg.openSearchConfig, false, log)
	if err != nil {
		return err
	}
	k, err := newKafkaIndexer(cfg.Kafka, cfg.Backend, rm, rm, log, indexer.NewMetrics(reg))
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return k.Run(gctx) })
	if ln != nil {
		serveHTTP(gctx, g, newHTTPServer(indexMux(reg, k.Check()), log), ln, cfg.ShutdownTimeout, log)
	}
	err = g.Wait()
	p := k.Indexer.Progress()
	log.Info("permitd index stopped", "batches", p.Batches, "events_applied", p.Applied, "dead_letters", p.DeadLetters)
	return err
}

// indexMux serves the indexer-only process's admin endpoints, with the
// answers of serve's admin port (api.NewAdmin): /metrics, and
// /v1/health/live and /v1/health/ready (503 until check is OK) in the API's
// readiness shape. /health/live and /health/ready, the paths this process
// served first (deploy/k8s probes them), give the same answers.
func indexMux(reg *prometheus.Registry, check api.ReadinessCheck) http.Handler {
	admin := api.NewAdmin(api.Params{Checks: []api.ReadinessCheck{check}}, api.AdminParams{
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	})
	mux := http.NewServeMux()
	mux.Handle("/", admin)
	mux.HandleFunc("GET /health/{probe}", func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.URL.Path = "/v1" + r.URL.Path
		r.URL.RawPath = ""
		admin.ServeHTTP(w, r)
	})
	return mux
}
