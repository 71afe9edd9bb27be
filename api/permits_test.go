package api_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
)

// A small gazetteer: Washington, King County, Seattle (city and
// jurisdiction) and two of its ZIP codes.
var (
	geoWA      = events.GeoID("state", "WA")
	geoKing    = events.GeoID("county", "53033")
	geoSeattle = events.GeoID("city", "1840021117")
	geoSeaJur  = events.GeoID("jurisdiction", "city:1840021117")
	geo98101   = events.GeoID("zip", "98101")
	geo98104   = events.GeoID("zip", "98104")
)

func gazetteer() []events.Envelope {
	wa := events.Location{State: "WA", StateName: "Washington"}
	loc := func(typ, id, name string, mut func(*events.Location)) events.Envelope {
		d := wa
		d.Name, d.DisplayName = name, name+", WA"
		d.StateGeoID = geoWA
		if mut != nil {
			mut(&d)
		}
		return apitest.Location(typ, id, d, 1)
	}
	zip := func(z string) func(*events.Location) {
		return func(d *events.Location) {
			d.Zipcode, d.City, d.County, d.Jurisdiction = z, "Seattle", "King County", "City of Seattle"
			d.CityGeoID, d.CountyGeoID, d.CountyGeoIDs, d.JurisdictionGeoID = geoSeattle, geoKing, []string{geoKing}, geoSeaJur
		}
	}
	return []events.Envelope{
		loc("state", "WA", "Washington", nil),
		loc("county", "53033", "King County", func(d *events.Location) { d.County = "King County" }),
		loc("city", "1840021117", "Seattle", func(d *events.Location) { d.City, d.CountyGeoID = "Seattle", geoKing }),
		loc("jurisdiction", "city:1840021117", "City of Seattle", nil),
		loc("zip", "98101", "98101", zip("98101")),
		loc("zip", "98104", "98104", zip("98104")),
	}
}

type permitSpec struct {
	number, issue, zip, line string
	version                  int64
}

