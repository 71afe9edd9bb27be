// Leads and stats agree: paging the leads yields what the stats count, on hand-made and on generated data.

package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
	gazimport "github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/gen"
	seaimport "github.com/permitd/permitd/pipeline/seattle"
	"github.com/permitd/permitd/pipeline/signals"
	"github.com/permitd/permitd/readmodel"
	"github.com/stretchr/testify/require"
)

// walkLeads pages the leads endpoint to the end and returns every lead.
func walkLeads(t *testing.T, h *apitest.Harness, params url.Values, limit int) []leadBody {
	t.Helper()
	var all []leadBody
	cursor := ""
	for page := 0; ; page++ {
		require.Less(t, page, 10000)
		q := url.Values{}
		for k, v := range params {
			q[k] = v
		}
		q.Set("limit", fmt.Sprint(limit))
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		res := h.Get("/v1/signals/permit/leads?" + q.Encode())
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		var b leadsBody
		res.JSON(t, &b)
		require.Equal(t, len(b.Leads), b.Count)
		for _, raw := range b.Leads {
			var l leadBody
			require.NoError(t, json.Unmarshal(raw, &l))
			all = append(all, l)
		}
		if b.NextCursor == nil {
			return all
		}
		cursor = *b.NextCursor
	}
}

func TestPermitLeadsAndStatsAgree(t *testing.T) {
	h := signalHarness(t, 1500)
	r := rand.New(rand.NewPCG(42, 42))
	anchors := []string{sigGeo.state, sigGeo.county, sigGeo.jur, sigGeo.city, sigGeo.zipA, sigGeo.zipB, sigGeo.zipC}
	for i := range 40 {
		q := url.Values{"geo_id": {anchors[r.IntN(len(anchors))]}}
		if r.IntN(3) == 0 {
			keys := append([]string(nil), events.PermitSignalKeys...)
			r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			q.Set("signal_keys", strings.Join(keys[:1+r.IntN(3)], ","))
		}
		switch r.IntN(4) {
		case 0:
			q.Set("include_stale", "true")
		case 1:
			q.Set("max_freshness_days", fmt.Sprint(1+r.IntN(400)))
			if r.IntN(2) == 0 {
				q.Set("include_stale", "1")
			}
		}
		if r.IntN(4) == 0 {
			q.Set("from_date", sigNow.AddDate(0, 0, -r.IntN(900)).Format(time.DateOnly))
		}
		if r.IntN(4) == 0 {
			q.Set("to_date", sigNow.AddDate(0, 0, -r.IntN(100)).Format(time.DateOnly))
			if f := q.Get("from_date"); f != "" && f > q.Get("to_date") {
				q.Del("from_date")
			}
		}
		if r.IntN(3) == 0 {
			q.Set("min_confidence", fmt.Sprintf("%.2f", r.Float64()))
		}
		sortBy := "event_date_desc"
		if r.IntN(2) == 0 {
			sortBy = "confidence_desc"
			q.Set("sort", sortBy)
		}
		t.Run(fmt.Sprintf("%d_%s", i, q.Encode()), func(t *testing.T) {
			leads := walkLeads(t, h, q, 1+r.IntN(40))
			seen := map[string]bool{}
			for j, l := range leads {
				require.False(t, seen[l.LeadID], "lead %s repeated", l.LeadID)
				seen[l.LeadID] = true
				if j > 0 {
					require.True(t, leadOrdered(leads[j-1], l, sortBy), "order broken at %d", j)
				}
			}
			sq := url.Values{}
			for k, v := range q {
				if k != "sort" {
					sq[k] = v
				}
			}
			res := h.Get("/v1/signals/permit/stats?" + sq.Encode())
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
			var st statsBody
			res.JSON(t, &st)
			require.Equal(t, int64(len(leads)), st.TotalActiveLeads)
			var sum int64
			for _, b := range st.SignalsBreakdown {
				sum += b.Count
			}
			require.Equal(t, st.TotalActiveLeads, sum, "signals_breakdown")
			require.Equal(t, st.TotalActiveLeads, st.Confidence["high"]+st.Confidence["medium"]+st.Confidence["low"])
			require.Equal(t, st.TotalActiveLeads, st.Freshness["0_7"]+st.Freshness["8_14"]+st.Freshness["15_30"]+st.Freshness["31_plus"])
			// Recount the distributions from the walked leads.
			var high, fresh7 int64
			cities := map[string]int64{}
			for _, l := range leads {
				if l.Confidence != nil && *l.Confidence >= 0.75 {
					high++
				}
				if l.FreshnessLagDays != nil && *l.FreshnessLagDays <= 7 {
					fresh7++
				}
				if l.Location.CityNorm != nil {
					cities[*l.Location.CityNorm]++
				}
			}
			require.Equal(t, high, st.Confidence["high"])
			require.Equal(t, fresh7, st.Freshness["0_7"])
			for _, c := range st.TopCities { // named as the location spells it, counted under city_norm
				require.Equal(t, cities[readmodel.NormName(c.Value)], c.Count, "top city %s", c.Value)
			}
		})
	}
}

