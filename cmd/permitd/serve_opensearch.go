package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel/opensearch"
)

// openSearchConfig configures the OpenSearch backend; serve and index bind
// it next to -backend, `permitd opensearch` binds it alone. Every flag
// reads PERMITD_<FLAG> (PERMITD_OPENSEARCH_URLS, ...).
type openSearchConfig struct {
	URLs     string
	Username string
	Password string
	Insecure bool
	Prefix   string
	Shards   int
	Replicas int
	Timeout  time.Duration
	awsConfig

	// wrap, when set by the command, wraps the client's HTTP transport
	// (serve's metrics and traces).
	wrap func(http.RoundTripper) http.RoundTripper
}

func (c *openSearchConfig) bind(fs *flagSet) {
	fs.StringVar(&c.URLs, "opensearch-urls", "http://127.0.0.1:9200", "comma-separated OpenSearch node URLs (backend opensearch)")
	fs.StringVar(&c.Username, "opensearch-username", "", "OpenSearch basic-auth user; empty: none")
	fs.StringVar(&c.Password, "opensearch-password", "", "OpenSearch basic-auth password")
	fs.BoolVar(&c.Insecure, "opensearch-insecure", false, "skip TLS verification (demo certificates only)")
	fs.StringVar(&c.Prefix, "opensearch-prefix", mappings.DefaultPrefix, "prefix of every index, alias and template")
	fs.IntVar(&c.Shards, "opensearch-shards", 1, "primary shards of new indices (init, reindex)")
	fs.IntVar(&c.Replicas, "opensearch-replicas", 1, "replicas of new indices (init, reindex)")
	fs.DurationVar(&c.Timeout, "opensearch-timeout", 30*time.Second, "per-attempt HTTP timeout")
	c.awsConfig.bind(fs)
}

func (c *openSearchConfig) validate() error {
	var errs []error
	urls := splitCSV(c.URLs)
	if len(urls) == 0 {
		errs = append(errs, errors.New("opensearch-urls: at least one URL"))
	}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs = append(errs, fmt.Errorf("opensearch-urls: %q is not an http(s) URL", u))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("opensearch-timeout must be positive"))
	}
	errs = append(errs, c.settings().Validate(), c.awsConfig.validate(c.Username))
	return errors.Join(errs...)
}

func (c *openSearchConfig) settings() mappings.Settings {
	return mappings.Settings{Prefix: c.Prefix, Shards: c.Shards, Replicas: c.Replicas}
}

// logValue lists the configuration with the password masked.
func (c *openSearchConfig) logValue() []any {
	return []any{
		"opensearch_urls", c.URLs, "opensearch_username", c.Username, "opensearch_password", mask(c.Password),
		"opensearch_insecure", c.Insecure, "opensearch_prefix", c.Prefix,
		"opensearch_shards", c.Shards, "opensearch_replicas", c.Replicas,
		"opensearch_aws_sigv4", c.SigV4, "opensearch_aws_region", c.Region, "opensearch_aws_service", c.Service,
	}
}

func (c *openSearchConfig) store() (*opensearch.Store, error) {
	sign, err := c.awsConfig.signer()
	if err != nil {
		return nil, err
	}
	return opensearch.New(opensearch.Params{
		Addresses: splitCSV(c.URLs), Username: c.Username, Password: c.Password,
		InsecureSkipVerify: c.Insecure, Prefix: c.Prefix, RequestTimeout: c.Timeout,
		WrapTransport: c.wrap, Signer: sign,
	})
}

// newOpenSearchReadModel builds the OpenSearch backend for `serve
// --backend opensearch` and `index --backend opensearch`: one Store that is
// the readmodel.Reader (API), readmodel.Writer and indexer.Lookup
// (indexer) and readmodel.Inspector. It fails fast when the cluster does
// not answer, an alias is missing (run `permitd opensearch init`), or the
// indices hold documents of another external version encoding (rebuild
// them by a replay: opensearch.Store.CheckVersions).
// cfg must have passed validate.
func newOpenSearchReadModel(ctx context.Context, cfg openSearchConfig, log *slog.Logger) (*opensearch.Store, error) {
	s, err := cfg.store()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := s.Ping(pctx); err != nil {
		return nil, fmt.Errorf("opensearch backend: %w", err)
	}
	if err := s.CheckVersions(pctx); err != nil {
		return nil, fmt.Errorf("opensearch backend: %w", err)
	}
	log.Info("opensearch backend ready", "urls", cfg.URLs, "prefix", s.Prefix())
	return s, nil
}
