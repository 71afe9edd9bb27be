// Package opensearch is the distributed read-model backend: every kind in
// its own OpenSearch index (mappings/), written with the bulk API under
// external versioning and read with one request per Reader call.
//
// # Consistency
//
// Apply returns once every item of the batch is acknowledged (or
// reported in *readmodel.ItemErrors): acknowledged means written to the
// translog of every in-sync copy, fsynced per request
// (index.translog.durability: request, the OpenSearch default), so it
// survives a node restart and, with replicas, the loss of a node.
//
// Visibility is promised by the refresh interval, not waited for: a
// document is visible to every Reader call that starts
// index.refresh_interval (1s, set explicitly by the templates so idle
// shards do not defer it; see mappings.Settings) plus the refresh's own
// duration after Apply returned, on the primary and on document-
// replicated copies; with segment replication a replica serves it once
// the refreshed segments have been copied, usually well under a second
// later. No bulk request waits for a refresh (refresh=wait_for would
// hold every batch for up to the interval, about 30s with the backfill
// setting in docs/operations.md). Refresh forces one, for tests and the
// end of a backfill.
//
// # Versions and deletes
//
// Every document is indexed with version_type external and the entity
// version: OpenSearch stores it only when it is greater than the stored
// version, else answers 409 version_conflict_engine_exception, which Apply
// counts in ApplyResult.Stale. A delete indexes a tombstone document at
// its version the same way (see docs.go), so an older upsert delivered
// after a delete stays deleted forever, not only for index.gc_deletes.
//
// # Reads
//
// Each Reader method sends one request (a _search, or an _msearch when it
// needs a document and an aggregation, such as Location's permit_count).
// Pages use search_after over sort keys that end in a unique field
// (permit_id, lead_id, geo_id), so a walk sees an item present throughout
// exactly once without server-side state: the cursors the API hands out
// stay valid across replicas and restarts. Full scans (Digest) use a point
// in time and fall back to plain search_after when it expires.
// Four reads are exceptions, each documented where it lives: the
// property scope of ResolveCandidates and SearchProperties'
// property-as-location details need a second _msearch to fetch the
// properties' hierarchy, SearchGeoSignals first reads the state's
// active catalog keys, then pages the rows of those keys, and
// PermitStats looks up how the locations spell the keys of its county
// and city top lists (spellTops).
//
// # Pre-aggregates
//
// Location's permit count and latest issue date come from the permit
// count cells (one small document per anchor and issue day), and
// PermitStats from the lead cells (per anchor, signal key and day, month
// or year: counts by confidence class and top-list counters) unless its
// confidence floor lies between class bounds. Apply keeps both exactly
// through crashes and replays; cells.go and leadcells.go say how, and
// docs/operations.md what it costs.
//
// # Failing closed
//
// Every _search and every search of an _msearch refuses partial results
// (allow_partial_search_results=false) and carries a server-side timeout
// (searchTimeout). An answer that still reports a failed shard or
// timed_out, and a 429 (a full search queue) or 5xx for the request or
// one of its searches, is readmodel.ErrUnavailable: never a short page, a
// low count or a 404 for a geography a lost shard holds.
//
// # Active geo signals
//
// A geo signal row is served only when the catalog of the row's state
// lists its signal_key with status "active". GeoSignalsForLocation reads
// the active entries in the same _msearch as the rows and filters the rows
// (keepActive); SearchGeoSignals puts the active keys in a terms filter.
//
// # Bounded reads
//
// The signal and catalog reads that are not pages (a geography's signal
// rows, a state's catalog, the active catalog entries) ask for at most a
// size constant of hits and track the total: when more documents match,
// the read fails with an error naming what overflowed, never a truncated
// answer.
package opensearch

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	opensearchgo "github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/signer"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// Params configures a Store.
type Params struct {
	Addresses []string // http(s)://host:9200, at least one
	Username  string
	Password  string
	// InsecureSkipVerify disables TLS verification (development clusters
	// with the demo certificates).
	InsecureSkipVerify bool
	// Prefix starts every index and alias name (mappings.DefaultPrefix
	// when empty).
	Prefix string
	// RequestTimeout bounds one HTTP attempt; 0 for 30s.
	RequestTimeout time.Duration
	// WrapTransport, when set, wraps the HTTP transport (metrics, tracing).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Signer signs every request (AWS SigV4 for Amazon OpenSearch Service
	// and Serverless: opensearch-go's signer/awsv2); nil: none.
	Signer signer.Signer
}

// Store is the OpenSearch backend: Reader, Writer and Inspector.
type Store struct {
	client *opensearchgo.Client
	prefix string
	now    func() time.Time // the Writer's clock (indexed_at); nil: time.Now
}

