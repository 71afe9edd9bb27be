package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/opensearch"
)

// openSearchAdminConfig configures `permitd opensearch init|reindex`.
type openSearchAdminConfig struct {
	commonConfig
	OpenSearch openSearchConfig
	Kinds      string // reindex only
	// KindShards: "leads=24,permits=12": primaries per kind. init: the
	// others take -opensearch-shards; reindex: the others keep their
	// current count (-opensearch-shards is not used).
	KindShards string
}

func (c *openSearchAdminConfig) Validate() error {
	errs := []error{c.commonConfig.validate(), c.OpenSearch.validate()}
	if _, err := parseKinds(c.Kinds); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseKindShards(c.KindShards); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// parseKindShards reads "leads=24,permits=12" (index base names).
func parseKindShards(s string) (map[readmodel.Kind]int, error) {
	out := map[readmodel.Kind]int{}
	for _, part := range splitCSV(s) {
		name, n, ok := strings.Cut(part, "=")
		kinds, err := parseKinds(strings.TrimSpace(name))
		if !ok || err != nil || len(kinds) != 1 || strings.TrimSpace(name) == "all" {
			return nil, fmt.Errorf("kind-shards: %q is not <index>=<shards> with index one of locations, permits, properties, geo_signals, leads, catalog", part)
		}
		v, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("kind-shards: %q: shards must be a whole number >= 1", part)
		}
		out[kinds[0]] = v
	}
	return out, nil
}

// parseKinds reads "all" or a comma-separated list of index base names
// ("permits,leads").
func parseKinds(s string) ([]readmodel.Kind, error) {
	if s == "" || s == "all" {
		return readmodel.Kinds, nil
	}
	var out []readmodel.Kind
	for _, name := range splitCSV(s) {
		i := slices.IndexFunc(readmodel.Kinds, func(k readmodel.Kind) bool { return mappings.Base(k) == name })
		if i < 0 {
			return nil, fmt.Errorf("kinds: %q is not one of locations, permits, properties, geo_signals, leads, catalog", name)
		}
		out = append(out, readmodel.Kinds[i])
	}
	return out, nil
}

// runOpenSearch runs `permitd opensearch init` (idempotent: templates,
// then v1 indices behind the read and write aliases where missing) or
// `permitd opensearch reindex [-kinds permits,leads]` (each kind into the
// next version with the current template, then the alias swap; see
// opensearch.Store.Reindex and docs/operations.md).
func runOpenSearch(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || (args[0] != "init" && args[0] != "reindex") {
		fmt.Fprintln(e.stderr, "usage: permitd opensearch init|reindex [flags]")
		return errUsage
	}
	sub := args[0]
	var cfg openSearchAdminConfig
	fs := newFlagSet("opensearch "+sub, e)
	cfg.commonConfig.bind(fs)
	cfg.OpenSearch.bind(fs)
	if sub == "reindex" {
		fs.StringVar(&cfg.Kinds, "kinds", "all", "indices to rebuild: all, or comma-separated base names (permits,leads)")
		fs.StringVar(&cfg.KindShards, "kind-shards", "", "primary shards of the new index per kind (leads=24,permits=12); a kind not listed keeps its current count")
	} else {
		fs.StringVar(&cfg.KindShards, "kind-shards", "", "primary shards per kind (leads=24,permits=12); a kind not listed takes -opensearch-shards")
	}
	if err := fs.parse(args[1:]); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	log := cfg.logger(e.stderr)
	log.Info("permitd opensearch "+sub, cfg.OpenSearch.logValue()...)
	s, err := cfg.OpenSearch.store()
	if err != nil {
		return err
	}
	set := cfg.OpenSearch.settings()
	set.KindShards, _ = parseKindShards(cfg.KindShards)
	if sub == "init" {
		if err := s.Init(ctx, set); err != nil {
			return err
		}
		for _, k := range readmodel.Kinds {
			n := mappings.NamesOf(s.Prefix(), k)
			fmt.Fprintf(e.stdout, "%s: read alias %s, write alias %s\n", mappings.Base(k), n.ReadAlias, n.WriteAlias)
		}
		return nil
	}
	// A reindex copies _version as it is: indices of another external
	// version encoding are rebuilt by a replay instead.
	if err := s.CheckVersions(ctx); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	kinds, _ := parseKinds(cfg.Kinds)
	for _, k := range kinds {
		res, err := s.Reindex(ctx, k, opensearch.ReindexOptions{
			Settings: set, Shards: set.KindShards[k],
			Progress: func(p opensearch.ReindexProgress) { fmt.Fprintln(e.stdout, p.String()) },
		})
		if err != nil {
			return fmt.Errorf("reindex %s: %w", mappings.Base(k), err)
		}
		how := ""
		switch {
		case res.Resumed:
			how = " (resumed an interrupted run)"
		case res.Rolled:
			how = " (rolled back an interrupted run first)"
		}
		fmt.Fprintf(e.stdout, "%s: %s -> %s%s, %d shards, %d documents, %d copied, %d already current\n",
			mappings.Base(k), res.From, res.To, how, res.Shards, res.Docs, res.Copied, res.Stale)
	}
	return nil
}
