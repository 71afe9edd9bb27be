package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// agreeOps turns fuzz input into writes of two permits, a property, two
// leads, a geo signal, a catalog entry and a location, two bytes a
// write: the first picks the entity (low three bits) and the write
// (bits 3 and 4: a permit's, property's or lead's copy written before
// its location was known, the linked one, a delete, or the linked one
// on another day; for the other kinds, which have no link completeness,
// a document, the same, a delete, another document); the second the
// entity version (1 to 3) and the day. Versions go up, down and repeat,
// so every pair of (version, rank) meets in both orders.
func agreeOps(data []byte) []readmodel.Batch {
	st := readmodel.GeoLink{GeoID: "gWA", GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}
	zip := readmodel.GeoLink{GeoID: "gZIP", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}
	city := readmodel.GeoLink{GeoID: "gCITY", GeoType: readmodel.GeoCity, Confidence: 1, Method: "source_city"}
	days := []string{"2026-11-20", "2026-11-02", "2026-08-15", "2025-12-31"}
	confs := []*float64{nil, ptr(0.3), ptr(0.6), ptr(0.9)}
	const propID = "prop_0123456789abcdef0123456789abcdef"
	signal := readmodel.GeoSignal{GeoID: "gCITY", SignalKey: "permit_velocity"}
	entry := readmodel.CatalogEntry{State: "WA", SignalKey: "permit_velocity"}
	var out []readmodel.Batch
	for i := 0; i+1 < len(data) && len(out) < 64; i += 2 {
		entity, write := data[i]&7, data[i]>>3&3
		v := int64(data[i+1]%3) + 1
		d := data[i+1] / 3 % 4
		if write == 3 {
			d = (d + 1) % 4
		}
		day, linked := days[d], write != 0
		if write == 2 {
			var del readmodel.Delete
			switch entity {
			case 0, 1:
				del = readmodel.Delete{Kind: readmodel.KindPermit, ID: fmt.Sprint("src:", entity)}
			case 2, 7:
				del = readmodel.Delete{Kind: readmodel.KindLead, ID: fmt.Sprint("lead:", entity%2)}
			case 3:
				del = readmodel.Delete{Kind: readmodel.KindProperty, ID: propID}
			case 4:
				del = readmodel.Delete{Kind: readmodel.KindGeoSignal, ID: signal.ID()}
			case 5:
				del = readmodel.Delete{Kind: readmodel.KindCatalog, ID: entry.ID()}
			case 6:
				del = readmodel.Delete{Kind: readmodel.KindLocation, ID: "gOTHER"}
			}
			del.Version = v
			out = append(out, readmodel.Batch{Deletes: []readmodel.Delete{del}})
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
		case 2, 7:
			l := readmodel.Lead{LeadID: fmt.Sprint("lead:", entity%2), Version: v, SignalKey: "k1", SignalBasis: "observed_event",
				EventDateUsed: day, Confidence: confs[data[i+1]%4], ReasonCodes: []string{},
				Location: readmodel.LeadLocation{State: "WA", CountyNorm: "king county", CityNorm: "seattle", ZipcodeNorm: "98101"},
				GeoIDs:   []string{"gWA"}}
			if linked {
				l.GeoIDs = []string{"gZIP", "gCITY", "gWA"}
			}
			out = append(out, readmodel.Batch{Leads: []readmodel.Lead{l}})
		case 3:
			p := readmodel.Property{PropertyID: propID, CanonicalAddress: "1 MAIN ST, SEATTLE, WA 98101",
				NormalizedAddress: "1 MAIN ST", State: "WA", Zipcode: "98101", Version: v, GeoLinks: []readmodel.GeoLink{st}}
			if linked {
				p.GeoLinks = []readmodel.GeoLink{zip, st}
			}
			out = append(out, readmodel.Batch{Properties: []readmodel.Property{p}})
		case 4:
			g := signal
			g.GeoType, g.DisplayName, g.State, g.Value = readmodel.GeoCity, "gCITY", "WA", json.RawMessage(`{"ratio":1}`)
			g.Score, g.Confidence, g.Decision, g.Reasons = float64(d)/4, 0.5, "positive", []string{}
			g.ComputedAt, g.Version = time.Date(2026, 11, 1+int(d), 0, 0, 0, 0, time.UTC), v
			out = append(out, readmodel.Batch{GeoSignals: []readmodel.GeoSignal{g}})
		case 5:
			c := entry
			c.Family, c.ActiveSignalVersion, c.ActiveWeightsProfileID, c.Spec = "geo", fmt.Sprint("v", d), "w1", json.RawMessage(`{}`)
			c.Status, c.Version = []string{"active", "retired"}[d%2], v
			out = append(out, readmodel.Batch{Catalog: []readmodel.CatalogEntry{c}})
		case 6:
			out = append(out, readmodel.Batch{Locations: []readmodel.Location{{GeoID: "gOTHER", GeoType: readmodel.GeoCity,
				Name: fmt.Sprint("Other ", d), DisplayName: fmt.Sprint("Other ", d, ", WA"), State: "WA", Version: v}}})
		}
	}
	return out
}

