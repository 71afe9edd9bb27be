package indexer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

type fakeLookup struct {
	locs map[string]readmodel.Location
	err  error
}

func (f fakeLookup) Location(_ context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	if f.err != nil {
		return readmodel.Location{}, f.err
	}
	l, ok := f.locs[geo.ID()]
	if !ok {
		return readmodel.Location{}, readmodel.ErrNotFound
	}
	return l, nil
}

var (
	zip98101 = events.GeoID("zip", "98101")
	seaCity  = events.GeoID("city", "1840021117")
	seaJur   = events.GeoID("jurisdiction", "city:1840021117")
	king     = events.GeoID("county", "53033")
	waState  = events.GeoID("state", "WA")
	propID   = events.PropertyID("addr:600 UNIVERSITY ST|SEATTLE|WA")
)

func lookup98101(counties ...string) fakeLookup {
	return fakeLookup{locs: map[string]readmodel.Location{
		zip98101: {
			GeoID: zip98101, GeoType: readmodel.GeoZip, City: "Seattle", County: "King County",
			Jurisdiction: "City of Seattle", CityGeoID: seaCity, JurisdictionGeoID: seaJur,
			CountyGeoID: king, CountyGeoIDs: append([]string{king}, counties...), StateGeoID: waState,
		},
	}}
}

