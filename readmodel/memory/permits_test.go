package memory_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

var (
	zipA  = events.GeoID("zip", "98101")
	zipB  = events.GeoID("zip", "98104")
	city  = events.GeoID("city", "1840021117")
	state = events.GeoID("state", "WA")
)

func newStore(t testing.TB) *memory.Store {
	t.Helper()
	s := memory.New(memory.Params{})
	var b readmodel.Batch
	for _, l := range []readmodel.Location{
		{GeoID: zipA, GeoType: readmodel.GeoZip, Name: "98101", Version: 1},
		{GeoID: zipB, GeoType: readmodel.GeoZip, Name: "98104", Version: 1},
		{GeoID: city, GeoType: readmodel.GeoCity, Name: "Seattle", Version: 1},
		{GeoID: state, GeoType: readmodel.GeoState, Name: "Washington", Version: 1},
	} {
		b.Locations = append(b.Locations, l)
	}
	apply(t, s, b)
	return s
}

func apply(t testing.TB, s *memory.Store, b readmodel.Batch) readmodel.ApplyResult {
	t.Helper()
	res, err := s.Apply(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func permit(id, issue, zip string, version int64) readmodel.Permit {
	v := 1000.0
	p := readmodel.Permit{
		PermitID: "test:" + id, PermitNumber: id, PermitType: "Building", WorkType: "New", Status: "Issued",
		IssueDate: issue, RawDescription: "permit " + id, Source: "test", Valuation: &v,
		Address:  readmodel.Address{FullAddress: id + " MAIN ST", City: "Seattle", State: "WA", Zipcode: "98101"},
		Version:  version,
		GeoLinks: []readmodel.GeoLink{{GeoID: zip, GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "source_zip"}, {GeoID: city, GeoType: readmodel.GeoCity, Confidence: 0.9, Method: "zip_city"}, {GeoID: state, GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}},
	}
	return p
}

// dateCmp is the date order's meaning: issue date (null last in both
// directions), then permit_id ascending.
func dateCmp(a, b readmodel.Permit, desc bool) int {
	if (a.IssueDate == "") != (b.IssueDate == "") {
		if a.IssueDate == "" {
			return 1
		}
		return -1
	}
	if c := strings.Compare(a.IssueDate, b.IssueDate); c != 0 {
		if desc {
			return -c
		}
		return c
	}
	return strings.Compare(a.PermitID, b.PermitID)
}

// valuationCmp is the valuation order's meaning: descending, unknown
// last, permit_id ascending among equals.
func valuationCmp(a, b readmodel.Permit) int {
	if (a.Valuation == nil) != (b.Valuation == nil) {
		if a.Valuation == nil {
			return 1
		}
		return -1
	}
	if a.Valuation != nil && *a.Valuation != *b.Valuation {
		return cmp.Compare(*b.Valuation, *a.Valuation)
	}
	return strings.Compare(a.PermitID, b.PermitID)
}

// expected returns the ids of ps in the contract's order.
func expected(ps []readmodel.Permit, desc bool, from, to string) []string {
	var keep []readmodel.Permit
	for _, p := range ps {
		if (from != "" || to != "") && p.IssueDate == "" {
			continue
		}
		if from != "" && p.IssueDate < from || to != "" && p.IssueDate > to {
			continue
		}
		keep = append(keep, p)
	}
	slices.SortFunc(keep, func(a, b readmodel.Permit) int { return dateCmp(a, b, desc) })
	out := make([]string, len(keep))
	for i, p := range keep {
		out[i] = p.PermitID
	}
	return out
}

func walk(t testing.TB, s *memory.Store, q readmodel.PermitQuery, between func(page int)) []string {
	t.Helper()
	var ids []string
	for page := 0; ; page++ {
		res, err := s.SearchPermits(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Permits) > q.Limit {
			t.Fatalf("page of %d > limit %d", len(res.Permits), q.Limit)
		}
		for _, h := range res.Permits {
			if h.Match.GeoID != q.Geo.ID() {
				t.Fatalf("match %+v for %s", h.Match, q.Geo.ID())
			}
			ids = append(ids, h.Permit.PermitID)
		}
		if res.Next == nil {
			return ids
		}
		if page > 10000 {
			t.Fatal("walk does not end")
		}
		q.After = res.Next
		if between != nil {
			between(page)
		}
	}
}

func randomPermits(r *rand.Rand, n int, zip string) []readmodel.Permit {
	var ps []readmodel.Permit
	for i := range n {
		issue := ""
		if r.IntN(10) > 0 {
			// few distinct days, so ties by permit_id are common
			issue = fmt.Sprintf("2024-%02d-%02d", 1+r.IntN(3), 1+r.IntN(5))
		}
		ps = append(ps, permit(fmt.Sprintf("%04d", r.IntN(10000)*10+i%10), issue, zip, 1))
	}
	// ids must be unique
	seen := map[string]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p.PermitID] {
			seen[p.PermitID] = true
			out = append(out, p)
		}
	}
	return out
}

func TestPermitPagingWalksEveryPermitOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ps := randomPermits(r, 300, zipA)
	s := newStore(t)
	apply(t, s, readmodel.Batch{Permits: ps})
	cases := []struct {
		name     string
		desc     bool
		from, to string
	}{
		{"desc", true, "", ""},
		{"asc", false, "", ""},
		{"desc bounded", true, "2024-01-03", "2024-02-04"},
		{"asc bounded", false, "2024-01-03", "2024-02-04"},
		{"asc from only", false, "2024-02-02", ""},
		{"desc to only", true, "", "2024-02-02"},
		{"one day", false, "2024-03-01", "2024-03-01"},
		{"empty range", true, "2025-01-01", "2025-12-31"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{1, 7, 100} {
				got := walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zipA), Desc: tc.desc, FromDate: tc.from, ToDate: tc.to, Limit: limit}, nil)
				want := expected(ps, tc.desc, tc.from, tc.to)
				if !slices.Equal(got, want) {
					t.Fatalf("limit %d: got %d ids %v\nwant %d ids %v", limit, len(got), head(got), len(want), head(want))
				}
			}
		})
	}
	loc, err := s.Location(context.Background(), readmodel.ParseGeoRef(zipA))
	if err != nil {
		t.Fatal(err)
	}
	if loc.PermitCount != int64(len(ps)) || loc.LatestPermitDate != expectedLatest(ps) {
		t.Fatalf("location count %d latest %q, want %d %q", loc.PermitCount, loc.LatestPermitDate, len(ps), expectedLatest(ps))
	}
}

func head(ids []string) []string { return ids[:min(len(ids), 12)] }

func expectedLatest(ps []readmodel.Permit) string {
	l := ""
	for _, p := range ps {
		l = max(l, p.IssueDate)
	}
	return l
}

func TestPermitPagingWhileWriting(t *testing.T) {
	for _, desc := range []bool{true, false} {
		t.Run(fmt.Sprintf("desc=%v", desc), func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			ps := randomPermits(r, 200, zipA)
			s := newStore(t)
			apply(t, s, readmodel.Batch{Permits: ps})
			var added []readmodel.Permit
			got := walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zipA), Desc: desc, Limit: 7}, func(page int) {
				// new permits at every position of the order, some in other ZIPs
				for i := range 3 {
					p := permit(fmt.Sprintf("new-%d-%d", page, i), fmt.Sprintf("2024-%02d-%02d", 1+r.IntN(3), 1+r.IntN(5)), zipA, 1)
					if i == 2 {
						p.IssueDate = ""
					}
					added = append(added, p)
				}
				apply(t, s, readmodel.Batch{Permits: added[len(added)-3:]})
			})
			seen := map[string]int{}
			for _, id := range got {
				seen[id]++
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("%s seen %d times", id, n)
				}
			}
			for _, p := range ps {
				if seen[p.PermitID] != 1 {
					t.Errorf("%s present for the whole walk but seen %d times", p.PermitID, seen[p.PermitID])
				}
			}
			// the walk is in order even with the additions
			all := append(append([]readmodel.Permit{}, ps...), added...)
			byID := map[string]readmodel.Permit{}
			for _, p := range all {
				byID[p.PermitID] = p
			}
			var walked []readmodel.Permit
			for _, id := range got {
				walked = append(walked, byID[id])
			}
			if !slices.Equal(got, expected(walked, desc, "", "")) {
				t.Fatalf("walk out of order")
			}
		})
	}
}

