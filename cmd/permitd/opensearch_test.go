package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []readmodel.Kind
		ok   bool
	}{
		{"all", readmodel.Kinds, true},
		{"", readmodel.Kinds, true},
		{"permits,leads", []readmodel.Kind{readmodel.KindPermit, readmodel.KindLead}, true},
		{"permit", nil, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseKinds(tc.in)
			if !tc.ok {
				require.EqualError(t, err, `kinds: "permit" is not one of locations, permits, properties, geo_signals, leads, catalog`)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestOpenSearchConfigValidate(t *testing.T) {
	ok := openSearchConfig{URLs: "http://a:9200,https://b:9200", Shards: 1, Replicas: 1, Timeout: time.Second}
	require.NoError(t, ok.validate())
	for name, tc := range map[string]struct {
		mut  func(*openSearchConfig)
		want string
	}{
		"no url":      {func(c *openSearchConfig) { c.URLs = "" }, "opensearch-urls: at least one URL"},
		"not http":    {func(c *openSearchConfig) { c.URLs = "a:9200" }, `opensearch-urls: "a:9200" is not an http(s) URL`},
		"no shards":   {func(c *openSearchConfig) { c.Shards = 0 }, "mappings: shards 0, want >= 1"},
		"no timeout":  {func(c *openSearchConfig) { c.Timeout = 0 }, "opensearch-timeout must be positive"},
		"bad prefix":  {func(c *openSearchConfig) { c.Prefix = "Bad" }, `mappings: prefix "Bad" must be a lower-case index name part`},
		"neg replica": {func(c *openSearchConfig) { c.Replicas = -1 }, "mappings: replicas -1, want >= 0"},
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			tc.mut(&c)
			require.EqualError(t, c.validate(), tc.want)
		})
	}
	require.Contains(t, ok.logValue(), "opensearch_password")
}

func TestOpenSearchCommandUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"opensearch"}, func(string) string { return "" }, &out, &errOut)
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, errOut.String(), "init|reindex")
	err = run(context.Background(), []string{"opensearch", "init", "-opensearch-urls", "nope"}, func(string) string { return "" }, &out, &errOut)
	require.ErrorContains(t, err, "opensearch-urls")
}

// TestNewOpenSearchReadModelFailsFast: a cluster without the aliases is
// refused with the fix named.
func TestNewOpenSearchReadModelFailsFast(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_cluster/health" {
			_, _ = io.WriteString(w, `{"status":"green"}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	cfg := openSearchConfig{URLs: srv.URL, Shards: 1, Timeout: 5 * time.Second}
	require.NoError(t, cfg.validate())
	_, err := newOpenSearchReadModel(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorContains(t, err, "permitd opensearch init")
}

func TestParseKindShards(t *testing.T) {
	got, err := parseKindShards("leads=24, permits=12")
	require.NoError(t, err)
	require.Equal(t, map[readmodel.Kind]int{readmodel.KindLead: 24, readmodel.KindPermit: 12}, got)
	got, err = parseKindShards("")
	require.NoError(t, err)
	require.Empty(t, got)
	for bad, why := range map[string]string{
		"leads":   "is not <index>=<shards>",
		"leads=0": "shards must be a whole number >= 1",
		"lead=3":  "is not <index>=<shards>",
		"all=3":   "is not <index>=<shards>",
		"leads=x": "shards must be a whole number >= 1",
	} {
		_, err := parseKindShards(bad)
		require.ErrorContains(t, err, fmt.Sprintf("kind-shards: %q", bad))
		require.ErrorContains(t, err, why, bad)
	}
}
