package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
	gazimport "github.com/permitd/permitd/pipeline/gazetteer"
	seaimport "github.com/permitd/permitd/pipeline/seattle"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
)

// publishSeattle publishes the bundled gazetteer, then (as permits look
// up their ZIP's location) the real Seattle permits to h, and returns the
// Seattle import's report.
func publishSeattle(t *testing.T, h *apitest.Harness) seaimport.Report {
	t.Helper()
	var buf []events.Envelope
	flush := func() {
		for i := 0; i < len(buf); i += 4096 {
			h.Publish(buf[i:min(i+4096, len(buf))]...)
		}
		buf = buf[:0]
	}
	collect := func(e events.Envelope) error { buf = append(buf, e); return nil }
	if _, err := gazimport.Import(t.Context(), data.Open, collect); err != nil {
		t.Fatal(err)
	}
	flush()
	rep, err := seaimport.Import(t.Context(), data.Open, collect)
	if err != nil {
		t.Fatal(err)
	}
	flush()
	return rep
}

// TestSeattleRealPermits is the issue's acceptance on the bundled data:
// resolve "Seattle", its city geo's permits come newest first; a ZIP is
// walked with limit=7 exactly once, and its permit_count is what paging
// returns.
func TestSeattleRealPermits(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: loads the bundled gazetteer and the real Seattle permits")
	}
	h := apitest.New(t, apitest.Params{NewResolver: func() memory.Resolver { return resolve.New() }})
	rep := publishSeattle(t, h)

	r := h.Get("/v1/locations/resolve?query=Seattle&state=WA&geo_type=city&limit=1")
	var res struct {
		Candidates []struct {
			GeoID string `json:"geo_id"`
		} `json:"candidates"`
	}
	r.JSON(t, &res)
	seattle := events.GeoID("city", "1840021117")
	if r.Status != http.StatusOK || len(res.Candidates) != 1 || res.Candidates[0].GeoID != seattle {
		t.Fatalf("resolve Seattle: %d %s", r.Status, r.Body)
	}

	var page permitsPage
	r = h.Get("/v1/permits/search?limit=25&geo_id=" + seattle)
	r.JSON(t, &page)
	if r.Status != http.StatusOK || page.Count != 25 || page.NextCursor == nil {
		t.Fatalf("Seattle permits: %d %s", r.Status, r.Body)
	}
	var ids, dates []string
	for _, p := range page.Permits {
		if !strings.HasPrefix(p.PermitID, "seattle_sdci_") || p.IssueDate == nil {
			t.Fatalf("permit %+v is not a dated real Seattle permit", p)
		}
		ids, dates = append(ids, p.PermitID), append(dates, *p.IssueDate)
	}
	if !sortedAs(ids, dates, true) {
		t.Fatalf("not newest first: %v", dates)
	}
	var loc struct {
		PermitCount      int    `json:"permit_count"`
		LatestPermitDate string `json:"latest_permit_date"`
	}
	h.Get("/v1/locations/"+seattle).JSON(t, &loc)
	if loc.LatestPermitDate != dates[0] || loc.PermitCount < (rep.Events-rep.Properties)/2 {
		t.Fatalf("Seattle detail %+v; first page starts %s; %d permits imported", loc, dates[0], rep.Events-rep.Properties)
	}

	cityCount := loc.PermitCount
	zip := events.GeoID("zip", "98101")
	walked, zdates := walkPermits(t, h, url.Values{"geo_id": {zip}, "limit": {"7"}}, nil)
	seen := map[string]bool{}
	for _, id := range walked {
		if seen[id] {
			t.Fatalf("%s twice", id)
		}
		seen[id] = true
	}
	h.Get("/v1/locations/"+zip).JSON(t, &loc)
	if len(walked) == 0 || loc.PermitCount != len(walked) || !sortedAs(walked, zdates, true) {
		t.Fatalf("98101: walked %d, permit_count %d", len(walked), loc.PermitCount)
	}
	t.Logf("%d Seattle permits imported; Seattle city geo %d, 98101 %d", rep.Events-rep.Properties, cityCount, len(walked))
}
