package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/permitd/permitd/api"
	"github.com/permitd/permitd/api/apitest"
	"github.com/permitd/permitd/api/openapi/openapitest"
	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
	"github.com/permitd/permitd/test/conformance"
)

// fixtureNow is the service clock of the fuzz harnesses: the conformance
// fixture's today, so that its leads are fresh.
var fixtureNow = time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)

// fuzzRoutes are the business routes FuzzQuery picks from; "{}" is where
// its path segment goes.
var fuzzRoutes = []string{
	"/v1/locations/resolve",
	"/v1/locations/{}",
	"/v1/permits/search",
	"/v1/permits/stats/monthly",
	"/v1/permits/export",
	"/v1/search/property",
	"/v1/property/{}/permits",
	"/v1/signals/catalog",
	"/v1/signals/geo/location/{}",
	"/v1/signals/geo/search",
	"/v1/signals/permit/leads",
	"/v1/signals/permit/stats",
}

// FuzzQuery sends any query string (and, where a route has one, any path
// segment) that an HTTP server would accept to a business route over the
// conformance data. TestHostileInputNeverFails tries one bad value at a
// time; here the values combine (two filters that contradict, a cursor
// with other parameters, a parameter given many times). On a documented
// operation every answer is 200, 404 or a 422 with the spec's error body
// (VALIDATION_ERROR and a message), never a 5xx or a panic, and is
// checked against the OpenAPI document (apitest); any other path (an
// empty segment, a trailing slash) is 404 NOT_FOUND. The seeds and the
// inputs in testdata/fuzz/FuzzQuery (what fuzzing found) run in make
// test.
//
//	go test -run '^$' -fuzz FuzzQuery -fuzztime 5m ./api/
func FuzzQuery(f *testing.F) {
	h := apitest.New(f, apitest.Params{NewResolver: func() memory.Resolver { return resolve.New() }, Now: fixtureNow})
	h.Publish(conformance.AllEvents(f)...)
	seeds := []struct {
		route      int
		seg, query string
	}{
		{0, "", "query=Seattle&limit=3&focus_lat=47.6&focus_lon=-122.3"},
		{0, "", "query=Spokane&state=WA&geo_type=city&scope=all&focus_lat=91"},
		{1, conformance.Seattle, ""},
		{1, "%00", ""},
		{2, "", "geo_id=" + conformance.Zip98101 + "&order=issue_date_desc&limit=2"},
		{2, "", "geo_id=" + conformance.Seattle + "&from_date=2025-01-01&to_date=2024-01-01&min_valuation=10&max_valuation=5"},
		{2, "", "near=47.6,-122.3&radius_m=500&bbox=-122.4,47.5,-122.2,47.7&sort=distance"},
		{2, "", "geo_id=" + conformance.WA + "&q=roof&contractor=x&status=issued&status=final&permit_type=a,b"},
		{2, "", "geo_id=" + conformance.WA + "&cursor=c1.AAAA.BBBB&order=valuation_desc"},
		{3, "", "geo_id=" + conformance.Zip98101 + "&from_date=2024-01-01&to_date=2026-01-01&q=%22deck"},
		{3, "", "near=0,0&radius_m=1e309"},
		{4, "", "geo_id=" + conformance.Zip98101 + "&format=csv&from_date=2024-02-30"},
		{5, "", "address=600+University+St&city=Seattle&state=WA&zipcode=98101"},
		{6, conformance.PropUniv, "limit=1&cursor="},
		{7, "", "state=WA&signal_keys=a,,b"},
		{8, conformance.Seattle, "signal_keys=" + strings.Repeat("k,", 50)},
		{9, "", "state=WA&geo_type=zip&decision=go&min_score=-1&limit=100"},
		{10, "", "geo_id=" + conformance.WA + "&group_by=geo&sort=confidence&include_stale=true&max_freshness_days=0"},
		{11, "", "geo_id=" + conformance.WA + "&signal_keys=x&min_confidence=1.5&include_stale=maybe"},
	}
	for _, s := range seeds {
		f.Add(uint8(s.route), s.seg, s.query)
	}
	// Real cursors, with their own query and with another.
	for _, c := range []struct {
		route int
		query string
	}{
		{2, "geo_id=" + conformance.WA + "&limit=3"},
		{6, "limit=1"},
		{9, "state=WA&limit=2"},
		{10, "geo_id=" + conformance.WA + "&include_stale=true&limit=3"},
	} {
		path := strings.Replace(fuzzRoutes[c.route], "{}", conformance.PropUniv, 1)
		var page struct {
			Next *string `json:"next_cursor"`
		}
		apitest.Response{Body: h.Get(path + "?" + c.query).Body}.JSON(f, &page)
		if page.Next == nil {
			f.Fatalf("%s?%s: no next page", path, c.query)
		}
		cur := "&cursor=" + url.QueryEscape(*page.Next)
		f.Add(uint8(c.route), conformance.PropUniv, c.query+cur)
		f.Add(uint8(c.route), conformance.PropUniv, c.query+"&order=asc&sort=confidence_desc"+cur)
	}
	f.Fuzz(func(t *testing.T, route uint8, seg, query string) { checkQuery(t, h, route, seg, query) })
}

