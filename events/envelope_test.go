package events

import (
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkDecode measures what the indexer does per Kafka message:
// Decode of the envelope, then DecodeData of its payload, on a typical
// permit event.
func BenchmarkDecode(b *testing.B) {
	v, u := 125000.0, 4
	lat, lon := 47.6062, -122.3321
	env, err := New(PermitUpserted, PermitDocID("seattle_sdci_multifamily", "6812345-CN"), 20251106,
		time.Date(2025, 11, 6, 0, 0, 0, 0, time.UTC), "seattle_sdci_multifamily", &Permit{
			PermitNumber: "6812345-CN", PermitType: "Building", WorkType: "New Construction",
			ActionType: "New", Status: "Issued", ApplicationDate: "2023-02-01", IssueDate: "2024-03-04",
			Description: "Construct four-unit townhouse building, occupy per plan", Valuation: &v,
			HousingUnits: &u, Address: PermitAddress{Line: "1234 NW 65TH ST", City: "SEATTLE", State: "WA", Zipcode: "98117"},
			Lat: &lat, Lon: &lon, Source: "seattle_sdci_multifamily",
		})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(env)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		var p Permit
		if err := DecodeData(got, &p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "messages/s")
}
