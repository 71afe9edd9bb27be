package indexer

import (
	"math"
	"net/url"
	"strconv"
	"testing"

	"github.com/permitd/permitd/events"
)

// mapsURLAsBefore is mapsURL as it was written before it was built in
// one buffer: concatenations of strconv.FormatFloat and url.QueryEscape.
func mapsURLAsBefore(d *events.Lead) string {
	const base = "https://www.google.com/maps/search/?api=1&query="
	if d.Lat != nil && d.Lon != nil {
		return base + strconv.FormatFloat(*d.Lat, 'f', 6, 64) + "%2C" + strconv.FormatFloat(*d.Lon, 'f', 6, 64)
	}
	addr := d.Address.FullAddress
	if addr == "" {
		return ""
	}
	q := addr
	if d.Address.City != "" {
		q += ", " + d.Address.City
	}
	if d.Address.State != "" {
		q += ", " + d.Address.State
	}
	if d.Address.Zipcode != "" {
		q += " " + d.Address.Zipcode
	}
	return base + url.QueryEscape(q)
}

// TestMapsURL: a lead's map link, the same as url.QueryEscape and
// strconv.FormatFloat give, in one allocation.
func TestMapsURL(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	long := "1234 North Very Long Avenue Name That Goes On And On, Building 7, Suite 1200 & Annex (rear) #5/6 é"
	for _, d := range []events.Lead{
		{Lat: f(47.68), Lon: f(-122.38)},
		{Lat: f(-0.0000004), Lon: f(179.9999999)},
		{Lat: f(math.MaxFloat64), Lon: f(-math.SmallestNonzeroFloat64)},
		{Lat: f(47.68), Address: events.LeadAddress{FullAddress: "1 Main St"}}, // no lon: the address
		{Address: events.LeadAddress{FullAddress: "1234 NW 65TH ST", City: "SEATTLE", State: "WA", Zipcode: "98117"}},
		{Address: events.LeadAddress{FullAddress: "1 Main St", State: "TX"}},
		{Address: events.LeadAddress{FullAddress: "1 Main St", Zipcode: "73301"}},
		{Address: events.LeadAddress{FullAddress: "Ünïcode & co. ~x_y-z+1%2F", City: "San José"}},
		{Address: events.LeadAddress{FullAddress: long + long + long, City: long, State: "WA", Zipcode: "98117-1234"}},
		{Address: events.LeadAddress{City: "Austin"}}, // no address: no link
		{},
	} {
		if got, want := mapsURL(&d), mapsURLAsBefore(&d); got != want {
			t.Errorf("mapsURL(%+v) = %q, want %q", d, got, want)
		}
	}
	for _, d := range []events.Lead{
		{Lat: f(47.68), Lon: f(-122.38)},
		{Address: events.LeadAddress{FullAddress: "1234 NW 65TH ST", City: "SEATTLE", State: "WA", Zipcode: "98117"}},
	} {
		if n := testing.AllocsPerRun(100, func() { _ = mapsURL(&d) }); n != 1 {
			t.Errorf("mapsURL(%+v) took %v allocations, want 1", d, n)
		}
	}
}

// FuzzAppendQueryEscape: appendQueryEscape escapes as url.QueryEscape.
func FuzzAppendQueryEscape(f *testing.F) {
	for _, s := range []string{"", "a b", "1234 NW 65TH ST, SEATTLE", "é~-_.+%/?&=#", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendQueryEscape([]byte("x"), s)), "x"+url.QueryEscape(s); got != want {
			t.Fatalf("appendQueryEscape(%q) = %q, want %q", s, got, want)
		}
	})
}
