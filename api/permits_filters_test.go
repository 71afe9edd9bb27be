package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
)

// filterEvent is a permit of ZIP 98101 with the given fields.
func filterEvent(t testing.TB, number, issue, typ, work, status, contractor string, valuation *float64) events.Envelope {
	t.Helper()
	line := number + " Pine Street"
	n := address.Normalize(line)
	var num int
	fmt.Sscanf(number, "F%d", &num)
	lat, lon := 47.60+float64(num%10)*0.002, -122.34+float64(num/10)*0.002
	d := events.Permit{
		PermitNumber: number, PermitType: typ, WorkType: work, Status: status, IssueDate: issue,
		Description: "permit " + number, Contractor: contractor, Valuation: valuation, Source: "test", Lat: &lat, Lon: &lon,
		Address:    events.PermitAddress{Line: line, City: "Seattle", State: "WA", Zipcode: "98101", ZipSource: "source"},
		PropertyID: address.PropertyID(n, "Seattle", "WA"),
	}
	env, err := events.New(events.PermitUpserted, events.PermitDocID("test", number), 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", d)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func filterHarness(t *testing.T) *apitest.Harness {
	h := apitest.New(t, apitest.Params{})
	h.Publish(gazetteer()...)
	v := func(f float64) *float64 { return &f }
	types := []string{"Building", "ELECTRICAL", "Demolition"}
	works := []string{"New", "Alteration"}
	stats := []string{"Issued", "Completed", "Permit Closed"}
	contractors := []string{"ACME Roofing, Inc.", "acme roofing inc", "Bob's Builders", ""}
	var envs []events.Envelope
	for i := range 60 {
		var val *float64
		if i%5 != 0 {
			val = v(float64(i * 1000))
		}
		envs = append(envs, filterEvent(t, fmt.Sprintf("F%03d", i), fmt.Sprintf("2024-%02d-%02d", 1+i%6, 1+i%20),
			types[i%3], works[i%2], stats[i%3], contractors[i%4], val))
	}
	h.Publish(envs...)
	return h
}

type filterRecord struct {
	PermitID   string   `json:"permit_id"`
	PermitType *string  `json:"permit_type"`
	WorkType   *string  `json:"work_type"`
	Status     *string  `json:"status"`
	Contractor *string  `json:"contractor"`
	Valuation  *float64 `json:"valuation"`
	Lat        *float64 `json:"lat"`
	DistanceM  *float64 `json:"distance_m"`
}

// walkFiltered pages a filtered search to its end.
func walkFiltered(t *testing.T, h *apitest.Harness, q url.Values) []filterRecord {
	t.Helper()
	var out []filterRecord
	for range 100 {
		r := h.Get("/v1/permits/search?" + q.Encode())
		if r.Status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", q.Encode(), r.Status, r.Body)
		}
		var p struct {
			Permits    []filterRecord `json:"permits"`
			NextCursor *string        `json:"next_cursor"`
		}
		r.JSON(t, &p)
		out = append(out, p.Permits...)
		if p.NextCursor == nil {
			return out
		}
		q.Set("cursor", *p.NextCursor)
	}
	t.Fatal("the walk does not end")
	return nil
}

func TestPermitSearchFilters(t *testing.T) {
	h := filterHarness(t)
	for _, tc := range []struct {
		name  string
		query url.Values
		keep  func(r filterRecord) bool
		want  int
	}{
		{"type any case", url.Values{"permit_type": {"electrical"}}, func(r filterRecord) bool { return *r.PermitType == "ELECTRICAL" }, 20},
		{"type list", url.Values{"permit_type": {" Building , demolition,,building"}}, func(r filterRecord) bool { return *r.PermitType != "ELECTRICAL" }, 40},
		{"work type", url.Values{"work_type": {"NEW"}}, func(r filterRecord) bool { return *r.WorkType == "New" }, 30},
		{"status", url.Values{"status": {"permit closed,ISSUED"}}, func(r filterRecord) bool { return *r.Status != "Completed" }, 40},
		{"valuation range", url.Values{"min_valuation": {"10000"}, "max_valuation": {"20000.5"}},
			func(r filterRecord) bool { return r.Valuation != nil && *r.Valuation >= 10000 && *r.Valuation <= 20000 }, 8},
		{"contractor", url.Values{"contractor": {"ACME ROOFING INC"}}, func(r filterRecord) bool { return strings.Contains(strings.ToLower(*r.Contractor), "acme") }, 30},
		{"combined", url.Values{"permit_type": {"building"}, "status": {"issued"}, "min_valuation": {"1"}},
			func(r filterRecord) bool {
				return *r.PermitType == "Building" && *r.Status == "Issued" && r.Valuation != nil
			}, 16},
		{"nothing", url.Values{"contractor": {"nobody"}}, func(filterRecord) bool { return false }, 0},
		{"q prefix", url.Values{"q": {"PERMIT F01"}}, func(r filterRecord) bool { return strings.HasPrefix(r.PermitID, "test:F01") }, 10},
		{"q number", url.Values{"q": {"f012"}}, func(r filterRecord) bool { return r.PermitID == "test:F012" }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"geo_id": {geo98101}, "limit": {"7"}}
			for k, v := range tc.query {
				q[k] = v
			}
			got := walkFiltered(t, h, q)
			if len(got) != tc.want {
				t.Fatalf("%d permits, want %d", len(got), tc.want)
			}
			for _, r := range got {
				if !tc.keep(r) || r.Lat == nil || r.DistanceM != nil {
					t.Fatalf("permit %+v does not pass", r)
				}
			}
		})
	}
}

