package memory_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// exported reads every live document back through
// Export (what snapshots and digests see).
func exported(t *testing.T, s interface {
	Export(context.Context, int, func(readmodel.Batch) error) error
}) readmodel.Batch {
	t.Helper()
	var all readmodel.Batch
	if err := s.Export(context.Background(), 0, func(b readmodel.Batch) error { all.Append(b); return nil }); err != nil {
		t.Fatal(err)
	}
	return all
}

// TestEqualVersionRelink holds the memory backend to the re-link rule of
// readmodel.Writer: at an equal version a linked permit or property
// replaces an unlinked one, never the reverse, and a tombstone outranks
// both.
func TestEqualVersionRelink(t *testing.T) {
	linked := permit("1", "2024-01-02", zipA, 5)
	unlinked := linked.Clone()
	unlinked.GeoLinks = []readmodel.GeoLink{{GeoID: state, GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}}
	if linked.Linked() == unlinked.Linked() {
		t.Fatal("fixture: linked and unlinked permits must differ in Linked")
	}
	prop := readmodel.Property{PropertyID: "prop_0123456789abcdef0123456789abcdef", CanonicalAddress: "1 MAIN ST, SEATTLE, WA 98101",
		NormalizedAddress: "1 MAIN ST", City: "Seattle", State: "WA", Zipcode: "98101", Version: 3,
		GeoLinks: []readmodel.GeoLink{{GeoID: zipA, GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}, {GeoID: state, GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}}}
	propUnlinked := prop.Clone()
	propUnlinked.GeoLinks = prop.GeoLinks[1:]

	type step struct {
		b       readmodel.Batch
		applied int
	}
	cases := []struct {
		name  string
		steps []step
		want  readmodel.Batch // the live documents at the end
	}{
		{"relink replaces the unlinked copy", []step{
			{readmodel.Batch{Permits: []readmodel.Permit{unlinked}, Properties: []readmodel.Property{propUnlinked}}, 2},
			{readmodel.Batch{Permits: []readmodel.Permit{linked}, Properties: []readmodel.Property{prop}}, 2},
		}, readmodel.Batch{Permits: []readmodel.Permit{linked}, Properties: []readmodel.Property{prop}}},
		{"a late unlinked copy is stale", []step{
			{readmodel.Batch{Permits: []readmodel.Permit{linked}, Properties: []readmodel.Property{prop}}, 2},
			{readmodel.Batch{Permits: []readmodel.Permit{unlinked}, Properties: []readmodel.Property{propUnlinked}}, 0},
		}, readmodel.Batch{Permits: []readmodel.Permit{linked}, Properties: []readmodel.Property{prop}}},
		{"replays are stale", []step{
			{readmodel.Batch{Permits: []readmodel.Permit{unlinked}, Properties: []readmodel.Property{propUnlinked}}, 2},
			{readmodel.Batch{Permits: []readmodel.Permit{unlinked}, Properties: []readmodel.Property{propUnlinked}}, 0},
			{readmodel.Batch{Permits: []readmodel.Permit{linked}, Properties: []readmodel.Property{prop}}, 2},
			{readmodel.Batch{Permits: []readmodel.Permit{linked}, Properties: []readmodel.Property{prop}}, 0},
		}, readmodel.Batch{Permits: []readmodel.Permit{linked}, Properties: []readmodel.Property{prop}}},
		{"a tombstone of the same version outranks the relink", []step{
			{readmodel.Batch{Permits: []readmodel.Permit{unlinked}, Properties: []readmodel.Property{propUnlinked}}, 2},
			{readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: linked.PermitID, Version: 6}, {Kind: readmodel.KindProperty, ID: prop.PropertyID, Version: 4}}}, 2},
			{readmodel.Batch{Permits: []readmodel.Permit{func() readmodel.Permit { p := linked.Clone(); p.Version = 6; return p }()},
				Properties: []readmodel.Property{func() readmodel.Property { p := prop.Clone(); p.Version = 4; return p }()}}, 0},
		}, readmodel.Batch{}},
		{"a newer unlinked version replaces a linked one", []step{
			{readmodel.Batch{Permits: []readmodel.Permit{linked}}, 1},
			{readmodel.Batch{Permits: []readmodel.Permit{func() readmodel.Permit { p := unlinked.Clone(); p.Version = 6; return p }()}}, 1},
		}, readmodel.Batch{Permits: []readmodel.Permit{func() readmodel.Permit { p := unlinked.Clone(); p.Version = 6; return p }()}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			for i, st := range tc.steps {
				if res := apply(t, s, st.b); res.Applied != st.applied || res.Applied+res.Stale != st.b.Len() {
					t.Fatalf("step %d: %+v, want %d applied of %d", i, res, st.applied, st.b.Len())
				}
			}
			got := exported(t, s)
			if len(got.Permits) != len(tc.want.Permits) || len(got.Properties) != len(tc.want.Properties) {
				t.Fatalf("live permits %d properties %d, want %d and %d", len(got.Permits), len(got.Properties), len(tc.want.Permits), len(tc.want.Properties))
			}
			for i, p := range tc.want.Permits {
				if g := got.Permits[i]; g.Version != p.Version || !slices.Equal(g.GeoLinks, p.GeoLinks) {
					t.Errorf("permit v%d links %v, want v%d %v", g.Version, g.GeoLinks, p.Version, p.GeoLinks)
				}
			}
			for i, p := range tc.want.Properties {
				if g := got.Properties[i]; g.Version != p.Version || !slices.Equal(g.GeoLinks, p.GeoLinks) {
					t.Errorf("property v%d links %v, want v%d %v", g.Version, g.GeoLinks, p.Version, p.GeoLinks)
				}
			}
			// The indexes follow the document: the ZIP counts the permit
			// only when the live document links it.
			loc, err := s.Location(context.Background(), readmodel.ParseGeoRef(zipA))
			if err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			for _, p := range tc.want.Permits {
				if _, ok := p.Link(zipA); ok {
					want++
				}
			}
			if loc.PermitCount != want {
				t.Errorf("ZIP permit_count %d, want %d", loc.PermitCount, want)
			}
		})
	}
}

// TestEqualVersionRelinkLeads: a lead anchored to its state alone because
// its anchor was unknown is replaced by the same version anchored below
// the state, never the reverse.
func TestEqualVersionRelinkLeads(t *testing.T) {
	unlinked := readmodel.Lead{LeadID: "lead_1", SignalKey: "framing_window_late", SignalBasis: "inferred_timing",
		ReasonCodes: []string{}, Location: readmodel.LeadLocation{State: "WA"}, GeoIDs: []string{state}, Version: 5}
	linked := unlinked.Clone()
	linked.GeoIDs = []string{zipA, city, state}
	linked.Location.County = "King County"
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
			s := newStore(t)
			n := 0
			for _, l := range tc.order {
				n += apply(t, s, readmodel.Batch{Leads: []readmodel.Lead{l}}).Applied
			}
			require.Equal(t, tc.applied, n)
			got := exported(t, s)
			require.Len(t, got.Leads, 1)
			require.Equal(t, linked.GeoIDs, got.Leads[0].GeoIDs)
			page, err := s.PermitLeads(context.Background(), readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(zipA)}, Sort: readmodel.SortEventDateDesc, Limit: 10})
			require.NoError(t, err)
			require.Len(t, page.Leads, 1, "the ZIP's leads list the re-linked lead")
		})
	}
}