// FuzzWriterAgreesWithMemory: the same writes, one entity version
// meeting its unlinked copy, its re-link and its delete in any order
// (and, for the kinds without link completeness, its documents and its
// delete),
// end in the same state on the OpenSearch writer (external versions
// 3v, 3v+1, 3v+2 against the engine's rule, through batches cut at
// random and crashes that replay them) as on the memory backend (one
// write at a time): every document the same version, live or a
// tombstone, linked or not. The permit and lead cells equal a
// recount of the stored documents, and the locations' counts and
// latest days and lead stats from the cells equal the memory backend's.
func FuzzWriterAgreesWithMemory(f *testing.F) {
	// a permit: unlinked, delete, relink of v1; relink, unlinked, delete of v2
	f.Add(byte(1), []byte{0x00, 0x00, 0x10, 0x00, 0x08, 0x00, 0x08, 0x01, 0x00, 0x01, 0x10, 0x01})
	// every other entity: unlinked v2, relink v2, delete v2, unlinked v2
	// again, then v3 on another day
	var each []byte
	for e := byte(1); e < 8; e++ {
		each = append(each, e, 1, e|0x08, 1, e|0x10, 1, e, 1, e|0x18, 2)
	}
	f.Add(byte(7), each)
	// every entity: its linked document of v2, then a delete of v2
	var last []byte
	for e := byte(0); e < 8; e++ {
		last = append(last, e|0x08, 1, e|0x10, 1)
	}
	f.Add(byte(3), last)
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
			for _, g := range b.GeoSignals {
				want["geo_signal/"+g.ID()] = state{version: g.Version, linked: true}
			}
			for _, c := range b.Catalog {
				want["catalog/"+c.ID()] = state{version: c.Version, linked: true}
			}
			for _, l := range b.Locations {
				if !slices.ContainsFunc(cellGeos, func(g cellGeo) bool { return g.id == l.GeoID }) {
					want["location/"+l.GeoID] = state{version: l.Version, linked: true}
				}
			}
			for _, d := range b.Deletes {
				want[string(d.Kind)+"/"+d.ID] = state{version: d.Version, deleted: true}
			}
			return nil
		}))
		got := map[string]state{}
		for _, k := range readmodel.Kinds {
			for id, d := range fk.rawDocs(k) {
				var src struct {
					Version  int64             `json:"version"`
					Deleted  bool              `json:"deleted"`
					GeoLinks []json.RawMessage `json:"geo_links"` // permits and properties
					GeoIDs   []string          `json:"geo_ids"`   // leads
				}
				require.NoError(t, json.Unmarshal(d.src, &src))
				st := state{version: src.Version, deleted: src.Deleted, linked: !src.Deleted && (len(src.GeoLinks) > 1 || len(src.GeoIDs) > 1)}
				if k != readmodel.KindPermit && k != readmodel.KindProperty && k != readmodel.KindLead {
					st.linked = !st.deleted // no link completeness
				}
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
