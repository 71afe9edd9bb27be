package mappings_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/osgolden"
	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// goldenSettings are the settings the goldens render with: a 3-node
// production shape.
var goldenSettings = mappings.Settings{Shards: 3, Replicas: 1, RefreshInterval: "1s"}

func TestTemplatesGolden(t *testing.T) {
	for _, k := range readmodel.Kinds {
		t.Run(string(k), func(t *testing.T) {
			body, err := mappings.Template(k, goldenSettings)
			require.NoError(t, err)
			osgolden.Compare(t, mappings.Base(k)+".template.json", body)

			var tpl struct {
				Template struct {
					Mappings map[string]any `json:"mappings"`
					Settings map[string]any `json:"settings"`
				} `json:"template"`
				Patterns []string `json:"index_patterns"`
			}
			require.NoError(t, json.Unmarshal(body, &tpl))
			require.Equal(t, "strict", tpl.Template.Mappings["dynamic"], "every template is dynamic: strict")
			require.EqualValues(t, 3, tpl.Template.Settings["number_of_shards"])
			require.EqualValues(t, 1, tpl.Template.Settings["number_of_replicas"])
			require.Equal(t, []string{"permitd-" + mappings.Base(k) + "-v*"}, tpl.Patterns)
			props, _ := tpl.Template.Mappings["properties"].(map[string]any)
			for _, f := range []string{"doc_id", "deleted", "version"} {
				require.Contains(t, props, f, "every index holds the tombstone fields")
			}

			idx, err := mappings.IndexBody("", k, true)
			require.NoError(t, err)
			osgolden.Compare(t, mappings.Base(k)+".index.json", idx)
		})
	}
}

// TestCellTemplatesGolden: the pre-aggregate indices are templated and
// aliased like the others, strict, without the entity fields.
func TestCellTemplatesGolden(t *testing.T) {
	for _, k := range mappings.CellKinds {
		t.Run(string(k), func(t *testing.T) {
			body, err := mappings.Template(k, goldenSettings)
			require.NoError(t, err)
			osgolden.Compare(t, mappings.Base(k)+".template.json", body)
			var tpl struct {
				Template struct {
					Mappings map[string]any `json:"mappings"`
				} `json:"template"`
			}
			require.NoError(t, json.Unmarshal(body, &tpl))
			require.Equal(t, "strict", tpl.Template.Mappings["dynamic"])
			props, _ := tpl.Template.Mappings["properties"].(map[string]any)
			require.Contains(t, props, "pending", "the cells keep their pending transitions")
			idx, err := mappings.IndexBody("", k, true)
			require.NoError(t, err)
			osgolden.Compare(t, mappings.Base(k)+".index.json", idx)
		})
	}
}

func TestLocationsHaveFuzzyPlaceFields(t *testing.T) {
	m, err := mappings.Mappings(readmodel.KindLocation)
	require.NoError(t, err)
	name := m["properties"].(map[string]any)["name"].(map[string]any)
	fields := name["fields"].(map[string]any)
	require.Contains(t, fields, "prefix", "edge n-gram subfield for as-you-type prefixes")
	require.Contains(t, fields, "folded", "ASCII-folded keyword for exact names")
}

func TestSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    mappings.Settings
		ok   bool
	}{
		{"default", mappings.Settings{Shards: 1}, true},
		{"no shards", mappings.Settings{}, false},
		{"negative replicas", mappings.Settings{Shards: 1, Replicas: -1}, false},
		{"upper-case prefix", mappings.Settings{Shards: 1, Prefix: "Permitd"}, false},
		{"prefix starting with _", mappings.Settings{Shards: 1, Prefix: "_x"}, false},
		{"prefix starting with -", mappings.Settings{Shards: 1, Prefix: "-x"}, false},
		{"prefix with a +", mappings.Settings{Shards: 1, Prefix: "a+x"}, false},
		{"prefix with a colon", mappings.Settings{Shards: 1, Prefix: "a:b"}, false},
		{"prefix of 129 bytes", mappings.Settings{Shards: 1, Prefix: strings.Repeat("p", 129)}, false},
		{"prefix of 128 bytes", mappings.Settings{Shards: 1, Prefix: strings.Repeat("p", 128)}, true},
		{"prefix with inner _ and -", mappings.Settings{Shards: 1, Prefix: "team_a-permitd"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestNames(t *testing.T) {
	n := mappings.NamesOf("", readmodel.KindPermit)
	require.Equal(t, mappings.Names{Template: "permitd-permits", Pattern: "permitd-permits-v*", ReadAlias: "permitd-permits", WriteAlias: "permitd-permits-write"}, n)
	require.Equal(t, "permitd-permits-v2", mappings.IndexName("", readmodel.KindPermit, 2))
	v, ok := mappings.VersionOf("", readmodel.KindPermit, "permitd-permits-v12")
	require.True(t, ok)
	require.Equal(t, 12, v)
	_, ok = mappings.VersionOf("", readmodel.KindPermit, "permitd-leads-v1")
	require.False(t, ok)
}

// TestGoldensPassSpec runs osvalidate -strict over every golden file.
func TestGoldensPassSpec(t *testing.T) {
	osgolden.ValidateAll(t, nil)
}

func TestKindShards(t *testing.T) {
	s := mappings.Settings{Shards: 2, KindShards: map[readmodel.Kind]int{readmodel.KindLead: 24}}
	require.NoError(t, s.Validate())
	require.Equal(t, 24, s.ShardsOf(readmodel.KindLead))
	require.Equal(t, 2, s.ShardsOf(readmodel.KindCatalog))
	body, err := mappings.Template(readmodel.KindLead, s)
	require.NoError(t, err)
	require.Contains(t, string(body), `"number_of_shards": 24`)
	s.KindShards[readmodel.KindPermit] = 0
	require.Error(t, s.Validate())
}
