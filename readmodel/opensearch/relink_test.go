package opensearch

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/osgolden"
	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// TestExternalVersionsOrderRelinks holds the OpenSearch writer to the
// re-link rule of readmodel.Writer against the engine's external
// versioning (fakeDocs): at an equal version a linked permit or
// property replaces an unlinked one, never the reverse; replays are
// stale; a tombstone outranks both, in either order; a newer version
// wins either way.
func TestExternalVersionsOrderRelinks(t *testing.T) {
	zip := readmodel.GeoLink{GeoID: "gZIP", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}
	st := readmodel.GeoLink{GeoID: "gWA", GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}
	permit := func(v int64, linked bool) readmodel.Permit {
		p := readmodel.Permit{PermitID: "seattle:1", PermitNumber: "1", PermitType: "Building", Source: "seattle",
			Address: readmodel.Address{FullAddress: "1 MAIN ST", State: "WA", Zipcode: "98101"}, Version: v,
			GeoLinks: []readmodel.GeoLink{st}}
		if linked {
			p.GeoLinks = []readmodel.GeoLink{zip, st}
		}
		return p
	}
	property := func(v int64, linked bool) readmodel.Property {
		p := readmodel.Property{PropertyID: "prop_0123456789abcdef0123456789abcdef", CanonicalAddress: "1 MAIN ST, SEATTLE, WA 98101",
			NormalizedAddress: "1 MAIN ST", State: "WA", Zipcode: "98101", Version: v, GeoLinks: []readmodel.GeoLink{st}}
		if linked {
			p.GeoLinks = []readmodel.GeoLink{zip, st}
		}
		return p
	}
	both := func(v int64, linked bool) readmodel.Batch {
		return readmodel.Batch{Permits: []readmodel.Permit{permit(v, linked)}, Properties: []readmodel.Property{property(v, linked)}}
	}
	deleted := func(v int64) readmodel.Batch {
		return readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "seattle:1", Version: v},
			{Kind: readmodel.KindProperty, ID: "prop_0123456789abcdef0123456789abcdef", Version: v}}}
	}
	type step struct {
		b       readmodel.Batch
		applied int
	}
	for _, tc := range []struct {
		name       string
		steps      []step
		wantLinks  int // geo_links of the stored permit and property; -1: a tombstone
		wantSource int64
	}{
		{"relink replaces the unlinked copy", []step{{both(5, false), 2}, {both(5, true), 2}}, 2, 5},
		{"a late unlinked copy is stale", []step{{both(5, true), 2}, {both(5, false), 0}}, 2, 5},
		{"replays are stale", []step{{both(5, false), 2}, {both(5, false), 0}, {both(5, true), 2}, {both(5, true), 0}}, 2, 5},
		{"a tombstone outranks the relink of its version", []step{{both(5, false), 2}, {deleted(6), 2}, {both(6, true), 0}}, -1, 6},
		{"a newer unlinked version wins", []step{{both(5, true), 2}, {both(6, false), 2}, {both(5, true), 0}}, 1, 6},
		{"a delete of its version takes over the unlinked copy", []step{{both(5, false), 2}, {deleted(5), 2}, {both(5, true), 0}}, -1, 5},
		{"a delete of its version takes over the re-link", []step{{both(5, false), 2}, {both(5, true), 2}, {deleted(5), 2}, {both(5, false), 0}}, -1, 5},
		{"a delete before the documents of its version", []step{{deleted(5), 2}, {both(5, true), 0}, {both(5, false), 0}}, -1, 5},
		{"a delete replayed over its tombstone is stale", []step{{both(5, true), 2}, {deleted(5), 2}, {deleted(5), 0}}, -1, 5},
		{"an older delete is stale", []step{{both(5, false), 2}, {deleted(4), 0}}, 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, f := newFakeDocs(t)
			for i, st := range tc.steps {
				res, err := s.Apply(context.Background(), st.b)
				require.NoError(t, err)
				require.Equal(t, readmodel.ApplyResult{Applied: st.applied, Stale: st.b.Len() - st.applied}, res, "step %d", i)
			}
			docs := map[string]fakeDoc{}
			for _, k := range []readmodel.Kind{readmodel.KindPermit, readmodel.KindProperty} {
				for id, d := range f.rawDocs(k) {
					docs[string(k)+"/"+id] = d
				}
			}
			require.Len(t, docs, 2)
			for key, d := range docs {
				var src struct {
					Version  int64             `json:"version"`
					Deleted  bool              `json:"deleted"`
					GeoLinks []json.RawMessage `json:"geo_links"`
				}
				require.NoError(t, json.Unmarshal(d.src, &src))
				require.Equal(t, tc.wantSource, src.Version, key)
				if tc.wantLinks < 0 {
					require.True(t, src.Deleted, key)
					continue
				}
				require.False(t, src.Deleted, key)
				require.Len(t, src.GeoLinks, tc.wantLinks, key)
			}
		})
	}
}

