package conformance_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcopensearch "github.com/testcontainers/testcontainers-go/modules/opensearch"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel/opensearch"
	"github.com/permitd/permitd/test/conformance"
)

// openSearchImage is the cluster the suite starts when OPENSEARCH_URL is
// not set and Docker is available.
const openSearchImage = "opensearchproject/opensearch:2.19.1"

// TestOpenSearch runs the suite against a real cluster:
//
//	OPENSEARCH_URL=http://localhost:9200 go test ./test/conformance -run TestOpenSearch
//
// (OPENSEARCH_USERNAME / OPENSEARCH_PASSWORD for a secured cluster,
// OPENSEARCH_INSECURE=1 for demo certificates), or with Docker and no
// OPENSEARCH_URL, a testcontainers OpenSearch. Every scenario gets its own
// index prefix and drops it afterwards. Without either, it skips saying so.
func TestOpenSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("OpenSearch conformance skipped in -short mode")
	}
	cfg := clusterConfig(t)
	conformance.Run(t, conformance.Harness{
		Name: "opensearch",
		New: func(t *testing.T) conformance.Backend {
			c := cfg
			c.Prefix = "conf-" + randomHex(4)
			s, err := opensearch.New(c)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Init(ctx, mappings.Settings{Shards: 1, Replicas: 0}); err != nil {
				t.Fatalf("OpenSearch init: %v", err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				// What the scenario wrote is stored at this build's
				// external versions, as the engine reports them.
				if err := s.CheckVersions(ctx); err != nil {
					t.Errorf("OpenSearch versions after the scenario: %v", err)
				}
				if err := s.Drop(ctx); err != nil {
					t.Logf("OpenSearch cleanup of %s: %v", c.Prefix, err)
				}
			})
			return s
		},
		// The OpenSearch backend's capabilities list: complete.
		Lacks: map[conformance.Capability]string{},
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var (
	containerOnce sync.Once
	containerURL  string
	containerErr  string
)

// clusterConfig finds a cluster or skips loudly.
func clusterConfig(t *testing.T) opensearch.Params {
	t.Helper()
	if u := os.Getenv("OPENSEARCH_URL"); u != "" {
		return opensearch.Params{
			Addresses: strings.Split(u, ","), Username: os.Getenv("OPENSEARCH_USERNAME"),
			Password: os.Getenv("OPENSEARCH_PASSWORD"), InsecureSkipVerify: os.Getenv("OPENSEARCH_INSECURE") == "1",
		}
	}
	containerOnce.Do(func() { containerURL, containerErr = startContainer() })
	if containerErr != "" {
		t.Skipf("OpenSearch conformance run SKIPPED: OPENSEARCH_URL is not set and testcontainers cannot start OpenSearch (%s). "+
			"Run it with OPENSEARCH_URL=http://host:9200 go test ./test/conformance -run TestOpenSearch", containerErr)
	}
	return opensearch.Params{Addresses: []string{containerURL}}
}

// startContainer starts one OpenSearch for the test binary; it is removed
// by testcontainers' reaper when the binary exits.
func startContainer() (url string, reason string) {
	defer func() {
		if r := recover(); r != nil {
			reason = "Docker provider panicked: " + strings.TrimSpace(toString(r))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return "", "no Docker provider: " + err.Error()
	}
	defer p.Close()
	if err := p.Health(ctx); err != nil {
		return "", "Docker is not reachable: " + err.Error()
	}
	c, err := tcopensearch.Run(ctx, openSearchImage)
	if err != nil {
		return "", "starting " + openSearchImage + ": " + err.Error()
	}
	addr, err := c.Address(ctx)
	if err != nil {
		return "", "container address: " + err.Error()
	}
	return addr, ""
}

func toString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "unknown panic"
}
