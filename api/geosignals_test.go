// Geo signals and the catalog over HTTP, on the signal harness of signals_test.go.

package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/stretchr/testify/require"
)

func TestGeoSignalsAndCatalog(t *testing.T) {
	h := signalHarness(t, 800)

	res := h.Get("/v1/signals/catalog")
	require.Equal(t, http.StatusOK, res.Status)
	var cat struct {
		State   string `json:"state"`
		Count   int    `json:"count"`
		Signals []struct {
			SignalKey string         `json:"signal_key"`
			Spec      map[string]any `json:"spec"`
		} `json:"signals"`
	}
	res.JSON(t, &cat)
	require.Equal(t, "WA", cat.State)
	require.Equal(t, 9, cat.Count)
	fams := map[any]int{}
	for i, s := range cat.Signals {
		fams[s.Spec["family"]]++
		if i > 0 {
			require.Less(t, cat.Signals[i-1].SignalKey, s.SignalKey)
		}
	}
	require.Equal(t, map[any]int{"geo": 3, "permit": 6}, fams)
	res = h.Get("/v1/signals/catalog?state=wa&signal_keys=permit_velocity,nope")
	res.JSON(t, &cat)
	require.Equal(t, 1, cat.Count)
	res = h.Get("/v1/signals/catalog?state=WAS")
	require.Equal(t, 422, res.Status)

	res = h.Get("/v1/signals/geo/location/" + sigGeo.city + "?signal_keys=permit_velocity,nope")
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var loc struct {
		GeoType string   `json:"geo_type"`
		Count   int      `json:"count"`
		Missing []string `json:"missing_signal_keys"`
	}
	res.JSON(t, &loc)
	require.Equal(t, "city", loc.GeoType)
	require.Equal(t, 1, loc.Count)
	require.Equal(t, []string{"nope"}, loc.Missing)
	require.Equal(t, 404, h.Get("/v1/signals/geo/location/gnothere").Status)

	// Walk the search with a small page and check the order across pages.
	type row struct {
		GeoID     string  `json:"geo_id"`
		SignalKey string  `json:"signal_key"`
		Score     float64 `json:"score"`
		Decision  string  `json:"decision"`
	}
	walk := func(params string) []row {
		var all []row
		cursor := ""
		for {
			p := "/v1/signals/geo/search?limit=4" + params
			if cursor != "" {
				p += "&cursor=" + url.QueryEscape(cursor)
			}
			res := h.Get(p)
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
			var b struct {
				Count      int     `json:"count"`
				Signals    []row   `json:"signals"`
				NextCursor *string `json:"next_cursor"`
			}
			res.JSON(t, &b)
			require.Equal(t, len(b.Signals), b.Count)
			all = append(all, b.Signals...)
			if b.NextCursor == nil {
				return all
			}
			cursor = *b.NextCursor
		}
	}
	all := walk("")
	require.NotEmpty(t, all)
	require.True(t, sort.SliceIsSorted(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.SignalKey != b.SignalKey {
			return a.SignalKey < b.SignalKey
		}
		return a.GeoID < b.GeoID
	}))
	for _, r := range walk("&signal_keys=permit_velocity&min_score=0.2&decision=positive&geo_type=zip") {
		require.Equal(t, "permit_velocity", r.SignalKey)
		require.Equal(t, "positive", r.Decision)
		require.GreaterOrEqual(t, r.Score, 0.2)
	}
	require.Equal(t, 422, h.Get("/v1/signals/geo/search?geo_type=property").Status)
	require.Equal(t, 422, h.Get("/v1/signals/geo/search?min_score=2").Status)
	require.Equal(t, 422, h.Get("/v1/signals/geo/search?cursor=zzz").Status)

	// Retiring a key in the catalog takes its rows out of both geo
	// endpoints at once; the rows themselves stay in the read model.
	retired, err := events.New(events.CatalogUpserted, events.CatalogID("WA", "permit_velocity"), 1<<40, sigNow, "test", events.CatalogEntry{
		State: "WA", SignalKey: "permit_velocity", Family: events.FamilyGeo, ActiveSignalVersion: "v1",
		ActiveWeightsProfileID: "w1", Status: "retired", Spec: json.RawMessage(`{"unit":"score"}`),
	})
	require.NoError(t, err)
	h.Publish(retired)
	res = h.Get("/v1/signals/catalog?signal_keys=permit_velocity")
	res.JSON(t, &cat)
	require.Equal(t, 0, cat.Count)
	res = h.Get("/v1/signals/geo/location/" + sigGeo.city + "?signal_keys=permit_velocity,nope")
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	res.JSON(t, &loc)
	require.Equal(t, 0, loc.Count)
	require.Equal(t, []string{"permit_velocity", "nope"}, loc.Missing)
	require.Empty(t, walk("&signal_keys=permit_velocity"))
	rest := walk("")
	require.NotEmpty(t, rest)
	for _, r := range rest {
		require.NotEqual(t, "permit_velocity", r.SignalKey)
	}
	require.Less(t, len(rest), len(all))
}