func TestPermitIndexesFollowChangesDeletesAndReplays(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	p1 := permit("1", "2024-05-01", zipA, 1)
	p2 := permit("2", "2024-06-01", zipA, 1)
	p3 := permit("3", "", zipA, 1)
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{p1, p2, p3}})
	check := func(name string, geo string, count int64, latest string) {
		t.Helper()
		l, err := s.Location(ctx, readmodel.ParseGeoRef(geo))
		if err != nil {
			t.Fatal(err)
		}
		n := len(walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: true, Limit: 7}, nil))
		if l.PermitCount != count || l.LatestPermitDate != latest || int64(n) != count {
			t.Fatalf("%s: %s count %d (paged %d) latest %q, want %d %q", name, geo, l.PermitCount, n, l.LatestPermitDate, count, latest)
		}
	}
	check("initial", zipA, 3, "2024-06-01")
	check("initial", zipB, 0, "")
	digest, _ := s.Digest(ctx)

	// replaying the same or older versions changes nothing
	res := apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{p1, p2, p3}})
	if res.Applied != 0 || res.Stale != 3 {
		t.Fatalf("replay %+v", res)
	}
	old := permit("2", "2030-01-01", zipB, 0)
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{old}})
	if d, _ := s.Digest(ctx); d != digest {
		t.Fatal("replay changed the digest")
	}
	check("after replay", zipA, 3, "2024-06-01")

	// a newer version moves permit 2 to another ZIP with another date
	moved := permit("2", "2024-07-01", zipB, 2)
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{moved}})
	check("moved", zipA, 2, "2024-05-01")
	check("moved", zipB, 1, "2024-07-01")
	check("moved", city, 3, "2024-07-01")

	// the undated one gets a date
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{permit("3", "2024-08-01", zipA, 2)}})
	check("dated", zipA, 2, "2024-08-01")

	// deletes, and an upsert older than the tombstone stays deleted
	apply(t, s, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "test:3", Version: 3}}})
	check("deleted", zipA, 1, "2024-05-01")
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{permit("3", "2024-08-01", zipA, 2)}})
	check("resurrection refused", zipA, 1, "2024-05-01")
	apply(t, s, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "test:1", Version: 5}}})
	check("all deleted", zipA, 0, "")
	check("all deleted", state, 1, "2024-07-01")
}

func TestPermitRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	lat, lon := 47.6, -122.3
	p := permit("77", "2024-02-29", zipA, 4)
	p.ApplicationDate, p.CompletionDate, p.Contractor = "2023-12-31", "1969-07-20", "ACME"
	p.Lat, p.Lon, p.Valuation = &lat, &lon, nil
	p.PropertyID = events.PropertyID("addr:77 MAIN ST|SEATTLE|WA")
	p.GeoLinks = append([]readmodel.GeoLink{{GeoID: p.PropertyID, GeoType: readmodel.GeoProperty, Confidence: 1, Method: "address"}}, p.GeoLinks...)
	p.GeoLinks[1].Confidence = 0.612345
	odd := permit("78", "", zipA, 1)
	odd.PermitNumber = "other-number"
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{p, odd}, Properties: []readmodel.Property{{
		PropertyID: p.PropertyID, CanonicalAddress: "77 MAIN ST, SEATTLE, WA 98101", NormalizedAddress: "77 MAIN ST", City: "SEATTLE", State: "WA", Version: 1,
	}}})
	page, err := s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zipA), Desc: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Permits) != 2 {
		t.Fatalf("page %+v", page)
	}
	for i, want := range []readmodel.Permit{p, odd} {
		got := page.Permits[i].Permit
		if fmt.Sprintf("%+v", deref(got)) != fmt.Sprintf("%+v", deref(want)) {
			t.Errorf("round trip\n got %+v\nwant %+v", deref(got), deref(want))
		}
	}
	if m := page.Permits[0].Match; m.GeoID != zipA || m.Confidence != 0.612345 || m.Method != "source_zip" {
		t.Errorf("match %+v", m)
	}
	// the property scope
	pp, err := s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(p.PropertyID), Desc: true, Limit: 10})
	if err != nil || len(pp.Permits) != 1 || pp.Permits[0].Match.GeoType != readmodel.GeoProperty {
		t.Fatalf("property scope %+v %v", pp, err)
	}
	for _, id := range []string{"gunknown", events.PropertyID("nothing")} {
		if _, err := s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(id), Limit: 1}); err != readmodel.ErrNotFound {
			t.Errorf("%s: %v", id, err)
		}
	}
}