func TestPermitFilterCursorIsBound(t *testing.T) {
	h := filterHarness(t)
	base := "/v1/permits/search?geo_id=" + geo98101 + "&limit=5&status=issued"
	r := h.Get(base)
	var p struct {
		NextCursor *string `json:"next_cursor"`
	}
	r.JSON(t, &p)
	if p.NextCursor == nil {
		t.Fatalf("no cursor: %s", r.Body)
	}
	c := url.QueryEscape(*p.NextCursor)
	if r := h.Get(base + "&cursor=" + c); r.Status != http.StatusOK {
		t.Fatalf("same filters: %d %s", r.Status, r.Body)
	}
	// the same filter written differently is the same query
	if r := h.Get("/v1/permits/search?geo_id=" + geo98101 + "&limit=5&status=ISSUED,,issued&cursor=" + c); r.Status != http.StatusOK {
		t.Fatalf("same filter, other spelling: %d %s", r.Status, r.Body)
	}
	for _, other := range []string{"&status=completed", "", "&status=issued&min_valuation=1", "&status=issued&contractor=acme", "&status=issued&q=permit"} {
		r := h.Get("/v1/permits/search?geo_id=" + geo98101 + "&limit=5" + other + "&cursor=" + c)
		if !namesParam(r, "cursor") {
			t.Errorf("cursor with %q: %d %s", other, r.Status, r.Body)
		}
	}
}

func TestPermitFilterBadInput(t *testing.T) {
	h := filterHarness(t)
	for _, tc := range []struct{ query, param string }{
		{"min_valuation=abc", "min_valuation"},
		{"max_valuation=-1", "max_valuation"},
		{"min_valuation=NaN", "min_valuation"},
		{"min_valuation=1e13", "min_valuation"},
		{"min_valuation=5&max_valuation=4", "min_valuation"},
		{"status=isued", "status"},
		{"status=issued,bogus", "status"},
		{"status=", "status"},
		{"status=,,", "status"},
		{"permit_type=", "permit_type"},
		{"permit_type=" + strings.Repeat("x", 101), "permit_type"},
		{"work_type=" + manyValues(51), "work_type"},
		{"work_type=%01x", "work_type"},
		{"contractor=--", "contractor"},
		{"contractor=" + strings.Repeat("x", 201), "contractor"},
		{"status=issued&status=completed", "status"},
		{"q=" + strings.Repeat("x", 10000), "q"},
		{"q=the+and+of", "q"},
		{"q=---", "q"},
		{"q=" + strings.Repeat("word+", 17), "q"},
	} {
		r := h.Get("/v1/permits/search?geo_id=" + geo98101 + "&" + tc.query)
		if !namesParam(r, tc.param) {
			t.Errorf("%s: %d %s", tc.query, r.Status, r.Body)
		}
	}
}

func manyValues(n int) string {
	var vs []string
	for i := range n {
		vs = append(vs, fmt.Sprint("w", i))
	}
	return strings.Join(vs, ",")
}

func TestPermitSearchValuationSort(t *testing.T) {
	h := filterHarness(t)
	got := walkFiltered(t, h, url.Values{"geo_id": {geo98101}, "limit": {"7"}, "sort": {"valuation_desc"}, "status": {"issued,completed"}})
	if len(got) != 40 {
		t.Fatalf("%d permits, want 40", len(got))
	}
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		switch {
		case a.Valuation == nil && b.Valuation != nil:
			t.Fatalf("unknown valuation before a known one at %d", i)
		case a.Valuation != nil && b.Valuation != nil && (*a.Valuation < *b.Valuation || *a.Valuation == *b.Valuation && a.PermitID > b.PermitID):
			t.Fatalf("out of order at %d: %+v then %+v", i, a, b)
		case a.Valuation == nil && b.Valuation == nil && a.PermitID > b.PermitID:
			t.Fatalf("unknown valuations not by permit_id at %d", i)
		}
	}
	if r := h.Get("/v1/permits/search?geo_id=" + geo98101 + "&sort=valuation_desc&order=asc"); !namesParam(r, "order") {
		t.Errorf("order with valuation_desc: %d %s", r.Status, r.Body)
	}
	if r := h.Get("/v1/permits/search?geo_id=" + geo98101 + "&sort=value"); !namesParam(r, "sort") {
		t.Errorf("bad sort: %d %s", r.Status, r.Body)
	}
	r := h.Get("/v1/permits/search?geo_id=" + geo98101 + "&limit=3")
	var p struct {
		NextCursor *string `json:"next_cursor"`
	}
	r.JSON(t, &p)
	if r := h.Get("/v1/permits/search?geo_id=" + geo98101 + "&limit=3&sort=valuation_desc&cursor=" + url.QueryEscape(*p.NextCursor)); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("a date cursor with sort=valuation_desc: %d %s", r.Status, r.Body)
	}
}