// FuzzQueryBundled is FuzzQuery over the bundled data (the gazetteer, the
// real Seattle permits, 5,000 generated ones and their signals:
// api.BundledStore), whose large geographies take the read paths the
// conformance data's small ones do not (a city's filter postings and
// valuation order, state-wide leads). Skipped with -short.
//
//	go test -run '^$' -fuzz FuzzQueryBundled -fuzztime 5m ./api/
func FuzzQueryBundled(f *testing.F) {
	if testing.Short() {
		f.Skip("skipped with -short: loads the bundled gazetteer and permits")
	}
	h := apitest.New(f, apitest.Params{Server: api.Params{Reader: api.BundledStore(f)}, Now: api.BundledNow})
	seattle, zip := events.GeoID("city", "1840021117"), events.GeoID("zip", "98101")
	for _, s := range []struct {
		route      int
		seg, query string
	}{
		{0, "", "query=Seattle+WA&limit=5"},
		{0, "", "query=600+University+St+Seattle&scope=property"},
		{1, seattle, ""},
		{2, "", "geo_id=" + seattle + "&limit=100&sort=valuation_desc&status=issued,completed"},
		{2, "", "geo_id=" + seattle + "&q=deck+addition&from_date=2020-01-01&min_valuation=10000"},
		{2, "", "geo_id=" + zip + "&near=47.61,-122.33&radius_m=800&sort=distance&limit=50"},
		{2, "", "geo_id=" + events.GeoID("state", "WA") + "&bbox=-122.4,47.5,-122.2,47.7&permit_type=building"},
		{3, "", "geo_id=" + seattle + "&from_date=2016-01-01&to_date=2025-12-31&work_type=new"},
		{4, "", "geo_id=" + zip + "&format=csv&q=roof"},
		{5, "", "address=600+University+St&city=Seattle&state=WA"},
		{8, seattle, ""},
		{9, "", "state=WA&geo_type=city&decision=positive&min_score=0.5&limit=100"},
		{10, "", "geo_id=" + events.GeoID("state", "WA") + "&group_by=zip&sort=confidence_desc&limit=100"},
		{11, "", "geo_id=" + seattle + "&include_stale=true&min_confidence=0.5"},
	} {
		f.Add(uint8(s.route), s.seg, s.query)
	}
	f.Fuzz(func(t *testing.T, route uint8, seg, query string) { checkQuery(t, h, route, seg, query) })
}