type flat struct {
	readmodel.Permit
	Val, Lat, Lon string
}

func deref(p readmodel.Permit) flat {
	f := func(x *float64) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprint(*x)
	}
	out := flat{Permit: p, Val: f(p.Valuation), Lat: f(p.Lat), Lon: f(p.Lon)}
	out.Valuation, out.Permit.Lat, out.Permit.Lon = nil, nil, nil
	return out
}

// PermitCount and LatestPermitDate come from the permit index: a location
// document that carries its own (stale) figures does not leak them.
func TestLocationPermitFiguresComeFromTheIndex(t *testing.T) {
	s := newStore(t)
	apply(t, s, readmodel.Batch{Locations: []readmodel.Location{
		{GeoID: "g_empty", GeoType: readmodel.GeoCity, Name: "Nowhere", PermitCount: 7, LatestPermitDate: "2020-01-01", Version: 1},
	}})
	l, err := s.Location(context.Background(), readmodel.ParseGeoRef("g_empty"))
	if err != nil {
		t.Fatal(err)
	}
	if l.PermitCount != 0 || l.LatestPermitDate != "" {
		t.Fatalf("location %+v", l)
	}
}

// TestTextsAreFreed: descriptions and permit numbers are shared while
// permits hold them and freed when none does (changes, deletes, stale
// writes), so a long-running store does not keep every text it saw.
func TestTextsAreFreed(t *testing.T) {
	s := newStore(t)
	descs := func() map[string]string {
		page, err := s.SearchPermits(context.Background(), readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(zipA), Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, h := range page.Permits {
			out[h.Permit.PermitID] = h.Permit.RawDescription + "|" + h.Permit.PermitNumber
		}
		return out
	}
	with := func(p readmodel.Permit, desc string) readmodel.Permit {
		p.RawDescription = desc
		return p
	}
	p1, p2, p3 := permit("1", "2025-01-01", zipA, 1), permit("2", "2025-01-02", zipA, 1), permit("3", "2025-01-03", zipA, 1)
	odd := permit("4", "2025-01-04", zipA, 1)
	odd.PermitID = "test:other-4" // a number that is not the id's suffix is a text too
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{p1, p2, with(p3, "permit 1"), odd}})
	if got := s.LiveTexts(); got != 4 { // "permit 1" (twice), "permit 2", "permit 4", number "4"
		t.Fatalf("live texts %d, want 4", got)
	}
	p1.Version = 2
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{with(p1, "permit 1, revised")}})
	p2.Version = 0
	if res := apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{with(p2, "stale")}}); res.Stale != 1 {
		t.Fatalf("stale write took: %+v", res)
	}
	if got := s.LiveTexts(); got != 5 { // + "permit 1, revised"; "permit 1" still held by 3; "stale" freed
		t.Fatalf("live texts %d, want 5", got)
	}
	want := map[string]string{
		"test:1": "permit 1, revised|1", "test:2": "permit 2|2", "test:3": "permit 1|3", "test:other-4": "permit 4|4",
	}
	if got := descs(); !maps.Equal(got, want) {
		t.Fatalf("permits %v, want %v", got, want)
	}
	apply(t, s, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "test:3", Version: 2}}})
	if got := s.LiveTexts(); got != 4 { // "permit 1" freed
		t.Fatalf("live texts %d, want 4", got)
	}
	apply(t, s, readmodel.Batch{Permits: []readmodel.Permit{with(permit("5", "2025-01-05", zipA, 1), "permit 1")}})
	delete(want, "test:3")
	want["test:5"] = "permit 1|5"
	if got := descs(); !maps.Equal(got, want) {
		t.Fatalf("a reused handle: permits %v, want %v", got, want)
	}
	var dels []readmodel.Delete
	for id := range want {
		dels = append(dels, readmodel.Delete{Kind: readmodel.KindPermit, ID: id, Version: 9})
	}
	apply(t, s, readmodel.Batch{Deletes: dels})
	if got := s.LiveTexts(); got != 0 {
		t.Fatalf("live texts %d after deleting every permit, want 0", got)
	}
}
