package opensearch

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/osgolden"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/resolve"
)

// TestResolveGoldens renders the resolve bodies of issue 17's rules:
// filler words dropped into their own reading, a one-letter last word, a
// text of filler words only, and a focus point.
func TestResolveGoldens(t *testing.T) {
	focus := &readmodel.Point{Lat: 39.8, Lon: -89.65}
	for name, rq := range map[string]readmodel.ResolveQuery{
		"resolve_filler.search.json":      {Text: "Spokane, Washington, USA", Limit: 5},
		"resolve_state_of.search.json":    {Text: "State of Washington", Limit: 5},
		"resolve_one_letter.search.json":  {Text: "Lake Forest P", Limit: 5},
		"resolve_only_filler.search.json": {Text: "United States", Limit: 5},
		"resolve_focus.search.json":       {Text: "Springfield", Limit: 5, Focus: focus},
		"resolve_focus_zip.search.json":   {Text: "98101", Limit: 5, Focus: focus},
	} {
		t.Run(name, func(t *testing.T) {
			osgolden.Compare(t, name, render(t, resolveBody(resolve.ParseQuery(rq))))
		})
	}
}

// exactHit evaluates the exact clauses of one joined reading's body
// against a location document, as the engine would: a term or terms on
// compact, or a match on names_norm without fuzziness (the place
// analyzer: standard words, lower case).
func exactHit(body any, d locationDoc) bool {
	switch b := body.(type) {
	case []obj:
		for _, x := range b {
			if exactHit(x, d) {
				return true
			}
		}
	case obj:
		for k, v := range b {
			switch k {
			case "term", "terms":
				if vals, ok := v.(obj)["compact"]; ok {
					var list []string
					switch vs := vals.(type) {
					case string:
						list = []string{vs}
					case []string:
						list = vs
					}
					for _, c := range list {
						if slices.Contains(d.Compact, c) {
							return true
						}
					}
				}
			case "match":
				if m, ok := v.(obj)["names_norm"].(obj); ok && m["fuzziness"] == nil {
					for _, n := range d.NamesNorm {
						if slices.Contains(strings.Fields(n), m["query"].(string)) {
							return true
						}
					}
				}
			default:
				if exactHit(v, d) {
					return true
				}
			}
		}
	}
	return false
}

// TestJoinedReadingReachesCityOf (issue 13 item 6): the joined reading of
// "De Kalb" and the one word "Sedrowoolley" reach, with exact clauses
// alone, every place the reference index (the memory backend's) answers
// for them: the "City of" and "Town of" jurisdictions, whose compact
// field keeps the prefix, and the county that has the word.
func TestJoinedReadingReachesCityOf(t *testing.T) {
	locs := []readmodel.Location{
		{GeoID: "c1", GeoType: readmodel.GeoCity, Name: "DeKalb", State: "IL", Incorporated: true, Population: 40000},
		{GeoID: "j1", GeoType: readmodel.GeoJurisdiction, Name: "City of DeKalb", State: "IL", Incorporated: true, Population: 40000},
		{GeoID: "k1", GeoType: readmodel.GeoCounty, Name: "DeKalb County", State: "IL", Population: 100000},
		{GeoID: "j2", GeoType: readmodel.GeoJurisdiction, Name: "Town of De Kalb", State: "NY", Incorporated: true, Population: 2400},
		{GeoID: "c2", GeoType: readmodel.GeoCity, Name: "Sedro-Woolley", State: "WA", Incorporated: true, Population: 12000},
		{GeoID: "j3", GeoType: readmodel.GeoJurisdiction, Name: "City of Sedro-Woolley", State: "WA", Incorporated: true, Population: 12000},
		{GeoID: "x1", GeoType: readmodel.GeoCity, Name: "Kalb", State: "TX", Incorporated: true, Population: 10},
	}
	ref := resolve.New()
	for _, l := range locs {
		ref.Upsert(l)
	}
	for text, want := range map[string][]string{
		"De Kalb":      {"c1", "j1", "j2", "k1"},
		"Dekalb":       {"c1", "j1", "j2", "k1"},
		"Sedrowoolley": {"c2", "j3"},
	} {
		var found []string
		for _, c := range ref.Search(readmodel.ResolveQuery{Text: text, Limit: 20}) {
			found = append(found, c.Location.GeoID)
		}
		for _, id := range want {
			require.Contains(t, found, id, "the reference index answers %s for %q", id, text)
		}
		q := resolve.ParseQuery(readmodel.ResolveQuery{Text: text, Limit: 5})
		var joined []resolve.Reading
		for _, r := range q.Readings {
			if len(r.Tokens) == 1 {
				joined = append(joined, r)
			}
		}
		require.NotEmpty(t, joined, "%q has a one-word reading", text)
		body := resolveBody(resolve.Query{Readings: joined})
		should := body["query"].(obj)["bool"].(obj)["should"]
		for _, l := range locs {
			if slices.Contains(found, l.GeoID) {
				require.True(t, exactHit(should, locationDocOf(l)), "%q reaches %s (%s) exactly", text, l.Name, l.GeoID)
			}
		}
	}
}

// TestResolvePoolGlobalStatistics: the resolve pool is picked by
// relevance, so its search scores with the index's term statistics
// (dfs_query_then_fetch): on a many-shard locations index each shard's
// own statistics would order the pool differently from shard to shard.
// Other searches keep the default.
func TestResolvePoolGlobalStatistics(t *testing.T) {
	s, seen := partialCluster(t, http.StatusOK, goodAnswer)
	_, err := s.ResolveCandidates(context.Background(), readmodel.ResolveQuery{Text: "Seattle", Limit: 5})
	require.NoError(t, err)
	_, err = s.SearchPermits(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef("g1"), Desc: true, Limit: 5})
	require.NoError(t, err)
	reqs := seen()
	require.Len(t, reqs, 2)
	for i, want := range []any{"dfs_query_then_fetch", nil} {
		_, body, _ := strings.Cut(reqs[i], "\n")
		var head map[string]any
		require.NoError(t, json.Unmarshal([]byte(strings.SplitN(body, "\n", 2)[0]), &head))
		require.Equal(t, want, head["search_type"], reqs[i])
	}
}
