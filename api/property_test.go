// Property search, a property's permits and resolve finding properties, over HTTP (helpers in permits_test.go).

package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
)

type propertyMatch struct {
	PropertyID       string  `json:"property_id"`
	CanonicalAddress string  `json:"canonical_address"`
	MatchConfidence  float64 `json:"match_confidence"`
	MatchMetadata    struct {
		MatchType              string   `json:"match_type"`
		InputAddress           string   `json:"input_address"`
		NormalizedInputAddress string   `json:"normalized_input_address"`
		MatchedFields          []string `json:"matched_fields"`
	} `json:"match_metadata"`
}

func TestPropertySearch(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	h.Publish(gazetteer()...)
	h.Publish(propertyEvent(t, "600 University Street", "98101"), propertyEvent(t, "1500 Pike Place", "98101"))
	uni := address.PropertyID(address.Normalize("600 University St"), "Seattle", "WA")
	cases := []struct {
		name, query, typ string
	}{
		{"long form with city", "address=" + url.QueryEscape("600 University Street, Seattle"), "normalized"},
		{"canonical street", "address=" + url.QueryEscape("600 UNIVERSITY ST"), "exact"},
		{"lower case with hints", "address=" + url.QueryEscape("600 university st") + "&city=seattle&state=wa&zipcode=98101", "exact"},
		{"with unit", "address=" + url.QueryEscape("600 University St., Suite 200, Seattle, WA 98101"), "normalized"},
		{"typo", "address=" + url.QueryEscape("600 Univeristy St") + "&city=Seattle", "fuzzy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Get("/v1/search/property?" + tc.query)
			if r.Status != http.StatusOK {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			var m propertyMatch
			r.JSON(t, &m)
			if m.PropertyID != uni || m.MatchMetadata.MatchType != tc.typ || m.MatchConfidence <= 0 || m.MatchConfidence > 1 {
				t.Fatalf("match %s", r.Body)
			}
		})
	}
	for name, q := range map[string]string{
		"other city":  "address=600+University+St&city=Tacoma",
		"no such":     "address=9999+Nowhere+Ave",
		"no number":   "address=University+St",
		"other state": "address=600+University+St&state=OR",
	} {
		t.Run("404 "+name, func(t *testing.T) {
			if r := h.Get("/v1/search/property?" + q); r.Status != http.StatusNotFound {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		})
	}
	for name, tc := range map[string]struct{ q, param string }{
		"missing address": {"city=Seattle", "address"},
		"blank address":   {"address=%20", "address"},
		"bad state":       {"address=600+University+St&state=W1", "state"},
		"bad zipcode":     {"address=600+University+St&zipcode=981", "zipcode"},
	} {
		t.Run("422 "+name, func(t *testing.T) {
			r := h.Get("/v1/search/property?" + tc.q)
			if !namesParam(r, tc.param) {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		})
	}
}

func TestPropertyPermits(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	h.Publish(gazetteer()...)
	h.Publish(propertyEvent(t, "600 University Street", "98101"), propertyEvent(t, "1 Empty Way", "98101"))
	var envs []events.Envelope
	for i, d := range []string{"2024-01-05", "", "2023-03-01", "2024-01-05", "2022-07-07"} {
		envs = append(envs, permitEvent(t, permitSpec{number: fmt.Sprintf("U%d", i), issue: d, zip: "98101", line: "600 University St Suite " + fmt.Sprint(i)}))
	}
	h.Publish(envs...)
	uni := address.PropertyID(address.Normalize("600 University St"), "Seattle", "WA")
	var ids []string
	path := "/v1/property/" + uni + "/permits?limit=2"
	for cur := ""; ; {
		r := h.Get(path + cur)
		if r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var p struct {
			PropertyID string `json:"property_id"`
			Count      int    `json:"count"`
			Permits    []struct {
				PermitID string `json:"permit_id"`
			} `json:"permits"`
			NextCursor *string `json:"next_cursor"`
		}
		r.JSON(t, &p)
		if p.PropertyID != uni || p.Count != len(p.Permits) {
			t.Fatalf("page %s", r.Body)
		}
		for _, x := range p.Permits {
			ids = append(ids, x.PermitID)
		}
		if p.NextCursor == nil {
			break
		}
		cur = "&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	if want := []string{"test:U0", "test:U3", "test:U2", "test:U4", "test:U1"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	empty := address.PropertyID(address.Normalize("1 Empty Way"), "Seattle", "WA")
	if r := h.Get("/v1/property/" + empty + "/permits"); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"count":0`) {
		t.Fatalf("empty property: %d %s", r.Status, r.Body)
	}
	for name, tc := range map[string]struct {
		path   string
		status int
	}{
		"upper-case hex":    {"/v1/property/prop_0123456789ABCDEF0123456789abcdef/permits", 422},
		"short":             {"/v1/property/prop_0123/permits", 422},
		"no prefix":         {"/v1/property/0123456789abcdef0123456789abcdef/permits", 422},
		"unknown":           {"/v1/property/" + events.PropertyID("nowhere") + "/permits", 404},
		"limit 101":         {"/v1/property/" + uni + "/permits?limit=101", 422},
		"bad cursor":        {"/v1/property/" + uni + "/permits?cursor=c1.abc.def", 422},
		"other prop cursor": {"/v1/property/" + empty + "/permits?cursor=" + url.QueryEscape(firstCursor(t, h, uni)), 422},
	} {
		t.Run(name, func(t *testing.T) {
			if r := h.Get(tc.path); r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
		})
	}
}

func firstCursor(t *testing.T, h *apitest.Harness, prop string) string {
	var p struct {
		NextCursor *string `json:"next_cursor"`
	}
	h.Get("/v1/property/"+prop+"/permits?limit=1").JSON(t, &p)
	if p.NextCursor == nil {
		t.Fatal("no cursor")
	}
	return *p.NextCursor
}

func TestResolveFindsProperties(t *testing.T) {
	h := apitest.New(t, apitest.Params{})
	h.Publish(gazetteer()...)
	h.Publish(propertyEvent(t, "600 University Street", "98101"))
	r := h.Get("/v1/locations/resolve?geo_type=property&query=" + url.QueryEscape("600 University Street, Seattle"))
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var res struct {
		Candidates []struct {
			GeoID       string `json:"geo_id"`
			GeoType     string `json:"geo_type"`
			MatchMethod string `json:"match_method"`
		} `json:"candidates"`
	}
	r.JSON(t, &res)
	uni := address.PropertyID(address.Normalize("600 University St"), "Seattle", "WA")
	if len(res.Candidates) != 1 || res.Candidates[0].GeoID != uni || res.Candidates[0].GeoType != "property" || res.Candidates[0].MatchMethod != "address" {
		t.Fatalf("candidates %s", r.Body)
	}
	if r := h.Get("/v1/locations/" + uni); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"geo_type":"property"`) {
		t.Fatalf("property location: %d %s", r.Status, r.Body)
	}
}