var (
	_ readmodel.Reader    = (*Store)(nil)
	_ readmodel.Writer    = (*Store)(nil)
	_ readmodel.Inspector = (*Store)(nil)
)

// New returns a Store; it does not contact the cluster (see Ping).
func New(cfg Params) (*Store, error) {
	if len(cfg.Addresses) == 0 {
		return nil, errors.New("opensearch: no address")
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	var transport http.RoundTripper
	if cfg.WrapTransport != nil {
		base := http.DefaultTransport.(*http.Transport).Clone()
		if cfg.InsecureSkipVerify {
			base.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // #nosec G402 -- opt-in for demo certificates
		}
		transport = cfg.WrapTransport(base)
	}
	c, err := opensearchgo.NewClient(opensearchgo.Config{
		Addresses:          cfg.Addresses,
		Username:           cfg.Username,
		Password:           cfg.Password,
		InsecureSkipVerify: cfg.InsecureSkipVerify && transport == nil,
		RequestTimeout:     cfg.RequestTimeout,
		// Overload and node failures are retried with jittered backoff;
		// the caller's context (the API's request deadline) bounds it all.
		RetryOnStatus: []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
		MaxRetries:    3,
		RetryBackoff:  retryBackoff,
		Transport:     transport,
		Signer:        cfg.Signer,
	})
	if err != nil {
		return nil, fmt.Errorf("opensearch: client: %w", err)
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = mappings.DefaultPrefix
	}
	return &Store{client: c, prefix: prefix}, nil
}

// Close stops the client's background work (opensearch-go polls each
// node's stats every 5 to 30 s for its load shedding, and checks its
// health) and closes its idle connections. A process holds one Store
// for its life and need not call it; a caller that makes Stores and
// drops them (tests, tools) closes each, or its pollers keep asking the
// addresses it named, where another server may listen by then.
func (s *Store) Close() error { return s.client.Close() }

// Prefix is the index name prefix of the store.
func (s *Store) Prefix() string { return s.prefix }

func (s *Store) read(k readmodel.Kind) string  { return mappings.NamesOf(s.prefix, k).ReadAlias }
func (s *Store) write(k readmodel.Kind) string { return mappings.NamesOf(s.prefix, k).WriteAlias }

// apiError is an OpenSearch error answer.
type apiError struct {
	Status int
	Type   string
	Reason string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("opensearch: %d %s: %s", e.Status, e.Type, e.Reason)
}

// retryable: the cluster is overloaded (429, a full search or write
// queue) or failing (5xx); the same request may succeed later.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// retryBackoff is 50ms doubling per attempt, capped at 1s, with full
// jitter (a random delay up to that bound), so that replicas retrying
// together do not arrive together.
func retryBackoff(attempt int) time.Duration {
	d := min(50*time.Millisecond<<min(attempt-1, 5), time.Second)
	return rand.N(d) + time.Millisecond
}

// do sends one request and decodes a 2xx JSON answer into out (nil:
// discard). Transport failures, 5xx and 429 wrap readmodel.ErrUnavailable;
// other error answers are *apiError.
func (s *Store) do(ctx context.Context, method, path string, body []byte, contentType string, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.client.Perform(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s %s: %v", readmodel.ErrUnavailable, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%w: reading %s %s: %v", readmodel.ErrUnavailable, method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		ae := &apiError{Status: resp.StatusCode}
		var detail struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(e.Error, &detail) == nil {
			ae.Type, ae.Reason = detail.Type, detail.Reason
		} else {
			ae.Reason = strings.TrimSpace(string(raw))
		}
		if retryable(resp.StatusCode) {
			return fmt.Errorf("%w: %s %s: %v", readmodel.ErrUnavailable, method, path, ae)
		}
		return ae
	}
	if out == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("opensearch: decoding %s %s: %w", method, path, err)
	}
	return nil
}

func isStatus(err error, status int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == status
}

// Refresh makes every write acknowledged so far visible to searches of
// every index of the store's prefix (tests, the end of a backfill); the
// indexer never calls it.
func (s *Store) Refresh(ctx context.Context) error {
	return s.do(ctx, http.MethodPost, "/"+s.prefix+"-*/_refresh", nil, "", nil)
}

// Ping checks that the cluster answers and the read aliases exist.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.do(ctx, http.MethodGet, "/_cluster/health", nil, "", nil); err != nil {
		return err
	}
	for _, k := range indexKinds() {
		if err := s.do(ctx, http.MethodHead, "/"+s.read(k), nil, "", nil); err != nil {
			if isStatus(err, http.StatusNotFound) {
				return fmt.Errorf("opensearch: alias %s missing: run permitd opensearch init", s.read(k))
			}
			return err
		}
	}
	return nil
}