func TestPermitSearchGeometry(t *testing.T) {
	h := filterHarness(t)
	// permit Fnn sits at 47.60+0.002*(nn%10), -122.34+0.002*(nn/10)
	near := url.Values{"near": {"47.600,-122.340"}, "radius_m": {"500"}, "sort": {"distance"}, "limit": {"2"}}
	got := walkFiltered(t, h, near)
	if len(got) == 0 || got[0].PermitID != "test:F000" || got[0].DistanceM == nil || *got[0].DistanceM != 0 {
		t.Fatalf("nearest first: %+v", got)
	}
	for i, r := range got {
		if r.DistanceM == nil || *r.DistanceM > 500 || i > 0 && *r.DistanceM < *got[i-1].DistanceM {
			t.Fatalf("distance order at %d: %+v", i, got)
		}
	}
	// 500 m: rows 0..2 of columns 0..2 and a few more; count them from the grid
	want := 0
	for n := range 60 {
		dLat, dLon := float64(n%10)*0.002*111195, float64(n/10)*0.002*111195*0.6743
		if dLat*dLat+dLon*dLon <= 500*500*0.999 {
			want++
		}
	}
	if len(got) < want-1 || len(got) > want+1 {
		t.Errorf("%d permits within 500 m, about %d expected", len(got), want)
	}
	// bbox narrows a geo_id; date order
	box := walkFiltered(t, h, url.Values{"geo_id": {geo98101}, "bbox": {"-122.3405,47.5995,-122.3355,47.6045"}, "limit": {"4"}})
	if len(box) != 9 { // columns 0..2, rows 0..2
		t.Errorf("bbox: %d permits, want 9: %+v", len(box), box)
	}
	for _, r := range box {
		if r.DistanceM != nil {
			t.Errorf("distance without near: %+v", r)
		}
	}
	r := h.Get("/v1/permits/search?near=47.6,-122.34&radius_m=300")
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"geo_id":null`) || !strings.Contains(string(r.Body), `"geo_match":null`) {
		t.Errorf("near without geo_id: %d %.300s", r.Status, r.Body)
	}
	// a cursor is bound to the geometry
	r = h.Get("/v1/permits/search?near=47.6,-122.34&radius_m=500&limit=1")
	var p struct {
		NextCursor *string `json:"next_cursor"`
	}
	r.JSON(t, &p)
	if p.NextCursor == nil {
		t.Fatalf("no cursor: %s", r.Body)
	}
	if r := h.Get("/v1/permits/search?near=47.6,-122.34&radius_m=600&limit=1&cursor=" + url.QueryEscape(*p.NextCursor)); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("cursor with another radius: %d %s", r.Status, r.Body)
	}
}

func TestPermitGeometryBadInput(t *testing.T) {
	h := filterHarness(t)
	for _, tc := range []struct{ query, param string }{
		{"near=47.6,-122.3&radius_m=-5", "radius_m"},
		{"near=47.6,-122.3&radius_m=0", "radius_m"},
		{"near=47.6,-122.3&radius_m=50001", "radius_m"},
		{"near=47.6,-122.3", "radius_m"},
		{"radius_m=100&geo_id=" + geo98101, "radius_m"},
		{"near=91,-122.3&radius_m=100", "near"},
		{"near=47.6,181&radius_m=100", "near"},
		{"near=47.6&radius_m=100", "near"},
		{"near=abc,def&radius_m=100", "near"},
		{"near=NaN,1&radius_m=100", "near"},
		{"bbox=-122.3,47.7,-122.4,47.8", "bbox"},
		{"bbox=-122.4,47.8,-122.3,47.7", "bbox"},
		{"bbox=-122.4,91,-122.3,92", "bbox"},
		{"bbox=-125,45,-120,49", "bbox"},
		{"bbox=1,2,3", "bbox"},
		{"sort=distance&geo_id=" + geo98101, "sort"},
		{"near=47.6,-122.3&radius_m=100&sort=distance&order=asc", "order"},
		{"limit=5", "geo_id"},
	} {
		r := h.Get("/v1/permits/search?" + tc.query)
		if !namesParam(r, tc.param) {
			t.Errorf("%s: %d %s", tc.query, r.Status, r.Body)
		}
	}
}
