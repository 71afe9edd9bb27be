package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// indexKinds are every index of a store: the Reader documents' kinds,
// then the pre-aggregate cells (mappings.CellKinds).
func indexKinds() []readmodel.Kind {
	return append(slices.Clip(readmodel.Kinds), mappings.CellKinds...)
}

// Init puts every index template and creates version 1 of each index
// (the pre-aggregate cells too) behind its read and write aliases when
// the read alias does not exist yet. It is idempotent: run it before the
// first index or serve.
func (s *Store) Init(ctx context.Context, set mappings.Settings) error {
	set.Prefix = s.prefix
	for _, k := range indexKinds() {
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

// Drop deletes every index, alias and template of the store's prefix (tests).
func (s *Store) Drop(ctx context.Context) error {
	for _, k := range indexKinds() {
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