func permitEnv(t testing.TB, mut func(*events.Permit)) events.Envelope {
	t.Helper()
	v := 250000.0
	lat, lon := 47.61, -122.33
	d := events.Permit{
		PermitNumber: "6268348", PermitType: "Commercial", WorkType: "New", Status: "Issued",
		IssueDate: "2014-03-02", Description: "Build a tower", Valuation: &v,
		Address: events.PermitAddress{Line: "600 University St", City: "Seattle", State: "WA", Zipcode: "98101", ZipSource: "source"},
		Lat:     &lat, Lon: &lon, PropertyID: propID, Source: "seattle_sdci_commercial",
	}
	if mut != nil {
		mut(&d)
	}
	env, err := events.New(events.PermitUpserted, events.PermitDocID(d.Source, d.PermitNumber), 3,
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", d)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func linkMap(links []readmodel.GeoLink) map[string]readmodel.GeoLink {
	m := map[string]readmodel.GeoLink{}
	for _, l := range links {
		m[l.GeoID] = l
	}
	return m
}

func TestProjectPermitGeoMatching(t *testing.T) {
	type want struct {
		geoType readmodel.GeoType
		conf    float64
		method  string
	}
	cases := []struct {
		name   string
		look   fakeLookup
		mut    func(*events.Permit)
		links  map[string]want
		county string
	}{
		{
			name: "source ZIP links every level",
			look: lookup98101(),
			links: map[string]want{
				propID:   {readmodel.GeoProperty, 1, indexer.MethodAddress},
				zip98101: {readmodel.GeoZip, 1, indexer.MethodSourceZip},
				seaCity:  {readmodel.GeoCity, 1, indexer.MethodZipCity},
				seaJur:   {readmodel.GeoJurisdiction, 1, indexer.MethodZipJurisdiction},
				king:     {readmodel.GeoCounty, 1, indexer.MethodZipCounty},
				waState:  {readmodel.GeoState, 1, indexer.MethodSourceState},
			},
			county: "King County",
		},
		{
			name: "derived ZIP lowers every ZIP-derived link",
			look: lookup98101(),
			mut: func(p *events.Permit) {
				p.Address.City, p.Address.ZipSource, p.Address.ZipConfidence = "", "nearest_zip", 0.7
			},
			links: map[string]want{
				propID:   {readmodel.GeoProperty, 1, indexer.MethodAddress},
				zip98101: {readmodel.GeoZip, 0.7, indexer.MethodDerivedZip},
				seaCity:  {readmodel.GeoCity, 0.7, indexer.MethodZipCity},
				seaJur:   {readmodel.GeoJurisdiction, 0.7, indexer.MethodZipJurisdiction},
				king:     {readmodel.GeoCounty, 0.7, indexer.MethodZipCounty},
				waState:  {readmodel.GeoState, 1, indexer.MethodSourceState},
			},
			county: "King County",
		},
		{
			name: "derived ZIP without a confidence gets the default",
			look: lookup98101(),
			mut:  func(p *events.Permit) { p.Address.ZipSource, p.PropertyID = "nearest_zip", "" },
			links: map[string]want{
				zip98101: {readmodel.GeoZip, 0.6, indexer.MethodDerivedZip},
				seaCity:  {readmodel.GeoCity, 0.6, indexer.MethodZipCity},
				seaJur:   {readmodel.GeoJurisdiction, 0.6, indexer.MethodZipJurisdiction},
				king:     {readmodel.GeoCounty, 0.6, indexer.MethodZipCounty},
				waState:  {readmodel.GeoState, 1, indexer.MethodSourceState},
			},
			county: "King County",
		},
		{
			name: "another city name and a multi-county ZIP lower those links",
			look: lookup98101(events.GeoID("county", "53061")),
			mut:  func(p *events.Permit) { p.Address.City = "Tukwila" },
			links: map[string]want{
				propID:   {readmodel.GeoProperty, 1, indexer.MethodAddress},
				zip98101: {readmodel.GeoZip, 1, indexer.MethodSourceZip},
				seaCity:  {readmodel.GeoCity, 0.85, indexer.MethodZipCity},
				seaJur:   {readmodel.GeoJurisdiction, 0.85, indexer.MethodZipJurisdiction},
				king:     {readmodel.GeoCounty, 0.9, indexer.MethodZipCounty},
				waState:  {readmodel.GeoState, 1, indexer.MethodSourceState},
			},
			county: "King County",
		},
		{
			name: "ZIP without a location links what it can",
			look: fakeLookup{},
			links: map[string]want{
				propID:  {readmodel.GeoProperty, 1, indexer.MethodAddress},
				waState: {readmodel.GeoState, 1, indexer.MethodSourceState},
			},
		},
		{
			name: "no ZIP at all",
			look: lookup98101(),
			mut:  func(p *events.Permit) { p.Address.Zipcode, p.Address.ZipSource = "", "" },
			links: map[string]want{
				propID:  {readmodel.GeoProperty, 1, indexer.MethodAddress},
				waState: {readmodel.GeoState, 1, indexer.MethodSourceState},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := permitEnv(t, tc.mut)
			b, err := indexer.Project(context.Background(), env, tc.look)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Permits) != 1 {
				t.Fatalf("batch %+v", b)
			}
			p := b.Permits[0]
			got := linkMap(p.GeoLinks)
			if len(got) != len(tc.links) || len(p.GeoLinks) != len(tc.links) {
				t.Fatalf("links %+v, want %d", p.GeoLinks, len(tc.links))
			}
			for id, w := range tc.links {
				l, ok := got[id]
				if !ok || l.GeoType != w.geoType || l.Confidence != w.conf || l.Method != w.method {
					t.Errorf("link %s = %+v, want %+v", id, l, w)
				}
			}
			if p.Address.County != tc.county || p.PermitID != env.EntityID || p.Version != 3 {
				t.Errorf("permit %+v", p)
			}
		})
	}
}

func TestProjectPermitFillsTheAddressFromTheZip(t *testing.T) {
	env := permitEnv(t, func(p *events.Permit) { p.Address.City = "" })
	p, err := indexer.ProjectPermit(context.Background(), env, lookup98101())
	if err != nil {
		t.Fatal(err)
	}
	want := readmodel.Address{FullAddress: "600 University St, WA 98101", City: "Seattle", State: "WA", Zipcode: "98101", County: "King County", Jurisdiction: "City of Seattle"}
	if p.Address != want {
		t.Fatalf("address %+v, want %+v", p.Address, want)
	}
}

// permitRejects are permits the projection refuses, each by one rule.
func permitRejects() map[string]func(*events.Permit) {
	bad := -1.0
	return map[string]func(*events.Permit){
		"no number":           func(p *events.Permit) { p.PermitNumber = " " },
		"no source":           func(p *events.Permit) { p.Source = "" },
		"no type":             func(p *events.Permit) { p.PermitType = "" },
		"bad state":           func(p *events.Permit) { p.Address.State = "W1" },
		"bad zip":             func(p *events.Permit) { p.Address.Zipcode = "9810" },
		"bad issue date":      func(p *events.Permit) { p.IssueDate = "2024-13-40" },
		"bad completion date": func(p *events.Permit) { p.CompletionDate = "03/02/2014" },
		"zip confidence 2":    func(p *events.Permit) { p.Address.ZipConfidence = 2 },
		"bad property id":     func(p *events.Permit) { p.PropertyID = "prop_XYZ" },
		"negative valuation":  func(p *events.Permit) { p.Valuation = &bad },
		"lat without lon":     func(p *events.Permit) { p.Lon = nil },
		"lat out of range":    func(p *events.Permit) { v := 91.0; p.Lat = &v },
	}
}

