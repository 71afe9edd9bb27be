// Package mappings holds the OpenSearch index templates of the read model:
// one JSON file per index under templates/, embedded, rendered with the
// cluster's shard and replica counts.
//
// # Names, versions and aliases
//
// Every kind lives in versioned physical indices behind two aliases:
//
//	<prefix>-<base>-v<N>   the physical index (the template matches <prefix>-<base>-v*)
//	<prefix>-<base>        read alias: every Reader request goes here
//	<prefix>-<base>-write  write alias: every bulk request goes here
//
// The aliases are given when an index is created (IndexBody), never by the
// template, so a new version does not join the aliases before the swap.
// A reindex creates v<N+1>, copies v<N> into it as a server-side task with
// external versioning, catches up under a write block on v<N>, and moves
// both aliases in one step once the counts match: no API code changes,
// see opensearch.Store.Reindex and docs/operations.md.
//
// Every template is "dynamic": "strict": a document field that is not
// mapped is a bulk item error, never a silent new field.
package mappings

import (
	"embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

//go:embed templates/*.json
var files embed.FS

// TemplateVersion is stamped on every rendered template; raise it with
// any mapping change (a changed template needs a reindex to take effect).
const TemplateVersion = 4

// DefaultRefresh is the refresh interval of every index unless Settings
// says otherwise: the visibility bound of the OpenSearch Writer.
const DefaultRefresh = "1s"

// DefaultPrefix starts every index, alias and template name.
const DefaultPrefix = "permitd"

// bases names each kind's index.
var bases = map[readmodel.Kind]string{
	readmodel.KindLocation:  "locations",
	readmodel.KindPermit:    "permits",
	readmodel.KindProperty:  "properties",
	readmodel.KindGeoSignal: "geo_signals",
	readmodel.KindLead:      "leads",
	readmodel.KindCatalog:   "catalog",
	KindPermitCell:          "permit_cells",
	KindLeadCell:            "lead_cells",
}

// KindPermitCell names the permit count cells: per (anchor, issue day)
// the number of live permits, which the OpenSearch Writer keeps and
// Location reads (see the opensearch package, Pre-aggregates). It is not
// a readmodel.Kind of Reader documents: no entity, no tombstone, no
// reindex; Init creates it beside the others.
const KindPermitCell readmodel.Kind = "permit_cell"

// KindLeadCell names the lead stats cells: per (anchor, signal key,
// day, month or year) the leads' counts by confidence class and their
// top-list counters, which the OpenSearch Writer keeps and PermitStats
// reads. Like KindPermitCell, not a readmodel.Kind.
const KindLeadCell readmodel.Kind = "lead_cell"

// CellKinds are the pre-aggregate indices, after readmodel.Kinds.
var CellKinds = []readmodel.Kind{KindPermitCell, KindLeadCell}

// Base is the index base name of a kind ("permits").
func Base(k readmodel.Kind) string { return bases[k] }

// Settings are the per-cluster parts of the templates.
type Settings struct {
	Prefix   string // DefaultPrefix when empty
	Shards   int    // number_of_shards, >= 1
	Replicas int    // number_of_replicas, >= 0
	// KindShards overrides Shards per kind (leads and permits want many
	// more primaries than catalog); a kind not listed takes Shards.
	KindShards map[readmodel.Kind]int
	// RefreshInterval is index.refresh_interval; "" is DefaultRefresh.
	// The Writer never waits for a refresh: this is how long an applied
	// batch may stay invisible to reads. It is always set explicitly,
	// because an index without the setting skips refreshes on shards idle
	// for 30s (search_idle) and so would not bound it.
	RefreshInterval string
}

// Validate checks the settings.
func (s Settings) Validate() error {
	if s.Shards < 1 {
		return fmt.Errorf("mappings: shards %d, want >= 1", s.Shards)
	}
	for k, n := range s.KindShards {
		if _, ok := bases[k]; !ok {
			return fmt.Errorf("mappings: shards of unknown kind %q", k)
		}
		if n < 1 {
			return fmt.Errorf("mappings: shards %d of %s, want >= 1", n, bases[k])
		}
	}
	if s.Replicas < 0 {
		return fmt.Errorf("mappings: replicas %d, want >= 0", s.Replicas)
	}
	// OpenSearch's index names (its create-index reference): lower case,
	// none of these characters, not starting with '-' or '_' (a prefix
	// that did passed here and was refused by the cluster at init), and at
	// most 255 bytes.
	if p := s.prefix(); strings.ToLower(p) != p || strings.ContainsAny(p, " ,:\"*+/\\|?#<>") ||
		strings.IndexAny(p[:1], "-_") == 0 || len(p) > maxPrefix {
		return fmt.Errorf("mappings: prefix %q must be a lower-case index name part (none of , : \" * + / \\ | ? # < > or spaces, not starting with '-' or '_', at most %d bytes)", p, maxPrefix)
	}
	return nil
}

// ShardsOf is the number of primary shards of kind k.
func (s Settings) ShardsOf(k readmodel.Kind) int {
	if n := s.KindShards[k]; n > 0 {
		return n
	}
	return s.Shards
}

// maxPrefix leaves room in OpenSearch's 255 bytes of an index name for
// what the names add to the prefix (a kind's base and a version:
// IndexName, NamesOf).
const maxPrefix = 128

func (s Settings) prefix() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

// Names are the index, alias and template names of one kind.
type Names struct {
	Template   string // index template name
	Pattern    string // index_patterns entry
	ReadAlias  string
	WriteAlias string
}

// NamesOf returns the names of kind k under prefix ("" for DefaultPrefix).
func NamesOf(prefix string, k readmodel.Kind) Names {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	b := prefix + "-" + bases[k]
	return Names{Template: b, Pattern: b + "-v*", ReadAlias: b, WriteAlias: b + "-write"}
}

// IndexName is the physical index of version v of kind k.
func IndexName(prefix string, k readmodel.Kind, v int) string {
	return NamesOf(prefix, k).ReadAlias + "-v" + strconv.Itoa(v)
}

// VersionOf parses the version of a physical index name of kind k; false
// when the name is not one.
func VersionOf(prefix string, k readmodel.Kind, index string) (int, bool) {
	rest, ok := strings.CutPrefix(index, NamesOf(prefix, k).ReadAlias+"-v")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(rest)
	return v, err == nil && v > 0
}

// source is the embedded file of a kind: analysis settings and mappings.
type source struct {
	Settings map[string]any `json:"settings"`
	Mappings map[string]any `json:"mappings"`
}

func load(k readmodel.Kind) (source, error) {
	var s source
	b, ok := bases[k]
	if !ok {
		return s, fmt.Errorf("mappings: unknown kind %q", k)
	}
	raw, err := files.ReadFile("templates/" + b + ".json")
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("mappings: %s: %w", b, err)
	}
	return s, nil
}

