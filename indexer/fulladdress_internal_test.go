package indexer

import (
	"testing"

	"github.com/permitd/permitd/events"
)

// TestFullAddress: a permit's full address, written in one allocation.
func TestFullAddress(t *testing.T) {
	for _, c := range []struct {
		in   events.PermitAddress
		want string
	}{
		{events.PermitAddress{Line: " 1234 NW 65TH ST ", City: "SEATTLE", State: "wa", Zipcode: "98117"}, "1234 NW 65TH ST, SEATTLE, WA 98117"},
		{events.PermitAddress{Line: "1 Main St", State: "TX"}, "1 Main St, TX"},
		{events.PermitAddress{Line: "1 Main St", Zipcode: "73301"}, "1 Main St 73301"},
		{events.PermitAddress{City: "Austin"}, ", Austin"},
		{events.PermitAddress{}, ""},
	} {
		if got := fullAddress(c.in); got != c.want {
			t.Errorf("fullAddress(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
	a := events.PermitAddress{Line: "1234 NW 65TH ST", City: "SEATTLE", State: "WA", Zipcode: "98117"}
	if n := testing.AllocsPerRun(100, func() { _ = fullAddress(a) }); n != 1 {
		t.Fatalf("fullAddress took %v allocations, want 1", n)
	}
}
