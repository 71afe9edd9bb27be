package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
	"github.com/permitd/permitd/test/conformance"
)

// TestResolveCoordinatesAndFocus: every candidate carries lat and lon;
// a focus point keeps the exact match first and says near_focus for the
// candidates it lifts; filler words are dropped with filler_dropped.
func TestResolveCoordinatesAndFocus(t *testing.T) {
	h := apitest.New(t, apitest.Params{NewResolver: func() memory.Resolver { return resolve.New() }})
	h.Publish(conformance.LocationEvents(t)...)
	type cand struct {
		GeoID   string   `json:"geo_id"`
		Lat     *float64 `json:"lat"`
		Lon     *float64 `json:"lon"`
		Reasons []string `json:"reasons"`
	}
	get := func(q string) []cand {
		t.Helper()
		r := h.Get("/v1/locations/resolve?" + q)
		var res struct {
			Count      int    `json:"count"`
			Candidates []cand `json:"candidates"`
		}
		r.JSON(t, &res)
		if r.Status != http.StatusOK || res.Count != len(res.Candidates) {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
		return res.Candidates
	}
	cs := get("query=Seattle")
	if len(cs) == 0 || cs[0].GeoID != conformance.Seattle || cs[0].Lat == nil || *cs[0].Lat != 47.6062 || *cs[0].Lon != -122.3321 {
		t.Fatalf("Seattle: %+v", cs)
	}
	cs = get("query=Seattle&focus_lat=45.5&focus_lon=-122.65")
	if len(cs) == 0 || cs[0].GeoID != conformance.Seattle || slices.Contains(cs[0].Reasons, "near_focus") {
		t.Fatalf("Seattle with a focus in Portland: %+v", cs)
	}
	cs = get("query=Seattle&focus_lat=47.6&focus_lon=-122.33")
	if len(cs) == 0 || cs[0].GeoID != conformance.Seattle || !slices.Contains(cs[0].Reasons, "near_focus") {
		t.Fatalf("Seattle with a focus in Seattle: %+v", cs)
	}
	cs = get("query=Seattle,+Washington,+USA")
	if len(cs) == 0 || cs[0].GeoID != conformance.Seattle || !slices.Contains(cs[0].Reasons, "filler_dropped") {
		t.Fatalf("Seattle, Washington, USA: %+v", cs)
	}
	if cs := get("query=United+States+of+America"); len(cs) != 0 {
		t.Fatalf("only filler words: %+v", cs)
	}
}