// Mappings returns the "mappings" object of kind k (for tests that check
// documents against it).
func Mappings(k readmodel.Kind) (map[string]any, error) {
	s, err := load(k)
	return s.Mappings, err
}

// Template renders the index template of kind k: the body of
// PUT _index_template/<Names.Template>.
func Template(k readmodel.Kind, s Settings) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	src, err := load(k)
	if err != nil {
		return nil, err
	}
	settings := map[string]any{}
	for key, v := range src.Settings {
		settings[key] = v
	}
	settings["number_of_shards"] = s.ShardsOf(k)
	settings["number_of_replicas"] = s.Replicas
	settings["refresh_interval"] = DefaultRefresh
	if s.RefreshInterval != "" {
		settings["refresh_interval"] = s.RefreshInterval
	}
	n := NamesOf(s.prefix(), k)
	body := map[string]any{
		"index_patterns": []string{n.Pattern},
		"priority":       100,
		"version":        TemplateVersion,
		"_meta":          map[string]any{"owner": "permitd", "kind": string(k)},
		"template": map[string]any{
			"settings": settings,
			"mappings": src.Mappings,
		},
	}
	return json.MarshalIndent(body, "", "  ")
}

// IndexBody is the body of PUT <IndexName>. With aliases (init) the new
// index joins the read alias and is the write index of the write alias;
// without (reindex) it joins them later through Swap actions. Settings and
// mappings come from the template.
func IndexBody(prefix string, k readmodel.Kind, aliases bool) ([]byte, error) {
	body := map[string]any{}
	if aliases {
		n := NamesOf(prefix, k)
		body["aliases"] = map[string]any{
			n.ReadAlias:  map[string]any{},
			n.WriteAlias: map[string]any{"is_write_index": true},
		}
	}
	return json.MarshalIndent(body, "", "  ")
}