// TestExternalVersionLimit: a version the encoding cannot hold is refused
// as an item error (dead-lettered by the indexer), the rest applied.
func TestExternalVersionLimit(t *testing.T) {
	s, f := newFakeDocs(t)
	b := readmodel.Batch{Catalog: []readmodel.CatalogEntry{
		{State: "WA", SignalKey: "a", Family: "geo", Spec: json.RawMessage(`{}`), Version: maxEntityVersion},
		{State: "WA", SignalKey: "b", Family: "geo", Spec: json.RawMessage(`{}`), Version: maxEntityVersion + 1},
	}}
	res, err := s.Apply(context.Background(), b)
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, res)
	var ie *readmodel.ItemErrors
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Items, 1)
	require.Equal(t, "WA|b", ie.Items[0].ID)
	require.Equal(t, int64(3*maxEntityVersion+1), f.rawDocs(readmodel.KindCatalog)["WA|a"].version, "a document's largest external version")
	require.LessOrEqual(t, uint64(3*maxEntityVersion+2), uint64(1<<63-1), "a tombstone's fits in a long")

	res, err = s.Apply(context.Background(), readmodel.Batch{Catalog: b.Catalog[1:]})
	require.Equal(t, readmodel.ApplyResult{}, res)
	require.ErrorAs(t, err, &ie, "a batch of refused items sends nothing")
}

// TestBulkRelinkGolden: the _bulk body of a permit written without its
// ZIP (external version 3*7) and of its re-link (3*7+1), checked against
// the OpenSearch specification like every golden.
func TestBulkRelinkGolden(t *testing.T) {
	s := &Store{prefix: mappings.DefaultPrefix, now: func() time.Time { return time.UnixMilli(goldenIndexedAt) }}
	st := readmodel.GeoLink{GeoID: "gWA", GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}
	unlinked := readmodel.Permit{PermitID: "seattle:7", PermitNumber: "7", PermitType: "Building", Source: "seattle",
		Address:  readmodel.Address{FullAddress: "7 PINE ST, SEATTLE, WA 98101", City: "SEATTLE", State: "WA", Zipcode: "98101"},
		GeoLinks: []readmodel.GeoLink{st}, Version: 7}
	linked := unlinked.Clone()
	linked.Address.County, linked.Address.Jurisdiction = "King County", "City of Seattle"
	linked.GeoLinks = []readmodel.GeoLink{{GeoID: "gZIP", GeoType: readmodel.GeoZip, Confidence: 0.7, Method: "derived_zip"}, st}
	var body []byte
	for _, p := range []readmodel.Permit{unlinked, linked} {
		b, _, err := s.bulkBody(readmodel.Batch{Permits: []readmodel.Permit{p}})
		require.NoError(t, err)
		body = append(body, b...)
	}
	require.Contains(t, string(body), `"version":21,"version_type":"external"`)
	require.Contains(t, string(body), `"version":22,"version_type":"external"`)
	osgolden.Compare(t, "apply_relink.bulk.ndjson", body)
}

// TestExternalVersionsOrderLeadRelinks: the same rule for a lead anchored
// to its state alone (its anchor unknown) and its re-link.
func TestExternalVersionsOrderLeadRelinks(t *testing.T) {
	unlinked := readmodel.Lead{LeadID: "lead_1", SignalKey: "framing_window_late", SignalBasis: "inferred_timing",
		ReasonCodes: []string{}, Location: readmodel.LeadLocation{State: "WA"}, GeoIDs: []string{"gWA"}, Version: 5}
	linked := unlinked.Clone()
	linked.GeoIDs = []string{"gZIP", "gCITY", "gWA"}
	for _, tc := range []struct {
		name    string
		order   []readmodel.Lead
		applied int
	}{
		{"relink", []readmodel.Lead{unlinked, linked}, 2},
		{"late unlinked copy", []readmodel.Lead{linked, unlinked}, 1},
		{"replay", []readmodel.Lead{unlinked, linked, linked, unlinked}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, f := newFakeDocs(t)
			n := 0
			for _, l := range tc.order {
				res, err := s.Apply(context.Background(), readmodel.Batch{Leads: []readmodel.Lead{l}})
				require.NoError(t, err)
				n += res.Applied
			}
			require.Equal(t, tc.applied, n)
			var src struct {
				GeoIDs []string `json:"geo_ids"`
			}
			docs := f.rawDocs(readmodel.KindLead)
			require.Len(t, docs, 1)
			for _, d := range docs {
				require.NoError(t, json.Unmarshal(d.src, &src))
				require.Equal(t, int64(3*5+1), d.version, "the linked lead of version 5")
			}
			require.Equal(t, linked.GeoIDs, src.GeoIDs)
		})
	}
}
