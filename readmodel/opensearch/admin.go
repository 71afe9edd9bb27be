package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// Init puts every index template and creates version 1 of each index
// behind its read and write aliases when the read alias does not exist
// yet. It is idempotent: run it before the first index or serve.
func (s *Store) Init(ctx context.Context, set mappings.Settings) error {
	set.Prefix = s.prefix
	for _, k := range readmodel.Kinds {
		if err := s.putTemplate(ctx, k, set); err != nil {
			return err
		}
		if _, err := s.aliasIndex(ctx, s.read(k)); err == nil {
			continue
		} else if !isStatus(err, http.StatusNotFound) {
			return err
		}
		body, err := mappings.IndexBody(s.prefix, k, true)
		if err != nil {
			return err
		}
		if err := s.do(ctx, http.MethodPut, "/"+mappings.IndexName(s.prefix, k, 1), body, "", nil); err != nil {
			return fmt.Errorf("opensearch: creating %s: %w", mappings.IndexName(s.prefix, k, 1), err)
		}
	}
	return nil
}

func (s *Store) putTemplate(ctx context.Context, k readmodel.Kind, set mappings.Settings) error {
	body, err := mappings.Template(k, set)
	if err != nil {
		return err
	}
	name := mappings.NamesOf(s.prefix, k).Template
	if err := s.do(ctx, http.MethodPut, "/_index_template/"+name, body, "", nil); err != nil {
		return fmt.Errorf("opensearch: template %s: %w", name, err)
	}
	return nil
}

// aliasIndex returns the single physical index behind alias.
func (s *Store) aliasIndex(ctx context.Context, alias string) (string, error) {
	var out map[string]json.RawMessage
	if err := s.do(ctx, http.MethodGet, "/_alias/"+alias, nil, "", &out); err != nil {
		return "", err
	}
	if len(out) != 1 {
		names := make([]string, 0, len(out))
		for n := range out {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", fmt.Errorf("opensearch: alias %s points to %v, want one index", alias, names)
	}
	for n := range out {
		return n, nil
	}
	return "", errNoIndex(alias)
}

// ReindexResult reports one kind's reindex.
type ReindexResult struct {
	Kind     readmodel.Kind
	From, To string
	Copied   int64 // documents created in the new index
	Stale    int64 // version conflicts: a newer write already landed there
}

// Reindex rebuilds kind k into the next index version with the current
// template (settings.Shards, mappings) and swaps the aliases, in an order
// that loses no write:
//
//  1. put the template, create <base>-v<N+1> without aliases;
//  2. move the write alias to v<N+1> (one atomic _aliases call): the
//     indexer's next bulk lands in the new index;
//  3. _reindex v<N> into v<N+1> with version_type external and
//     conflicts: proceed, so a document the indexer wrote meanwhile (a
//     newer version) is kept and tombstones are copied as they are;
//  4. move the read alias to v<N+1>.
//
// Between 2 and 4 readers still see v<N>: writes of that window become
// visible at the swap, not when Apply returns. The old index is kept;
// delete it once satisfied. The _reindex runs synchronously (wait for
// completion); for very large indices run it off-peak.
func (s *Store) Reindex(ctx context.Context, k readmodel.Kind, set mappings.Settings) (ReindexResult, error) {
	set.Prefix = s.prefix
	res := ReindexResult{Kind: k}
	n := mappings.NamesOf(s.prefix, k)
	from, err := s.aliasIndex(ctx, n.ReadAlias)
	if err != nil {
		return res, err
	}
	v, ok := mappings.VersionOf(s.prefix, k, from)
	if !ok {
		return res, fmt.Errorf("opensearch: %s points to %s, not a versioned index", n.ReadAlias, from)
	}
	res.From, res.To = from, mappings.IndexName(s.prefix, k, v+1)
	if err := s.putTemplate(ctx, k, set); err != nil {
		return res, err
	}
	body, _ := mappings.IndexBody(s.prefix, k, false)
	if err := s.do(ctx, http.MethodPut, "/"+res.To, body, "", nil); err != nil {
		return res, fmt.Errorf("opensearch: creating %s: %w", res.To, err)
	}
	writeFrom, err := s.aliasIndex(ctx, n.WriteAlias)
	if err != nil {
		return res, err
	}
	swap, _ := mappings.AliasActions(n.WriteAlias, writeFrom, res.To, true)
	if err := s.do(ctx, http.MethodPost, "/_aliases", swap, "", nil); err != nil {
		return res, fmt.Errorf("opensearch: moving %s: %w", n.WriteAlias, err)
	}
	reindex, _ := json.Marshal(map[string]any{
		"conflicts": "proceed",
		"source":    map[string]any{"index": from},
		"dest":      map[string]any{"index": res.To, "version_type": "external"},
	})
	var out struct {
		Created          int64             `json:"created"`
		VersionConflicts int64             `json:"version_conflicts"`
		Failures         []json.RawMessage `json:"failures"`
	}
	if err := s.do(ctx, http.MethodPost, "/_reindex?wait_for_completion=true&refresh=true", reindex, "", &out); err != nil {
		return res, fmt.Errorf("opensearch: reindex %s -> %s: %w", from, res.To, err)
	}
	res.Copied, res.Stale = out.Created, out.VersionConflicts
	if len(out.Failures) > 0 {
		return res, fmt.Errorf("opensearch: reindex %s -> %s: %d failures, first %s; the read alias still points to %s", from, res.To, len(out.Failures), out.Failures[0], from)
	}
	swap, _ = mappings.AliasActions(n.ReadAlias, from, res.To, false)
	if err := s.do(ctx, http.MethodPost, "/_aliases", swap, "", nil); err != nil {
		return res, fmt.Errorf("opensearch: moving %s: %w", n.ReadAlias, err)
	}
	return res, nil
}

// Drop deletes every index, alias and template of the store's prefix (tests).
func (s *Store) Drop(ctx context.Context) error {
	for _, k := range readmodel.Kinds {
		n := mappings.NamesOf(s.prefix, k)
		if err := s.do(ctx, http.MethodDelete, "/"+n.Pattern+"?expand_wildcards=all", nil, "", nil); err != nil && !isStatus(err, http.StatusNotFound) {
			return err
		}
		if err := s.do(ctx, http.MethodDelete, "/_index_template/"+n.Template, nil, "", nil); err != nil && !isStatus(err, http.StatusNotFound) {
			return err
		}
	}
	return nil
}