// FuzzHeaders sends GET and HEAD requests of the conformance data's
// routes with any Accept-Encoding, If-None-Match, X-Request-ID and API
// key: the answer is 200, 304, 401, 403, 404, 422 or 429 (a wrong key,
// the failed-key throttle), never a 5xx; its
// X-Request-ID is the caller's when that is safe (1..64 of
// [A-Za-z0-9._:-]), else a new one; a 304 has no body; a GET's body, once
// decompressed if it is, matches the OpenAPI document. (An ETag is the
// process's: a fuzzing worker's seeds that carry the coordinator's do not
// match it.)
//
//	go test -run '^$' -fuzz FuzzHeaders -fuzztime 5m ./api/
func FuzzHeaders(f *testing.F) {
	h := apitest.New(f, apitest.Params{NewResolver: func() memory.Resolver { return resolve.New() }, Now: fixtureNow})
	h.Publish(conformance.AllEvents(f)...)
	paths := []string{
		"/v1/locations/resolve?query=Seattle",
		"/v1/locations/" + conformance.Seattle,
		"/v1/permits/search?geo_id=" + conformance.WA,
		"/v1/permits/stats/monthly?geo_id=" + conformance.Zip98101,
		"/v1/permits/export?geo_id=" + conformance.WA,
		"/v1/signals/permit/leads?geo_id=" + conformance.WA,
		"/v1/signals/geo/search?state=WA",
		"/v1/health/ready",
	}
	etag := h.Get(paths[2]).Header.Get("ETag")
	f.Add(false, uint8(2), "gzip, deflate, br", etag, "req-1", apitest.Key)
	f.Add(true, uint8(2), "identity;q=1, *;q=0", "W/"+etag+", \"x\"", "x y", apitest.Key)
	f.Add(false, uint8(4), "gzip;q=0.5, zstd", "*", strings.Repeat("a", 65), apitest.Key)
	f.Add(false, uint8(0), "", "", "", "wrong-key")
	f.Fuzz(func(t *testing.T, head bool, route uint8, acceptEncoding, ifNoneMatch, requestID, key string) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		req := httptest.NewRequest(method, paths[int(route)%len(paths)], nil)
		for k, v := range map[string]string{"Accept-Encoding": acceptEncoding, "If-None-Match": ifNoneMatch, "X-Request-ID": requestID, "X-API-Key": key} {
			if v != "" {
				if !validHeaderValue(v) {
					t.Skip() // net/http's server refuses such a request
				}
				req.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		h.Handler.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusNotModified, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
			http.StatusUnprocessableEntity, http.StatusTooManyRequests: // 429: the failed-key throttle
		default:
			t.Fatalf("%s %s: status %d: %.300s", method, req.URL, rec.Code, rec.Body)
		}
		got := rec.Header().Get("X-Request-ID")
		if requestID != "" && len(requestID) <= 64 && strings.Trim(requestID, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == "" {
			if got != requestID {
				t.Errorf("X-Request-ID %q, sent %q", got, requestID)
			}
		} else if got == "" || got == requestID {
			t.Errorf("X-Request-ID %q for an unsafe %q", got, requestID)
		}
		body := rec.Body.Bytes()
		switch enc := rec.Header().Get("Content-Encoding"); {
		case rec.Code == http.StatusNotModified:
			if len(body) != 0 {
				t.Errorf("%s %s: 304 with a body of %d bytes", method, req.URL, len(body))
			}
			return
		case head:
			return // the handlers write a HEAD's body; net/http's server drops it
		case enc == "gzip":
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("gzip: %v", err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("gzip: %v", err)
			}
			rec.Header().Del("Content-Encoding")
		case enc != "":
			t.Fatalf("Content-Encoding %q for Accept-Encoding %q", enc, acceptEncoding)
		}
		h.V.Check(t, req, rec.Code, rec.Header(), body)
	})
}

// validHeaderValue reports whether net/http's server takes v as a header
// value: no control bytes but the tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// checkQuery is one run of FuzzQuery: route is fuzzRoutes' index (its
// segment seg), query the raw query string.
func checkQuery(t *testing.T, h *apitest.Harness, route uint8, seg, query string) {
	path := strings.Replace(fuzzRoutes[int(route)%len(fuzzRoutes)], "{}", seg, 1)
	target := path + "?" + query
	// What net/http's server would refuse before any handler runs
	// (a request line it cannot parse) is not this test's business.
	u, err := url.ParseRequestURI(target)
	if err != nil || strings.ContainsAny(target, " \r\n") || !strings.HasPrefix(u.Path, "/v1/") {
		t.Skip()
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.URL, req.RequestURI = u, target
	req.Header.Set("X-API-Key", apitest.Key)
	if !h.V.Documented(req) {
		// A path no operation has (an empty segment, a trailing
		// slash, a segment past the route's): 404 in the error body.
		rec := httptest.NewRecorder()
		h.Handler.ServeHTTP(rec, req)
		var e stdError
		if rec.Code != http.StatusNotFound || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code != "NOT_FOUND" {
			t.Errorf("%s: status %d: %.300s", target, rec.Code, rec.Body)
		}
		return
	}
	rec := h.V.Serve(t, h.Handler, req)
	switch rec.Code {
	case http.StatusOK, http.StatusNotFound:
	case http.StatusUnprocessableEntity:
		var e stdError
		apitest.Response{Body: rec.Body.Bytes()}.JSON(t, &e)
		if e.Error.Code != "VALIDATION_ERROR" || e.Error.Message == "" {
			t.Errorf("%s: 422 body %s", target, rec.Body)
		}
	default:
		t.Errorf("%s: status %d: %.300s", target, rec.Code, rec.Body)
	}
}

// FuzzEventThenReads projects one more message, any bytes, after the
// conformance data (as a pipeline's bad or unusual event would arrive from
// Kafka), then reads the endpoints over the geographies, properties and
// keys it could touch (readsAfter). The indexer either takes the message
// or sends it to the dead-letter topic, never fails the batch or panics.
// The seeds are the fixture's events, so the fuzzer starts from valid ones
// of every kind; FuzzPermitThenReads and FuzzLeadThenReads vary the
// fields of valid events instead of their bytes.
//
//	go test -run '^$' -fuzz FuzzEventThenReads -fuzztime 5m ./api/
func FuzzEventThenReads(f *testing.F) {
	fz := newFuzzBase(f)
	for _, e := range fz.base {
		raw, err := json.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		h, dead := fz.harness(t)
		publishChecked(t, h, dead, raw)
		if dead.n > 0 {
			return // the read model is the fixture's, read by the seeds
		}
		var env struct {
			EntityID string `json:"entity_id"`
			Data     struct {
				GeoID       string `json:"geo_id"`
				AnchorGeoID string `json:"anchor_geo_id"`
				PropertyID  string `json:"property_id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(raw, &env)
		fz.readsAfter(t, h, []string{env.EntityID, env.Data.GeoID, env.Data.AnchorGeoID}, []string{env.EntityID, env.Data.PropertyID})
	})
}

// FuzzPermitThenReads publishes a permit made of the fuzzer's fields twice
// after the conformance data (its version, then the next version with
// another issue date and valuation: an update that moves it in every
// index), then reads as FuzzEventThenReads does. A permit the indexer
// refuses (a field out of its schema) must go to the dead-letter topic.
//
//	go test -run '^$' -fuzz FuzzPermitThenReads -fuzztime 5m ./api/
func FuzzPermitThenReads(f *testing.F) {
	fz := newFuzzBase(f)
	f.Add("P900", "2025-02-03", "2024-12-31", "Issued", "Building", 12500.5, true, "98101", "Seattle", "WA", 47.61, -122.33, true, uint8(1), "New deck", "ACME", int64(1), "2025-03-04", 99.0)
	f.Add("P001", "", "", "", "Electrical", 0.0, false, "98004", "BELLEVUE", "wa", 0.0, 0.0, false, uint8(3), "", "", int64(7), "", -1.0)
	f.Add("P902", "2026-06-30", "2026-07-01", "final", "Building", 1e15, true, "00000", "Nowhere", "OR", -90.0, 180.0, true, uint8(0), "x", "y", int64(1<<62), "0000-01-01", 0.01)
	// A permit number of blanks: the schema takes it, the indexer does not
	// (dead letter), and neither does indexer.Check (publishChecked).
	f.Add(" ", "2025-02-03", "", "Issued", "Building", 1.0, true, "98101", "Seattle", "WA", 47.61, -122.33, true, uint8(0), "", "", int64(1), "2025-03-04", 2.0)
	props := []string{"", conformance.PropUniv, conformance.PropSecnd, conformance.PropBel}
	f.Fuzz(func(t *testing.T, number, issue, applied, status, ptype string, valuation float64, valued bool, zip, city, state string,
		lat, lon float64, located bool, prop uint8, desc, contractor string, version int64, issue2 string, valuation2 float64) {
		d := events.Permit{
			PermitNumber: number, PermitType: ptype, Status: status, IssueDate: issue, ApplicationDate: applied,
			Description: desc, Contractor: contractor, Source: "fuzz",
			Address: events.PermitAddress{Line: "1 Fuzz St", City: city, State: state, Zipcode: zip},
		}
		if int(prop) < len(props) {
			d.PropertyID = props[prop]
		}
		if valued {
			d.Valuation = &valuation
		}
		if located {
			d.Lat, d.Lon = &lat, &lon
		}
		id := events.PermitDocID("fuzz", number)
		first, ok := fuzzEnvelope(events.PermitUpserted, id, version, d)
		if !ok {
			t.Skip()
		}
		d.IssueDate, d.Valuation = issue2, &valuation2
		second, ok := fuzzEnvelope(events.PermitUpserted, id, version+1, d)
		if !ok || version+1 < version {
			t.Skip()
		}
		h, dead := fz.harness(t)
		publishChecked(t, h, dead, first)
		publishChecked(t, h, dead, second)
		if dead.n == 2 {
			return
		}
		fz.readsAfter(t, h, []string{events.GeoID("zip", zip)}, []string{d.PropertyID})
	})
}

// FuzzLeadThenReads publishes a lead made of the fuzzer's fields (its
// anchor one of the fixture's geographies or any string) after the
// conformance data, and reads as FuzzEventThenReads does.
//
//	go test -run '^$' -fuzz FuzzLeadThenReads -fuzztime 5m ./api/
func FuzzLeadThenReads(f *testing.F) {
	fz := newFuzzBase(f)
	f.Add("framing_nowcast_early", "conformance:P001", "2026-06-29", 0.8, true, uint8(0), "", "Seattle", "WA", "98101", "inferred_timing", "ISSUED_RECENTLY", int64(5))
	f.Add("site_prep_issued_nowcast", "fuzz:x", "", 0.0, false, uint8(2), "", "", "WA", "", "observed_event", "", int64(1))
	f.Add("rough_in_window_late", "conformance:L001", "2099-12-31", 1.0, true, uint8(9), "zip_98004", "BELLEVUE", "OR", "99999", "x", "A,B", int64(2000))
	anchors := []string{conformance.Zip98101, conformance.Zip98104, conformance.Zip98004, conformance.Seattle, conformance.SeaJur, conformance.King, conformance.WA, conformance.Portland}
	f.Fuzz(func(t *testing.T, key, permitID, date string, confidence float64, confident bool, anchor uint8, anchorID, city, state, zip, basis, reasons string, version int64) {
		if int(anchor) < len(anchors) {
			anchorID = anchors[anchor]
		}
		d := events.Lead{
			SignalKey: key, PermitID: permitID, PermitNumber: "L-fuzz", EventDateUsed: date, SignalBasis: basis,
			ReasonCodes: strings.Split(reasons, ","), AnchorGeoID: anchorID, SignalVersion: "v1",
			Address: events.LeadAddress{FullAddress: "1 Fuzz St", City: city, State: state, Zipcode: zip},
		}
		if confident {
			d.Confidence = &confidence
		}
		raw, ok := fuzzEnvelope(events.LeadUpserted, events.LeadID(permitID, key), version, d)
		if !ok {
			t.Skip()
		}
		h, dead := fz.harness(t)
		publishChecked(t, h, dead, raw)
		if dead.n > 0 {
			return
		}
		fz.readsAfter(t, h, []string{anchorID}, nil)
	})
}

// FuzzLocationThenReads publishes a place made of the fuzzer's fields
// after the conformance data (a new one, or a new version of one of the
// fixture's: names, parents and coordinates that move it in the
// resolver and re-link the permits), then a permit at its ZIP and city,
// and reads as FuzzEventThenReads does, with resolve queries of its name
// and alias.
//
//	go test -run '^$' -fuzz FuzzLocationThenReads -fuzztime 5m ./api/
func FuzzLocationThenReads(f *testing.F) {
	fz := newFuzzBase(f)
	f.Add(uint8(2), uint8(255), "1840099999", "Tukwila", "Tukwila, WA", "WA", "King County", "Tukwila", "", uint8(1), 47.47, -122.26, int64(21000), "Tukwilla", int64(1))
	f.Add(uint8(4), uint8(255), "98188", "98188", "98188 (Tukwila, WA)", "WA", "King County", "Tukwila", "98188", uint8(0), 47.45, -122.27, int64(0), "", int64(1))
	f.Add(uint8(2), uint8(2), "", "Seattle", "Seattle, Washington", "WA", "King County", "Seattle", "", uint8(3), 47.6, -122.3, int64(750000), "Emerald City", int64(2))
	f.Add(uint8(4), uint8(6), "", "98101", "98101", "OR", "", "Bellevue", "98101", uint8(2), -91.0, 181.0, int64(-5), "", int64(9))
	kinds := []string{"state", "county", "city", "jurisdiction", "zip"}
	fixture := []string{conformance.WA, conformance.King, conformance.Seattle, conformance.SeaJur, conformance.Bellevue, conformance.MtVernon, conformance.Zip98101, conformance.Zip98004}
	parents := []string{"", conformance.King, conformance.Seattle, conformance.Bellevue, conformance.Skagit, conformance.SeaJur}
	f.Fuzz(func(t *testing.T, kind, existing uint8, code, name, display, state, county, city, zipcode string, parent uint8,
		lat, lon float64, population int64, alias string, version int64) {
		l := events.Location{
			GeoType: kinds[int(kind)%len(kinds)], Name: name, DisplayName: display, State: state, StateName: state,
			County: county, City: city, Zipcode: zipcode, Lat: lat, Lon: lon, Population: population,
		}
		if l.GeoType != "state" {
			l.StateGeoID = events.GeoID("state", state)
		}
		if p := parents[int(parent)%len(parents)]; p != "" {
			switch l.GeoType {
			case "zip":
				l.CountyGeoID, l.CountyGeoIDs, l.CityGeoID = conformance.King, []string{conformance.King}, p
			case "city", "jurisdiction":
				l.CountyGeoID = p
			}
		}
		if alias != "" {
			l.Aliases = []string{alias}
		}
		id := events.GeoID(l.GeoType, code)
		if int(existing) < len(fixture) {
			id = fixture[existing]
		}
		raw, ok := fuzzEnvelope(events.LocationUpserted, id, version, l)
		if !ok {
			t.Skip()
		}
		permit := fuzzPermitAt(t, "PLOC", events.PermitAddress{Line: "1 Fuzz St", City: city, State: state, Zipcode: zipcode}, "")
		h, dead := fz.harness(t)
		publishChecked(t, h, dead, raw)
		if dead.n > 0 {
			return
		}
		publishChecked(t, h, dead, permit)
		for _, q := range []string{name, alias, display} {
			if q == "" {
				continue
			}
			p := "/v1/locations/resolve?" + url.Values{"query": {q}}.Encode()
			if r := h.Get(p); r.Status != http.StatusOK && r.Status != http.StatusUnprocessableEntity {
				t.Errorf("%s: status %d: %.300s", p, r.Status, r.Body)
			}
		}
		fz.readsAfter(t, h, []string{id, events.GeoID("zip", zipcode)}, nil)
	})
}

// FuzzPropertyThenReads publishes a property made of the fuzzer's fields
// (a new one, or a new version of one of the fixture's) and a permit on
// it after the conformance data, and reads as FuzzEventThenReads does,
// with property searches by its address.
//
//	go test -run '^$' -fuzz FuzzPropertyThenReads -fuzztime 5m ./api/
func FuzzPropertyThenReads(f *testing.F) {
	fz := newFuzzBase(f)
	f.Add(uint8(255), "addr:700 PINE ST|SEATTLE|WA", "700 PINE ST", "Seattle", "WA", "98101", "", 47.61, -122.33, true, int64(1))
	f.Add(uint8(0), "", "600 UNIVERSITY STREET", "SEATTLE", "WA", "98104", "P-1", 0.0, 0.0, false, int64(5))
	f.Add(uint8(2), "", "500 108th Ave NE #4", "bellevue", "or", "", "", 91.0, 0.0, true, int64(2))
	fixture := []string{conformance.PropUniv, conformance.PropSecnd, conformance.PropBel}
	f.Fuzz(func(t *testing.T, existing uint8, key, street, city, state, zip, parcel string, lat, lon float64, located bool, version int64) {
		d := events.Property{NormalizedAddress: street, City: city, State: state, Zipcode: zip, ParcelID: parcel,
			CanonicalAddress: street + ", " + city + ", " + state + " " + zip}
		if located {
			d.Lat, d.Lon = &lat, &lon
		}
		id := events.PropertyID(key)
		if int(existing) < len(fixture) {
			id = fixture[existing]
		}
		raw, ok := fuzzEnvelope(events.PropertyUpserted, id, version, d)
		if !ok {
			t.Skip()
		}
		permit := fuzzPermitAt(t, "PPROP", events.PermitAddress{Line: street, City: city, State: state, Zipcode: zip}, id)
		h, dead := fz.harness(t)
		publishChecked(t, h, dead, raw)
		if dead.n > 0 {
			return
		}
		publishChecked(t, h, dead, permit)
		for _, q := range []url.Values{
			{"address": {street}},
			{"address": {street}, "city": {city}, "state": {state}},
			{"address": {street}, "zipcode": {zip}},
		} {
			p := "/v1/search/property?" + q.Encode()
			if r := h.Get(p); r.Status != http.StatusOK && r.Status != http.StatusNotFound && r.Status != http.StatusUnprocessableEntity {
				t.Errorf("%s: status %d: %.300s", p, r.Status, r.Body)
			}
		}
		fz.readsAfter(t, h, []string{events.GeoID("zip", zip)}, []string{id})
	})
}

// fuzzEnvelope is the message of one event, false when the fuzzer's
// fields make no JSON (a NaN) or no envelope.
func fuzzEnvelope(typ events.Type, id string, version int64, data any) ([]byte, bool) {
	env, err := events.New(typ, id, version, fixtureNow, "fuzz", data)
	if err != nil {
		return nil, false
	}
	raw, err := json.Marshal(env)
	return raw, err == nil
}

// fuzzPermitAt is the message of a permit issued 2026-06-01 at addr (on
// the property propertyID, "" for none); it skips the run when the
// fuzzer's fields make no envelope.
func fuzzPermitAt(t *testing.T, number string, addr events.PermitAddress, propertyID string) []byte {
	raw, ok := fuzzEnvelope(events.PermitUpserted, events.PermitDocID("fuzz", number), 1, events.Permit{
		PermitNumber: number, PermitType: "Building", IssueDate: "2026-06-01", Source: "fuzz", PropertyID: propertyID, Address: addr,
	})
	if !ok {
		t.Skip()
	}
	return raw
}

// fuzzBase is what the event fuzzers share: the conformance data and one
// OpenAPI validator.
type fuzzBase struct {
	v    *openapitest.Validator
	base []events.Envelope
}

func newFuzzBase(f *testing.F) *fuzzBase {
	return &fuzzBase{v: openapitest.New(f), base: conformance.AllEvents(f)}
}

// harness is a new API over the conformance data, and the count of the
// messages sent to the dead-letter topic after it.
// publishChecked publishes raw after the fixture. What the indexer
// dead-letters, indexer.Check (`permitd publish --dry-run`'s check)
// refuses too, unless only the locations tell: a lead or geo signal of a
// geography nobody published.
func publishChecked(t *testing.T, h *apitest.Harness, dead *deadLetters, raw []byte) {
	t.Helper()
	n := dead.n
	h.PublishRaw(raw)
	if dead.n == n {
		return
	}
	reason := dead.reasons[len(dead.reasons)-1]
	if err := indexer.Check(raw); err == nil && !errors.Is(reason, indexer.ErrUnknownGeography) {
		t.Fatalf("the indexer dead-lettered %q (%v); indexer.Check took it", raw, reason)
	}
}

// deadLetters counts what a harness's indexer sent to the dead-letter
// sink, and why.
type deadLetters struct {
	n       int
	reasons []error
}

func (fz *fuzzBase) harness(t *testing.T) (*apitest.Harness, *deadLetters) {
	dead := &deadLetters{}
	h := apitest.New(t, apitest.Params{
		NewResolver: func() memory.Resolver { return resolve.New() },
		Now:         fixtureNow,
		Validator:   fz.v,
		DeadLetter: func(_ context.Context, _ indexer.Message, reason error) error {
			dead.n++
			dead.reasons = append(dead.reasons, reason)
			return nil
		},
	})
	h.Publish(fz.base...)
	if dead.n != 0 {
		t.Fatalf("the fixture itself went to the dead-letter topic (%d): %v", dead.n, dead.reasons)
	}
	return h, dead
}

// readsAfter reads every endpoint over a state, a county, a city and a
// ZIP of the fixture, and over the geographies (geos) and properties
// (props) the published message names. Each read is 200 or 404 (422 only
// for the message's own ids) and matches the OpenAPI document; a walk
// over the pages of permit search and of permit leads sees each item once.
func (fz *fuzzBase) readsAfter(t *testing.T, h *apitest.Harness, geos, props []string) {
	t.Helper()
	reads := []string{
		"/v1/locations/resolve?query=Seattle", "/v1/locations/resolve?query=98101&scope=zip",
		"/v1/search/property?address=600+University+St&city=Seattle",
		"/v1/property/" + conformance.PropUniv + "/permits",
		"/v1/signals/catalog", "/v1/signals/catalog?state=WA",
		"/v1/signals/geo/search?state=WA", "/v1/signals/geo/search?state=WA&geo_type=zip",
	}
	// Every read is checked against the document, the main cost of a run:
	// one geography of each kind.
	for _, g := range []string{conformance.WA, conformance.King, conformance.Seattle, conformance.Zip98101} {
		reads = append(reads,
			"/v1/locations/"+g,
			"/v1/permits/search?geo_id="+g+"&sort=valuation_desc",
			"/v1/permits/search?geo_id="+g+"&q=permit",
			"/v1/permits/stats/monthly?geo_id="+g,
			"/v1/permits/export?geo_id="+g,
			"/v1/signals/geo/location/"+g,
			"/v1/signals/permit/leads?geo_id="+g+"&include_stale=true",
			"/v1/signals/permit/leads?geo_id="+g+"&group_by=city",
			"/v1/signals/permit/stats?geo_id="+g+"&include_stale=true",
		)
	}
	var own []string
	for _, id := range geos {
		if id != "" {
			seg, q := url.PathEscape(id), url.QueryEscape(id)
			own = append(own, "/v1/locations/"+seg, "/v1/signals/geo/location/"+seg,
				"/v1/permits/search?geo_id="+q, "/v1/permits/stats/monthly?geo_id="+q,
				"/v1/signals/permit/leads?geo_id="+q, "/v1/signals/permit/stats?geo_id="+q)
		}
	}
	for _, id := range props {
		if id != "" {
			own = append(own, "/v1/property/"+url.PathEscape(id)+"/permits")
		}
	}
	for i, p := range append(reads, own...) {
		r := h.Get(p)
		switch {
		case r.Status == http.StatusOK, r.Status == http.StatusNotFound:
		case r.Status == http.StatusUnprocessableEntity && i >= len(reads):
		default:
			t.Errorf("%s: status %d: %.300s", p, r.Status, r.Body)
		}
	}
	walkOnce(t, h, "/v1/permits/search?geo_id="+conformance.WA+"&limit=15", "permits", "permit_id")
	walkOnce(t, h, "/v1/signals/permit/leads?geo_id="+conformance.WA+"&include_stale=true&limit=20", "leads", "lead_id")
}

// walkOnce follows path's next_cursor to the end and fails t when an
// item (by its idField) comes twice or a page is not 200.
func walkOnce(t *testing.T, h *apitest.Harness, path, list, idField string) {
	t.Helper()
	seen := map[string]bool{}
	next := ""
	for range 1000 {
		p := path
		if next != "" {
			p += "&cursor=" + url.QueryEscape(next)
		}
		r := h.Get(p)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: status %d: %.300s", p, r.Status, r.Body)
		}
		var page map[string]json.RawMessage
		r.JSON(t, &page)
		var items []map[string]any
		if err := json.Unmarshal(page[list], &items); err != nil {
			t.Fatalf("%s: %q: %v", p, list, err)
		}
		for _, it := range items {
			id, _ := it[idField].(string)
			if seen[id] {
				t.Fatalf("%s: %s %q on two pages", p, idField, id)
			}
			seen[id] = true
		}
		var cursor *string
		if err := json.Unmarshal(page["next_cursor"], &cursor); err != nil || cursor == nil {
			return
		}
		next = *cursor
	}
	t.Fatalf("%s: more than 1000 pages", path)
}
