package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/opensearch"
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
		"bad prefix":  {func(c *openSearchConfig) { c.Prefix = "Bad" }, `mappings: prefix "Bad" must be a lower-case index name part (none of , : " * + / \ | ? # < > or spaces, not starting with '-' or '_', at most 128 bytes)`},
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

// versionsStandIn is a cluster that answers health, every alias, and
// the versions sample with one permit of version 7 stored at _version
// ext (this build writes 21 to 23).
func versionsStandIn(t *testing.T, ext int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/_cluster/health":
			_, _ = io.WriteString(w, `{"status":"green"}`)
		case r.Method == http.MethodHead:
		case r.URL.Path == "/_msearch":
			body, _ := io.ReadAll(r.Body)
			var resps []string
			for i, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
				if i%2 == 0 {
					hits := ""
					if strings.Contains(line, `"permitd-permits"`) {
						hits = fmt.Sprintf(`{"_id":"src:1","_version":%d,"_source":{"version":7}}`, ext)
					}
					resps = append(resps, `{"status":200,"hits":{"hits":[`+hits+`]}}`)
				}
			}
			_, _ = io.WriteString(w, `{"responses":[`+strings.Join(resps, ",")+`]}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestNewOpenSearchReadModelRefusesOtherVersions: indices written under
// an earlier external version encoding are refused with the fix named,
// before anything is read or written; so is a reindex of them.
func TestNewOpenSearchReadModelRefusesOtherVersions(t *testing.T) {
	for _, tc := range []struct {
		ext     int64
		refused bool
	}{{15, true}, {22, false}} {
		cfg := openSearchConfig{URLs: versionsStandIn(t, tc.ext).URL, Shards: 1, Timeout: 5 * time.Second}
		require.NoError(t, cfg.validate())
		_, err := newOpenSearchReadModel(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if tc.refused {
			require.ErrorIs(t, err, opensearch.ErrOtherEncoding)
			require.ErrorContains(t, err, "rebuild the indices by a replay")
		} else {
			require.NoError(t, err)
		}
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"opensearch", "reindex", "-opensearch-urls", versionsStandIn(t, 15).URL},
		func(string) string { return "" }, &out, &errOut)
	require.ErrorIs(t, err, opensearch.ErrOtherEncoding)
	require.ErrorContains(t, err, "reindex: ")
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