// rejectedPermit is the permit event of case name of permitRejects. The
// payload is re-encoded with the mutation, but the entity id kept, so
// that the id check does not mask the one under test.
func rejectedPermit(t testing.TB, name string, mut func(*events.Permit)) events.Envelope {
	env := permitEnv(t, nil)
	mutated := permitEnv(t, mut)
	env.Data = mutated.Data
	if name == "no number" || name == "no source" {
		env = mutated
	}
	return env
}

func TestProjectPermitRejects(t *testing.T) {
	for name, mut := range permitRejects() {
		t.Run(name, func(t *testing.T) {
			_, err := indexer.Project(context.Background(), rejectedPermit(t, name, mut), lookup98101())
			if !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
	t.Run("entity id not derived from source and number", func(t *testing.T) {
		env := permitEnv(t, nil)
		env.EntityID = "other:1"
		if _, err := indexer.Project(context.Background(), env, lookup98101()); !errors.Is(err, events.ErrInvalid) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("unknown field", func(t *testing.T) {
		env := permitEnv(t, nil)
		env.Data = []byte(`{"permit_number":"1","permit_type":"x","source":"s","address":{"line":"1 A ST","state":"WA"},"lat":null,"lon":null,"valuation":null,"colour":"red"}`)
		env.EntityID = "s:1"
		if _, err := indexer.Project(context.Background(), env, lookup98101()); !errors.Is(err, events.ErrInvalid) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestProjectPermitLookupFailureIsTransient(t *testing.T) {
	_, err := indexer.Project(context.Background(), permitEnv(t, nil), fakeLookup{err: readmodel.ErrUnavailable})
	if err == nil || errors.Is(err, events.ErrInvalid) || !errors.Is(err, readmodel.ErrUnavailable) {
		t.Fatalf("err %v, want a transient error wrapping ErrUnavailable", err)
	}
}

func propertyEnv(t testing.TB, mut func(*events.Property)) events.Envelope {
	t.Helper()
	lat, lon := 47.61, -122.33
	d := events.Property{
		CanonicalAddress: "600 UNIVERSITY ST, SEATTLE, WA 98101", NormalizedAddress: "600 UNIVERSITY ST",
		City: "SEATTLE", State: "WA", Zipcode: "98101", Lat: &lat, Lon: &lon,
	}
	if mut != nil {
		mut(&d)
	}
	env, err := events.New(events.PropertyUpserted, propID, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", d)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestProjectProperty(t *testing.T) {
	b, err := indexer.Project(context.Background(), propertyEnv(t, nil), lookup98101())
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Properties) != 1 {
		t.Fatalf("batch %+v", b)
	}
	p := b.Properties[0]
	if p.PropertyID != propID || p.NormalizedAddress != "600 UNIVERSITY ST" || p.City != "SEATTLE" || len(p.GeoLinks) != 5 {
		t.Fatalf("property %+v", p)
	}
	for name, mut := range map[string]func(*events.Property){
		"no canonical address":  func(p *events.Property) { p.CanonicalAddress = "" },
		"no normalized address": func(p *events.Property) { p.NormalizedAddress = "" },
		"bad state":             func(p *events.Property) { p.State = "Washington" },
		"lon without lat":       func(p *events.Property) { p.Lat = nil },
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := indexer.Project(context.Background(), propertyEnv(t, mut), lookup98101()); !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("err %v", err)
			}
		})
	}
	t.Run("entity id not a property id", func(t *testing.T) {
		env := propertyEnv(t, nil)
		env.EntityID = "prop_123"
		if _, err := indexer.Project(context.Background(), env, lookup98101()); !errors.Is(err, events.ErrInvalid) {
			t.Fatalf("err %v", err)
		}
	})
}