// TestPermitLeadsAndStatsAgreeRealAndGenerated runs the same agreement
// check on the bundled gazetteer, the real Seattle permits and generated
// permits, through the reference pipeline and the HTTP API.
func TestPermitLeadsAndStatsAgreeRealAndGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: loads the bundled gazetteer and permits")
	}
	h := apitest.New(t, apitest.Params{Now: sigNow})
	var out []events.Envelope
	pl, err := signals.New(signals.Params{AsOf: sigNow}, func(e events.Envelope) error { out = append(out, e); return nil })
	require.NoError(t, err)
	var buf []events.Envelope
	flush := func() {
		for i := 0; i < len(buf); i += 2000 {
			h.Publish(buf[i:min(i+2000, len(buf))]...)
		}
		buf = buf[:0]
	}
	collect := func(e events.Envelope) error {
		buf = append(buf, e)
		return pl.Add(e)
	}
	_, err = gazimport.Import(t.Context(), data.Open, collect)
	require.NoError(t, err)
	flush()
	_, err = seaimport.Import(t.Context(), data.Open, collect)
	require.NoError(t, err)
	_, err = gen.Generate(t.Context(), gen.Params{Permits: 5000, Seed: 3, Now: sigNow}, collect)
	require.NoError(t, err)
	flush()
	_, err = pl.Finish(t.Context())
	require.NoError(t, err)
	buf = out
	flush()

	seattleCity := events.GeoID("city", "1840021117")
	anchors := []string{events.GeoID("state", "WA"), events.GeoID("county", "53033"), seattleCity, events.GeoID("zip", "98101"), events.GeoID("state", "CA")}
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 25 {
		q := url.Values{"geo_id": {anchors[r.IntN(len(anchors))]}}
		switch r.IntN(3) {
		case 0:
			q.Set("include_stale", "true")
		case 1:
			q.Set("max_freshness_days", fmt.Sprint(1+r.IntN(3650)))
		}
		if r.IntN(3) == 0 {
			q.Set("min_confidence", fmt.Sprintf("%.2f", r.Float64()))
		}
		if r.IntN(3) == 0 {
			q.Set("from_date", sigNow.AddDate(0, 0, -r.IntN(4000)).Format(time.DateOnly))
		}
		if r.IntN(3) == 0 {
			q.Set("signal_keys", events.PermitSignalKeys[r.IntN(6)])
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			leads := walkLeads(t, h, q, 100)
			res := h.Get("/v1/signals/permit/stats?" + q.Encode())
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
			var st statsBody
			res.JSON(t, &st)
			require.Equal(t, int64(len(leads)), st.TotalActiveLeads, "%s", q.Encode())
			var sum int64
			for _, b := range st.SignalsBreakdown {
				sum += b.Count
			}
			require.Equal(t, st.TotalActiveLeads, sum)
			require.Equal(t, st.TotalActiveLeads, st.Confidence["high"]+st.Confidence["medium"]+st.Confidence["low"])
			require.Equal(t, st.TotalActiveLeads, st.Freshness["0_7"]+st.Freshness["8_14"]+st.Freshness["15_30"]+st.Freshness["31_plus"])
		})
	}
	// The real Seattle permits alone give leads for Seattle.
	res := h.Get("/v1/signals/permit/stats?include_stale=true&geo_id=" + seattleCity)
	var st statsBody
	res.JSON(t, &st)
	require.Greater(t, st.TotalActiveLeads, int64(1000))
}