func permitEvent(t testing.TB, p permitSpec) events.Envelope {
	t.Helper()
	if p.line == "" {
		p.line = p.number + " Pine Street"
	}
	if p.version == 0 {
		p.version = 1
	}
	n := address.Normalize(p.line)
	d := events.Permit{
		PermitNumber: p.number, PermitType: "Building", WorkType: "New", Status: "Issued",
		IssueDate: p.issue, Description: "permit " + p.number, Contractor: "ACME", Source: "test",
		Address:    events.PermitAddress{Line: p.line, City: "Seattle", State: "WA", Zipcode: p.zip, ZipSource: "source"},
		PropertyID: address.PropertyID(n, "Seattle", "WA"),
	}
	env, err := events.New(events.PermitUpserted, events.PermitDocID("test", p.number), p.version, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", d)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func propertyEvent(t testing.TB, line, zip string) events.Envelope {
	t.Helper()
	n := address.Normalize(line)
	d := events.Property{
		CanonicalAddress: address.Canonical(n.Street(), "SEATTLE", "WA", zip), NormalizedAddress: n.Street(),
		City: "SEATTLE", State: "WA", Zipcode: zip,
	}
	env, err := events.New(events.PropertyUpserted, address.PropertyID(n, "Seattle", "WA"), 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", d)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

type permitsPage struct {
	GeoID   string `json:"geo_id"`
	Count   int    `json:"count"`
	Permits []struct {
		PermitID  string  `json:"permit_id"`
		IssueDate *string `json:"issue_date"`
		Location  struct {
			County *string `json:"county"`
		} `json:"location"`
		GeoMatch struct {
			GeoID      string  `json:"geo_id"`
			GeoType    string  `json:"geo_type"`
			Confidence float64 `json:"confidence"`
		} `json:"geo_match"`
	} `json:"permits"`
	NextCursor *string `json:"next_cursor"`
}

// walkPermits pages the search to its end, calling between after each
// page; it returns the permit ids with their issue dates.
func walkPermits(t *testing.T, h *apitest.Harness, params url.Values, between func()) (ids, dates []string) {
	t.Helper()
	for pages := 0; ; pages++ {
		r := h.Get("/v1/permits/search?" + params.Encode())
		if r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var p permitsPage
		r.JSON(t, &p)
		if p.Count != len(p.Permits) || p.GeoID != params.Get("geo_id") {
			t.Fatalf("count %d for %d permits, geo_id %q", p.Count, len(p.Permits), p.GeoID)
		}
		for _, x := range p.Permits {
			if x.GeoMatch.GeoID != params.Get("geo_id") {
				t.Fatalf("geo_match %+v", x.GeoMatch)
			}
			ids = append(ids, x.PermitID)
			d := ""
			if x.IssueDate != nil {
				d = *x.IssueDate
			}
			dates = append(dates, d)
		}
		if p.NextCursor == nil {
			return ids, dates
		}
		if pages > 1000 {
			t.Fatal("walk does not end")
		}
		params.Set("cursor", *p.NextCursor)
		if between != nil {
			between()
		}
	}
}

// sortedAs checks the contract's order: issue_date in direction, undated
// last, permit_id ascending on ties.
func sortedAs(ids, dates []string, desc bool) bool {
	for i := 1; i < len(ids); i++ {
		a, b := dates[i-1], dates[i]
		switch {
		case a == "" && b != "":
			return false
		case a != "" && b == "", a != b && !desc && a < b, a != b && desc && a > b:
			continue
		case a == b && ids[i-1] < ids[i]:
			continue
		}
		return false
	}
	return true
}

func seattlePermits(t *testing.T, n int) (*apitest.Harness, []events.Envelope) {
	h := apitest.New(t, apitest.Params{})
	h.Publish(gazetteer()...)
	r := rand.New(rand.NewPCG(7, 8))
	var envs []events.Envelope
	for i := range n {
		issue := ""
		if i%9 != 0 {
			issue = fmt.Sprintf("2024-%02d-%02d", 1+r.IntN(2), 1+r.IntN(4))
		}
		zip := "98101"
		if i%5 == 0 {
			zip = "98104"
		}
		envs = append(envs, permitEvent(t, permitSpec{number: fmt.Sprintf("P%03d", i), issue: issue, zip: zip}))
	}
	h.Publish(envs...)
	return h, envs
}

func TestPermitsSearchPagingWalksAZipOnce(t *testing.T) {
	h, envs := seattlePermits(t, 80)
	want := 0
	for _, e := range envs {
		if strings.Contains(string(e.Data), `"98101"`) {
			want++
		}
	}
	for _, order := range []string{"desc", "asc", ""} {
		t.Run("order="+order, func(t *testing.T) {
			params := url.Values{"geo_id": {geo98101}, "limit": {"7"}}
			if order != "" {
				params.Set("order", order)
			}
			ids, dates := walkPermits(t, h, params, nil)
			if len(ids) != want || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != want {
				t.Fatalf("walked %d ids (%d distinct), want %d", len(ids), len(slices.Compact(slices.Sorted(slices.Values(ids)))), want)
			}
			if !sortedAs(ids, dates, order != "asc") {
				t.Fatalf("out of order: %v %v", ids, dates)
			}
		})
	}
	var loc struct {
		PermitCount      int     `json:"permit_count"`
		LatestPermitDate *string `json:"latest_permit_date"`
	}
	h.Get("/v1/locations/"+geo98101).JSON(t, &loc)
	if loc.PermitCount != want || loc.LatestPermitDate == nil {
		t.Fatalf("location detail %+v, want permit_count %d", loc, want)
	}
	ids, _ := walkPermits(t, h, url.Values{"geo_id": {geoSeattle}, "limit": {"100"}}, nil)
	h.Get("/v1/locations/"+geoSeattle).JSON(t, &loc)
	if loc.PermitCount != len(envs) || len(ids) != len(envs) {
		t.Fatalf("city: permit_count %d, paged %d, want %d", loc.PermitCount, len(ids), len(envs))
	}
}

func TestPermitsSearchWhileWriting(t *testing.T) {
	for _, order := range []string{"desc", "asc"} {
		t.Run(order, func(t *testing.T) {
			h, envs := seattlePermits(t, 60)
			before := map[string]bool{}
			for _, e := range envs {
				if strings.Contains(string(e.Data), `"98101"`) {
					before[e.EntityID] = true
				}
			}
			n := 0
			ids, dates := walkPermits(t, h, url.Values{"geo_id": {geo98101}, "limit": {"7"}, "order": {order}}, func() {
				n++
				h.Publish(
					permitEvent(t, permitSpec{number: fmt.Sprintf("N%03d", n), issue: "2024-01-02", zip: "98101"}),
					permitEvent(t, permitSpec{number: fmt.Sprintf("M%03d", n), issue: "2030-01-01", zip: "98101"}),
					permitEvent(t, permitSpec{number: fmt.Sprintf("U%03d", n), zip: "98101"}),
				)
			})
			seen := map[string]int{}
			for _, id := range ids {
				seen[id]++
			}
			for id := range before {
				if seen[id] != 1 {
					t.Errorf("%s seen %d times", id, seen[id])
				}
			}
			for id, c := range seen {
				if c != 1 {
					t.Errorf("%s seen %d times", id, c)
				}
			}
			if !sortedAs(ids, dates, order == "desc") {
				t.Fatalf("out of order")
			}
		})
	}
}

func TestPermitsSearchDateBoundsAndMatch(t *testing.T) {
	h, _ := seattlePermits(t, 60)
	ids, dates := walkPermits(t, h, url.Values{"geo_id": {geoKing}, "from_date": {"2024-01-02"}, "to_date": {"2024-01-03"}, "limit": {"5"}}, nil)
	if len(ids) == 0 {
		t.Fatal("no permits in range")
	}
	for _, d := range dates {
		if d < "2024-01-02" || d > "2024-01-03" {
			t.Fatalf("date %q out of bounds", d)
		}
	}
	var p permitsPage
	h.Get("/v1/permits/search?geo_id="+geoWA+"&limit=1").JSON(t, &p)
	if len(p.Permits) != 1 || p.Permits[0].GeoMatch.GeoType != "state" || p.Permits[0].GeoMatch.Confidence != 1 || p.Permits[0].Location.County == nil {
		t.Fatalf("state page %+v", p)
	}
	// a known geo without permits, and a property geo_id
	h.Publish(apitest.Location("zip", "98199", events.Location{Name: "98199", DisplayName: "98199", State: "WA", StateName: "Washington"}, 1))
	if r := h.Get("/v1/permits/search?geo_id=" + events.GeoID("zip", "98199")); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"count":0`) {
		t.Fatalf("empty geo: %d %s", r.Status, r.Body)
	}
	h.Publish(propertyEvent(t, "1 Pine Street", "98101"), permitEvent(t, permitSpec{number: "1", issue: "2024-02-02", zip: "98101"}))
	prop := address.PropertyID(address.Normalize("1 Pine Street"), "Seattle", "WA")
	h.Get("/v1/permits/search?geo_id="+prop).JSON(t, &p)
	if len(p.Permits) != 1 || p.Permits[0].GeoMatch.GeoType != "property" {
		t.Fatalf("property page %+v", p)
	}
}

func TestPermitsSearchReplaysChangeNothing(t *testing.T) {
	h, envs := seattlePermits(t, 30)
	first := h.Get("/v1/permits/search?geo_id=" + geoSeattle + "&limit=100")
	h.Publish(envs...) // the same events again
	// an equal version of a permit, moved to another ZIP and date
	old := permitEvent(t, permitSpec{number: "P001", issue: "2031-01-01", zip: "98104", version: 1})
	h.Publish(old)
	if again := h.Get("/v1/permits/search?geo_id=" + geoSeattle + "&limit=100"); string(again.Body) != string(first.Body) {
		t.Fatalf("replay changed the result:\n%s\n%s", first.Body, again.Body)
	}
	// a newer version does
	h.Publish(permitEvent(t, permitSpec{number: "P001", issue: "2031-01-01", zip: "98104", version: 2}))
	var p permitsPage
	h.Get("/v1/permits/search?geo_id="+geo98104+"&limit=1").JSON(t, &p)
	if len(p.Permits) != 1 || p.Permits[0].PermitID != "test:P001" {
		t.Fatalf("newer version not applied: %+v", p)
	}
}

func TestPermitsSearchValidation(t *testing.T) {
	h, _ := seattlePermits(t, 20)
	var p permitsPage
	h.Get("/v1/permits/search?limit=2&geo_id="+geo98101).JSON(t, &p)
	if p.NextCursor == nil {
		t.Fatal("no cursor")
	}
	tok := *p.NextCursor
	var other permitsPage
	h.Get("/v1/permits/search?limit=2&geo_id="+geoSeattle).JSON(t, &other)
	flip := []byte(tok)
	flip[len(flip)-3] ^= 1
	var propPage struct {
		NextCursor *string `json:"next_cursor"`
	}
	h.Publish(propertyEvent(t, "5 Pine Street", "98101"),
		permitEvent(t, permitSpec{number: "A", line: "5 Pine Street", zip: "98101"}),
		permitEvent(t, permitSpec{number: "B", line: "5 Pine Street", zip: "98101"}))
	prop := address.PropertyID(address.Normalize("5 Pine Street"), "Seattle", "WA")
	h.Get("/v1/property/"+prop+"/permits?limit=1").JSON(t, &propPage)
	if propPage.NextCursor == nil {
		t.Fatal("no property cursor")
	}
	base := "geo_id=" + geo98101
	cases := []struct {
		name, query, param string
	}{
		{"missing geo_id", "limit=5", "geo_id"},
		{"bad geo_id", "geo_id=a%20b", "geo_id"},
		{"impossible date", base + "&from_date=2024-13-40", "from_date"},
		{"not a date", base + "&to_date=yesterday", "to_date"},
		{"from after to", base + "&from_date=2024-02-01&to_date=2024-01-01", "from_date"},
		{"order sideways", base + "&order=sideways", "order"},
		{"order empty", base + "&order=", "order"},
		{"limit 101", base + "&limit=101", "limit"},
		{"limit 0", base + "&limit=0", "limit"},
		{"limit twice", base + "&limit=1&limit=2", "limit"},
		{"tampered cursor", base + "&cursor=" + url.QueryEscape(string(flip)), "cursor"},
		{"truncated cursor", base + "&cursor=" + url.QueryEscape(tok[:len(tok)/2]), "cursor"},
		{"garbage cursor", base + "&cursor=hello", "cursor"},
		{"empty cursor", base + "&cursor=", "cursor"},
		{"cursor of another geo", base + "&cursor=" + url.QueryEscape(*other.NextCursor), "cursor"},
		{"cursor of another order", base + "&order=asc&cursor=" + url.QueryEscape(tok), "cursor"},
		{"cursor of other dates", base + "&from_date=2024-01-01&cursor=" + url.QueryEscape(tok), "cursor"},
		{"cursor of another endpoint", base + "&cursor=" + url.QueryEscape(*propPage.NextCursor), "cursor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Get("/v1/permits/search?" + tc.query)
			if !namesParam(r, tc.param) {
				t.Fatalf("status %d: %s does not name %q", r.Status, r.Body, tc.param)
			}
		})
	}
	t.Run("a cursor survives a limit change", func(t *testing.T) {
		if r := h.Get("/v1/permits/search?limit=9&" + base + "&cursor=" + url.QueryEscape(tok)); r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("unknown geo_id", func(t *testing.T) {
		for _, id := range []string{"gunknown", events.PropertyID("nowhere")} {
			if r := h.Get("/v1/permits/search?geo_id=" + id); r.Status != http.StatusNotFound {
				t.Fatalf("%s: status %d: %s", id, r.Status, r.Body)
			}
		}
	})
}
