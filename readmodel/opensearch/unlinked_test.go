package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/osgolden"
	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

// search answers a _search on index (a read alias; "" with a point in
// time, whose id names it) over the fake's documents: the query through
// the test interpreter (leadcells_test.go), sorted by doc_id, after
// search_after, at most size hits.
func (f *fakeDocs) search(index string, body []byte) map[string]any {
	var b jdoc
	if err := json.Unmarshal(body, &b); err != nil {
		panic(err)
	}
	pit := ""
	if p, ok := b["pit"].(jdoc); ok {
		pit = p["id"].(string)
		index = strings.TrimPrefix(pit, "pit:")
	}
	after := ""
	if sa, ok := b["search_after"].([]any); ok {
		after = sa[0].(string)
	}
	var hits []any
	for _, id := range slices.Sorted(maps.Keys(f.docs[index])) {
		var doc jdoc
		if err := json.Unmarshal(f.docs[index][id].src, &doc); err != nil {
			panic(err)
		}
		if id <= after || !matches(f.t, doc, b["query"].(jdoc)) {
			continue
		}
		if len(hits) == int(b["size"].(float64)) {
			break
		}
		hits = append(hits, map[string]any{"_id": id, "_source": doc, "sort": []any{id}})
	}
	return map[string]any{"pit_id": pit, "hits": map[string]any{"hits": hits}}
}

// searches counts the _search requests the fake answered.
func (f *fakeDocs) searches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, "POST /_search?") {
			n++
		}
	}
	return n
}

func TestUnlinkedGoldens(t *testing.T) {
	for name, body := range map[string]obj{
		"unlinked_scan.search.json": unlinkedScanBody(map[string][]int{"permitd.permits.v1": {7, 2}, "permitd.permit-leads.v1": {0}, "permitd.properties.v1": {}},
			500, "pit-id", "seattle:9"),
		"unlinked_scan_all.search.json": unlinkedScanBody(nil, 1000, "", ""),
	} {
		t.Run(name, func(t *testing.T) { osgolden.Compare(t, name, render(t, body)) })
	}
	s := &Store{prefix: mappings.DefaultPrefix, now: func() time.Time { return time.UnixMilli(goldenIndexedAt) }}
	body, _, err := s.bulkBody(awaitingBatch())
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(body), `"awaits":`), "the unlinked permit and lead carry what they wait for; the linked permit does not")
	osgolden.Compare(t, "apply_awaits.bulk.ndjson", body)
}

// awaitingBatch: an unlinked permit and lead with what they wait for,
// and a linked permit (an Awaiting of its id and version is not stored
// with a linked document).
func awaitingBatch() readmodel.Batch {
	unlinked := readmodel.Permit{PermitID: "seattle:1", PermitNumber: "1", PermitType: "Commercial", Source: "seattle",
		Address:  readmodel.Address{FullAddress: "600 University St, Seattle, WA 98101", City: "Seattle", State: "WA", Zipcode: "98101"},
		GeoLinks: []readmodel.GeoLink{{GeoID: "gWA", GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}}, Version: 3}
	linked := unlinked.Clone()
	linked.PermitID, linked.PermitNumber = "seattle:2", "2"
	linked.GeoLinks = append(linked.GeoLinks, readmodel.GeoLink{GeoID: geo, GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"})
	lead := readmodel.Lead{LeadID: "lead_0001", SignalKey: "framing_window_late", ReasonCodes: []string{},
		Location: readmodel.LeadLocation{State: "WA"}, GeoIDs: []string{"gWA"}, Version: 5}
	return readmodel.Batch{
		Permits: []readmodel.Permit{unlinked, linked},
		Leads:   []readmodel.Lead{lead},
		Awaiting: []readmodel.Awaiting{
			{Kind: readmodel.KindPermit, ID: "seattle:1", Version: 3, GeoID: geo, Topic: "permitd.permits.v1", Partition: 7, Offset: 41,
				Key: []byte("seattle:1"), Value: []byte(`{"type":"permit.upserted"}`)},
			{Kind: readmodel.KindPermit, ID: "seattle:2", Version: 3, GeoID: geo, Topic: "permitd.permits.v1", Partition: 7, Offset: 42,
				Key: []byte("seattle:2"), Value: []byte(`{"type":"permit.upserted"}`)},
			{Kind: readmodel.KindLead, ID: "lead_0001", Version: 5, GeoID: geo, Topic: "permitd.permit-leads.v1", Partition: 0, Offset: 9,
				Key: []byte("lead_0001"), Value: []byte(`{"type":"permit_lead.upserted"}`)},
		},
	}
}

func TestAwaitsFitMappings(t *testing.T) {
	its := items(awaitingBatch(), goldenIndexedAt)
	for _, it := range its {
		m, err := mappings.Mappings(it.kind)
		require.NoError(t, err)
		raw, err := json.Marshal(it.doc)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(raw, &doc))
		var missing []string
		checkMapped(m, doc, "", &missing)
		require.Empty(t, missing, "%s fields not in mappings/templates/%s.json", it.kind, mappings.Base(it.kind))
	}
	m, err := mappings.Mappings(readmodel.KindProperty)
	require.NoError(t, err)
	raw, err := json.Marshal(propertyDoc{Awaits: awaitsDocOf(&readmodel.Awaiting{GeoID: geo, Topic: "t", Value: []byte("{}")})})
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	var missing []string
	checkMapped(m, doc, "", &missing)
	require.Empty(t, missing)
}

// TestScanUnlinkedLists: the scan lists each waiting document once with
// its message, whatever the page size, and nothing for an owner of no
// partition.
func TestScanUnlinkedLists(t *testing.T) {
	ctx := context.Background()
	s, f := newFakeDocs(t)
	_, err := s.Apply(ctx, awaitingBatch())
	require.NoError(t, err)
	f.requests = nil
	for _, size := range []int{1, 2, 1000} {
		var got []string
		require.NoError(t, s.ScanUnlinked(ctx, readmodel.UnlinkedScan{PageSize: size}, func(page []readmodel.Awaiting) error {
			require.LessOrEqual(t, len(page), size)
			for _, a := range page {
				got = append(got, fmt.Sprintf("%s %s v%d %s %s/%d@%d %s=%s", a.Kind, a.ID, a.Version, a.GeoID, a.Topic, a.Partition, a.Offset, a.Key, a.Value))
			}
			return nil
		}))
		require.Equal(t, []string{
			`permit seattle:1 v3 ` + geo + ` permitd.permits.v1/7@41 seattle:1={"type":"permit.upserted"}`,
			`permit_lead lead_0001 v5 ` + geo + ` permitd.permit-leads.v1/0@9 lead_0001={"type":"permit_lead.upserted"}`,
		}, got, "page size %d", size)
	}
	require.True(t, strings.HasPrefix(f.requests[0], "POST /permitd-permits,permitd-properties,permitd-leads/_refresh"),
		"every acknowledged write is listed: a refresh first, got %q", f.requests[0])
	n := 0
	require.NoError(t, s.ScanUnlinked(ctx, readmodel.UnlinkedScan{Partitions: map[string][]int{"permitd.permits.v1": {1}}}, func(page []readmodel.Awaiting) error {
		n += len(page)
		return nil
	}))
	require.Zero(t, n, "partition 7 is not owned")
	require.NoError(t, s.ScanUnlinked(ctx, readmodel.UnlinkedScan{Partitions: map[string][]int{}}, func([]readmodel.Awaiting) error {
		t.Fatal("no partition owned: nothing to list")
		return nil
	}))
}
