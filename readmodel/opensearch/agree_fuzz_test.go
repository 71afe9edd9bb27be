package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// agreeOps turns fuzz input into writes of a few permits, a property and
// a lead, two bytes a write: the first picks the entity (low two bits)
// and the write (bits 2 and 3: its copy written before its location was
// known, the linked one, a delete, or the linked one on another day);
// the second the entity version (1 to 3) and the day. Versions go up,
// down and repeat, so every pair of (version, rank) meets in both orders.
func agreeOps(data []byte) []readmodel.Batch {
	st := readmodel.GeoLink{GeoID: "gWA", GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}
	zip := readmodel.GeoLink{GeoID: "gZIP", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}
	city := readmodel.GeoLink{GeoID: "gCITY", GeoType: readmodel.GeoCity, Confidence: 1, Method: "source_city"}
	days := []string{"2026-11-20", "2026-11-02", "2026-08-15", "2025-12-31"}
	confs := []*float64{nil, ptr(0.3), ptr(0.6), ptr(0.9)}
	var out []readmodel.Batch
	for i := 0; i+1 < len(data) && len(out) < 64; i += 2 {
		entity, write := data[i]&3, data[i]>>2&3
		v := int64(data[i+1]%3) + 1
		day := days[data[i+1]/3%4]
		if write == 3 {
			day = days[(data[i+1]/3+1)%4]
		}
		linked := write != 0
		if write == 2 {
			kind, id := readmodel.KindPermit, fmt.Sprint("src:", entity)
			switch entity {
			case 2:
				kind, id = readmodel.KindLead, "lead:0"
			case 3:
				kind, id = readmodel.KindProperty, "prop_0123456789abcdef0123456789abcdef"
			}
			out = append(out, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: kind, ID: id, Version: v}}})
			continue
		}
		switch entity {
		case 0, 1:
			p := readmodel.Permit{PermitID: fmt.Sprint("src:", entity), PermitNumber: "N", Version: v, IssueDate: day,
				Address: readmodel.Address{FullAddress: "1 MAIN ST", State: "WA", Zipcode: "98101"}, GeoLinks: []readmodel.GeoLink{st}}
			if linked {
				p.GeoLinks = []readmodel.GeoLink{zip, city, st}
			}
			out = append(out, readmodel.Batch{Permits: []readmodel.Permit{p}})
		case 2:
			l := readmodel.Lead{LeadID: "lead:0", Version: v, SignalKey: "k1", SignalBasis: "observed_event",
				EventDateUsed: day, Confidence: confs[data[i+1]%4], ReasonCodes: []string{},
				Location: readmodel.LeadLocation{State: "WA", CountyNorm: "king county", CityNorm: "seattle", ZipcodeNorm: "98101"},
				GeoIDs:   []string{"gWA"}}
			if linked {
				l.GeoIDs = []string{"gZIP", "gCITY", "gWA"}
			}
			out = append(out, readmodel.Batch{Leads: []readmodel.Lead{l}})
		case 3:
			p := readmodel.Property{PropertyID: "prop_0123456789abcdef0123456789abcdef", CanonicalAddress: "1 MAIN ST, SEATTLE, WA 98101",
				NormalizedAddress: "1 MAIN ST", State: "WA", Zipcode: "98101", Version: v, GeoLinks: []readmodel.GeoLink{st}}
			if linked {
				p.GeoLinks = []readmodel.GeoLink{zip, st}
			}
			out = append(out, readmodel.Batch{Properties: []readmodel.Property{p}})
		}
	}
	return out
}

// FuzzWriterAgreesWithMemory: the same writes, one entity version
// meeting its unlinked copy, its re-link and its delete in any order,
// end in the same state on the OpenSearch writer (external versions
// 3v, 3v+1, 3v+2 against the engine's rule, through batches cut at
// random and crashes that replay them) as on the memory backend (one
// write at a time): every permit, property and lead the same version,
// live or a tombstone, linked or not. The permit and lead cells equal a
// recount of the stored documents, and the locations' counts and
// latest days and lead stats from the cells equal the memory backend's.
func FuzzWriterAgreesWithMemory(f *testing.F) {
	// unlinked, delete, relink of v1; relink, unlinked, delete of v2
	f.Add(byte(1), []byte{0x00, 0x00, 0x08, 0x00, 0x04, 0x00, 0x04, 0x01, 0x00, 0x01, 0x08, 0x01})
	// each entity: unlinked v2, relink v2, delete v2, unlinked v2 again, then a v3 on another day
	f.Add(byte(7), []byte{0x01, 0x01, 0x05, 0x01, 0x09, 0x01, 0x01, 0x01, 0x0d, 0x02,
		0x02, 0x04, 0x06, 0x04, 0x0a, 0x04, 0x03, 0x01, 0x07, 0x01, 0x0b, 0x01, 0x07, 0x02})
	f.Fuzz(func(t *testing.T, seed byte, data []byte) {
		msgs := agreeOps(data)
		if len(msgs) == 0 {
			return
		}
		ctx := context.Background()
		mem := memoryOf(t, msgs)
		s, fk := newFakeDocs(t)
		applyStream(t, rand.New(rand.NewPCG(uint64(seed), 29)), s, fk, msgs, crashStream{batch: 4, crash: 8})

		// What each backend holds: version, tombstone or linked.
		type state struct {
			version         int64
			deleted, linked bool
		}
		want := map[string]state{}
		require.NoError(t, mem.Export(ctx, 0, func(b readmodel.Batch) error {
			for _, p := range b.Permits {
				want["permit/"+p.PermitID] = state{version: p.Version, linked: p.Linked()}
			}
			for _, p := range b.Properties {
				want["property/"+p.PropertyID] = state{version: p.Version, linked: p.Linked()}
			}
			for _, l := range b.Leads {
				want["permit_lead/"+l.LeadID] = state{version: l.Version, linked: l.Linked()}
			}
			for _, d := range b.Deletes {
				if d.Kind != readmodel.KindLocation {
					want[string(d.Kind)+"/"+d.ID] = state{version: d.Version, deleted: true}
				}
			}
			return nil
		}))
		got := map[string]state{}
		for _, k := range []readmodel.Kind{readmodel.KindPermit, readmodel.KindProperty, readmodel.KindLead} {
			for id, d := range fk.rawDocs(k) {
				var src struct {
					Version  int64             `json:"version"`
					Deleted  bool              `json:"deleted"`
					GeoLinks []json.RawMessage `json:"geo_links"` // permits and properties
					GeoIDs   []string          `json:"geo_ids"`   // leads
				}
				require.NoError(t, json.Unmarshal(d.src, &src))
				st := state{version: src.Version, deleted: src.Deleted, linked: !src.Deleted && (len(src.GeoLinks) > 1 || len(src.GeoIDs) > 1)}
				rank := rankTombstone
				if !st.deleted {
					rank = docRank(!st.linked)
				}
				require.Equal(t, externalVersion(bulkItem{version: st.version, rank: rank}), d.version, "%s %s: its external version", k, id)
				got[string(k)+"/"+id] = st
			}
		}
		require.Equal(t, want, got, "what each backend stores")

		fk.requireCellsAnswer(t, mem)
	})
}
