package memory_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// filterPermits are permits with varied types, work types, statuses,
// contractors and valuations (some unknown, some with cents, some in
// billions), over two ZIPs.
func filterPermits(r *rand.Rand, n int) []readmodel.Permit {
	types := []string{"Building", "Demolition", "BUILDING", "Electrical", ""}
	works := []string{"New", "Alteration", "addition", ""}
	stats := []string{"Issued", "Completed", "permit closed", "Expired", ""}
	contractors := []string{"ACME Roofing, Inc.", "acme roofing inc", "Bob's Builders", "", "Zeta-Co"}
	var ps []readmodel.Permit
	for i := range n {
		issue := ""
		if r.IntN(8) > 0 {
			issue = fmt.Sprintf("2024-%02d-%02d", 1+r.IntN(4), 1+r.IntN(6))
		}
		zip := zipA
		if r.IntN(3) == 0 {
			zip = zipB
		}
		p := permit(fmt.Sprintf("%05d", i), issue, zip, 1)
		p.PermitType, p.WorkType, p.Status = types[r.IntN(len(types))], works[r.IntN(len(works))], stats[r.IntN(len(stats))]
		p.Contractor = contractors[r.IntN(len(contractors))]
		p.RawDescription = descriptions[r.IntN(len(descriptions))]
		if r.IntN(6) > 0 {
			lat, lon := 47.60+r.Float64()*0.05, -122.35+r.Float64()*0.05
			p.Lat, p.Lon = &lat, &lon
		}
		if r.IntN(5) == 0 {
			p.Valuation = nil
		} else {
			v := float64(r.IntN(20)) * 500
			switch { // some valuations outside a valuation order's blocks (permit_sort.go)
			case i%11 == 0:
				v += 0.5 // cents, between the whole ones
			case i%37 == 0:
				v += 3e9 // beyond the blocks' range
			}
			p.Valuation = &v
		}
		ps = append(ps, p)
	}
	return ps
}

var descriptions = []string{
	"Remodel the kitchen and bathrooms", "Kitchen remodeling, new cabinets", "Re-roofing of the garage",
	"New single family residence", "Demolish existing garage", "Electrical service upgrade to 200A",
	"Install rooftop solar panels", "Owner's deck addition", "",
}

var queries = []string{"kitchen", "kitch", "remodeling kitchen", "roof", "garage demol", "the", "solar panel",
	"owner deck", "new", "cabinets", "200a", "zzz", "ki", "permit 0001", "00012", "permit"}

func randomPermitFilter(r *rand.Rand) readmodel.PermitFilter {
	pick := func(vs ...string) []string {
		var out []string
		for _, v := range vs {
			if r.IntN(3) == 0 {
				out = append(out, v)
			}
		}
		return out
	}
	f := readmodel.PermitFilter{
		PermitTypes: pick("building", "demolition", "electrical"),
		WorkTypes:   pick("new", "alteration", "addition"),
		Statuses:    pick("issued", "completed", "permit closed", "expired"),
	}
	if r.IntN(3) == 0 {
		v := float64(r.IntN(10)) * 500
		f.MinValuation = &v
	}
	if r.IntN(3) == 0 {
		v := float64(3000 + r.IntN(10)*500)
		f.MaxValuation = &v
	}
	if r.IntN(3) == 0 {
		f.Text = queries[r.IntN(len(queries))]
	}
	if r.IntN(3) == 0 {
		f.Near, f.RadiusM = &readmodel.GeoPoint{Lat: 47.6 + r.Float64()*0.05, Lon: -122.35 + r.Float64()*0.05}, float64(200+r.IntN(3000))
	}
	if r.IntN(4) == 0 {
		lat, lon := 47.6+r.Float64()*0.04, -122.35+r.Float64()*0.04
		f.BBox = &readmodel.BBox{MinLon: lon, MinLat: lat, MaxLon: lon + 0.02, MaxLat: lat + 0.015}
	}
	if r.IntN(4) == 0 {
		f.Contractor = []string{"acmeroofinginc", "bobsbuilders", "zetaco", "nobody"}[r.IntN(4)]
	}
	return f
}

// TestPermitFiltersMatchTheReference walks filtered pages in both orders,
// with and without a date window, and compares them with the reference
// meaning (PermitFilter.Match) over every permit, across changes. The
// geos keep postings from their first permit, from their 300th (the
// ZIPs and the city cross it while written; one ZIP never does), or
// never (their own sets read with the predicate). The text index groups
// a description's permits from its first, from its 40th (most of the
// descriptions cross it while written, and their groups empty and go
// while some are deleted), or never.
func TestPermitFiltersMatchTheReference(t *testing.T) {
	for _, min := range []int{0, 300, 1 << 30} {
		for _, group := range []int{1, 40, 1 << 30} {
			t.Run(fmt.Sprint("postings from ", min, ", groups from ", group), func(t *testing.T) {
				defer memory.SetPostingMin(min)()
				defer memory.SetGroupMin(group)()
				permitFiltersMatchTheReference(t)
			})
		}
	}
}

func permitFiltersMatchTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ps := filterPermits(r, 600)
	s := newStore(t)
	apply(t, s, readmodel.Batch{Permits: ps})
	// change some: new status and type, moved ZIP
	for i := 0; i < len(ps); i += 7 {
		p := ps[i]
		p.Version = 2
		p.Status, p.PermitType = "Expired", "Demolition"
		p.GeoLinks = slices.Clone(p.GeoLinks)
		p.GeoLinks[0].GeoID = zipB
		ps[i] = p
	}
	apply(t, s, readmodel.Batch{Permits: ps})
	// delete a tenth of them (out of postings and valuation orders)
	var dels []readmodel.Delete
	ps = slices.DeleteFunc(ps, func(p readmodel.Permit) bool {
		if p.PermitID[len(p.PermitID)-1] == '3' {
			dels = append(dels, readmodel.Delete{Kind: readmodel.KindPermit, ID: p.PermitID, Version: 9})
			return true
		}
		return false
	})
	apply(t, s, readmodel.Batch{Deletes: dels})
	byZip := map[string][]readmodel.Permit{"": ps}
	for _, p := range ps {
		byZip[p.GeoLinks[0].GeoID] = append(byZip[p.GeoLinks[0].GeoID], p)
		byZip[city] = append(byZip[city], p)
	}
	nearHits := 0
	defer func() {
		if nearHits < 20 {
			t.Errorf("only %d near queries found permits", nearHits)
		}
	}()
	for i := range 400 {
		f := randomPermitFilter(r)
		geo := []string{zipA, zipB, city}[i%3]
		if f.HasGeometry() && i%5 == 0 {
			geo = ""
		}
		from, to := "", ""
		if i%4 == 3 {
			from, to = "2024-02-01", "2024-03-31"
		}
		var keep []readmodel.Permit
		for _, p := range byZip[geo] {
			if f.Match(&p) {
				keep = append(keep, p)
			}
		}
		// valuation order: the same permits, valuation desc, unknown last
		var byValue []readmodel.Permit
		for _, p := range keep {
			if (from == "" || p.IssueDate != "" && p.IssueDate >= from) && (to == "" || p.IssueDate != "" && p.IssueDate <= to) {
				byValue = append(byValue, p)
			}
		}
		slices.SortFunc(byValue, valuationCmp)
		var wantValue []string
		for _, p := range byValue {
			wantValue = append(wantValue, p.PermitID)
		}
		gotValue := walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), FromDate: from, ToDate: to, Limit: 1 + i%9, Filter: f, Sort: readmodel.SortValuationDesc}, nil)
		if !slices.Equal(gotValue, wantValue) {
			t.Fatalf("valuation order, filter %+v geo %s: got %d %v, want %d %v", f, geo, len(gotValue), head(gotValue), len(wantValue), head(wantValue))
		}
		if f.Near != nil {
			var near []readmodel.Permit
			for _, p := range byValue {
				near = append(near, p)
			}
			dist := func(p readmodel.Permit) float64 {
				return readmodel.DistanceM(*f.Near, readmodel.GeoPoint{Lat: *p.Lat, Lon: *p.Lon})
			}
			slices.SortFunc(near, func(a, b readmodel.Permit) int {
				if da, db := dist(a), dist(b); da != db {
					if da < db {
						return -1
					}
					return 1
				}
				return strings.Compare(a.PermitID, b.PermitID)
			})
			var wantNear []string
			for _, p := range near {
				wantNear = append(wantNear, p.PermitID)
			}
			gotNear := walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), FromDate: from, ToDate: to, Limit: 1 + i%9, Filter: f, Sort: readmodel.SortDistance}, nil)
			if len(gotNear) > 0 {
				nearHits++
			}
			if !slices.Equal(gotNear, wantNear) {
				t.Fatalf("distance order, filter %+v geo %s: got %d %v, want %d %v", f, geo, len(gotNear), head(gotNear), len(wantNear), head(wantNear))
			}
		}
		for _, desc := range []bool{true, false} {
			want := expected(keep, desc, from, to)
			got := walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: desc, FromDate: from, ToDate: to, Limit: 1 + i%9, Filter: f}, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("filter %+v geo %s desc %v: got %d %v, want %d %v", f, geo, desc, len(got), head(got), len(want), head(want))
			}
		}
	}
}

func TestContractorKey(t *testing.T) {
	for in, want := range map[string]string{
		"ACME Roofing, Inc.": "acmeroofinginc", "acme  roofing inc": "acmeroofinginc", "Bob's Builders": "bobsbuilders",
		"Zeta-Co": "zetaco", "Éclair 2 LLC": "éclair2llc", "": "", "--": "",
	} {
		if got := readmodel.ContractorKey(in); got != want {
			t.Errorf("ContractorKey(%q) = %q, want %q", in, got, want)
		}
	}
}
