package opensearch

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/internal/osgolden"
	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
	"github.com/permitd/permitd/readmodel/resolve"
)

func render(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return b
}

func ptr[T any](v T) *T { return &v }

const geo = "gABCDEFGHIJKLMNOP"
const prop = "prop_0123456789abcdef0123456789abcdef"

// TestQueryGoldens renders every query shape from the real builders.
func TestQueryGoldens(t *testing.T) {
	leadFilter := readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(geo), SignalKeys: []string{"framing_nowcast_early"}, FromDate: "2026-01-01", ToDate: "2026-06-30", MinConfidence: ptr(0.5), FreshSince: "2026-03-01"}
	leadPage, err := leadPageBody(readmodel.LeadQuery{Filter: leadFilter, Sort: readmodel.SortEventDateDesc, Limit: 25,
		After: &readmodel.LeadKey{EventDate: "2026-05-01", HasConfidence: true, Confidence: 0.8, LeadID: "lead_0001"}})
	require.NoError(t, err)
	leadConf, err := leadPageBody(readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(geo)}, Sort: readmodel.SortConfidenceDesc, Limit: 25,
		After: &readmodel.LeadKey{LeadID: "lead_0002"}})
	require.NoError(t, err)
	stats, err := statsBody(readmodel.StatsQuery{Filter: leadFilter, Today: "2026-06-30", TopN: 5})
	require.NoError(t, err)
	aggs, err := statsAggs("2026-06-30")
	require.NoError(t, err)
	pq := resolve.ParseQuery(readmodel.ResolveQuery{Text: "Mt Vernon, WA", State: "WA", Limit: 5})
	zq := resolve.ParseQuery(readmodel.ResolveQuery{Text: "Bellevue, WA 98004", Limit: 5})
	zpq := resolve.ParseQuery(readmodel.ResolveQuery{Text: "981", State: "WA", Limit: 5})
	aq := resolve.ParseQuery(readmodel.ResolveQuery{Text: "Pt Angeles", Limit: 5})
	mq := readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(geo), FromDate: "2024-01-15", ToDate: "2025-12-31",
		Filter: readmodel.PermitFilter{Statuses: []string{"issued"}, MinValuation: ptr(1000.0)}}
	ps, ok := propmatch.Parse(readmodel.PropertyQuery{Address: "600 University St, Seattle, WA 98101", Limit: 5})
	require.True(t, ok)

	for name, body := range map[string]any{
		"location_by_id.search.json":         byIDBody(geo),
		"location_permit_cells.search.json":  cellCountBody(geo),
		"property_hierarchy.search.json":     hierarchyBody("permitd-properties", prop),
		"locations_by_id.search.json":        locationsByIDBody([]string{geo, "gSTATE"}),
		"permits_page_desc.search.json":      permitPageBody("geo_ids", geo, true, "", "", 25, nil),
		"permits_page_asc_after.search.json": permitPageBody("geo_ids", geo, false, "2020-01-01", "2020-12-31", 7, &readmodel.PermitKey{IssueDate: "2020-03-04", PermitID: "src:9"}),
		"permits_page_undated_after.search.json": permitPageBody("geo_ids", geo, true, "", "", 7,
			&readmodel.PermitKey{PermitID: "src:10"}),
		"property_permits_page.search.json": permitPageBody("property_id", prop, true, "", "", 10, nil),
		"permits_filtered.search.json": permitSearchBody("geo_ids", &readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: true, Limit: 25,
			Filter: readmodel.PermitFilter{PermitTypes: []string{"building", "electrical"}, WorkTypes: []string{"new"}, Statuses: []string{"issued"},
				MinValuation: ptr(1000.0), MaxValuation: ptr(50000.0), Contractor: "acmeroofinginc"}}),
		"permits_valuation_after.search.json": permitSearchBody("geo_ids", &readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 25, Sort: readmodel.SortValuationDesc,
			FromDate: "2024-01-01", After: &readmodel.PermitKey{IssueDate: "2024-02-03", PermitID: "src:9", HasValuation: true, Valuation: 12500},
			Filter: readmodel.PermitFilter{Statuses: []string{"issued"}}}),
		"permits_near_distance_after.search.json": permitSearchBody("geo_ids", &readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(""), Limit: 25, Sort: readmodel.SortDistance,
			After:  &readmodel.PermitKey{IssueDate: "2024-02-03", PermitID: "src:9", DistanceM: 412.5},
			Filter: readmodel.PermitFilter{Near: &readmodel.GeoPoint{Lat: 47.6097, Lon: -122.3331}, RadiusM: 1000}}),
		"permits_bbox_in_geo.search.json": permitSearchBody("geo_ids", &readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: true, Limit: 25,
			Filter: readmodel.PermitFilter{BBox: &readmodel.BBox{MinLon: -122.36, MinLat: 47.59, MaxLon: -122.30, MaxLat: 47.63}}}),
		"permits_text.search.json": permitSearchBody("geo_ids", &readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: true, Limit: 25,
			Filter: readmodel.PermitFilter{Text: "kitchen remodel", Statuses: []string{"issued"}}}),
		"permits_filtered_min_after.search.json": permitSearchBody("geo_ids", &readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), FromDate: "2024-01-01", Limit: 7,
			After:  &readmodel.PermitKey{IssueDate: "2024-03-04", PermitID: "src:9"},
			Filter: readmodel.PermitFilter{MinValuation: ptr(0.0)}}),
		"geo_signals_of.search.json": geoSignalsOfBody(geo, []string{"permit_velocity"}),
		"geo_signals_page.search.json": geoSignalPageBody(readmodel.GeoSignalQuery{State: "WA", SignalKeys: []string{"permit_velocity", "permit_retired"},
			GeoType: readmodel.GeoCity, Decision: "positive", MinScore: ptr(0.4), Limit: 20,
			After: &readmodel.GeoSignalKey{Score: 0.9, SignalKey: "permit_velocity", GeoID: geo}}, []string{"permit_velocity"}),
		"active_catalog_all_states.search.json": activeCatalogBody("", []string{"permit_velocity"}, maxActiveEntries),
		"active_catalog_state.search.json":      activeCatalogBody("WA", nil, maxCatalog),
		"catalog.search.json":                   catalogBody(readmodel.CatalogQuery{State: "WA", SignalKeys: []string{"permit_velocity"}}),
		"leads_page_date.search.json":           leadPage,
		"sent_leads_page_date.search.json":      guarded(leadPage),
		"leads_page_confidence.search.json":     leadConf,
		"stats.search.json":                     stats,
		"stats.aggs.json":                       aggs,
		"resolve.search.json":                   resolveBody(pq),
		"resolve_zip.search.json":               resolveBody(zq),
		"resolve_zip_prefix.search.json":        resolveBody(zpq),
		"resolve_abbreviation.search.json":      resolveBody(aq),
		"properties.search.json":                propertyBody(&ps),
		"property_permit_stats.search.json":     propertyPermitStatsBody([]string{prop}),
		"count.search.json":                     countBody(),
		"count_deleted.search.json":             countDeletedBody(),
		"stats_names.search.json":               spellingBody(readmodel.GeoCounty, []string{"king county", "pierce county"}),
		"scan_pit.search.json":                  scanBody("pit-id", "doc-9"),
		"scan.search.json":                      scanBody("", ""),
		"versions_sample.search.json":           versionSampleBody(),
		"export_scan_first.search.json": scanPageBody("geo_ids", &readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: true, Limit: 100, FromDate: "2024-01-01",
			Filter: readmodel.PermitFilter{PermitTypes: []string{"demolition"}}}, "pit-id"),
		"export_scan_after.search.json": scanPageBody("property_id", &readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(prop), Desc: true, Limit: 100,
			After: &readmodel.PermitKey{IssueDate: "2024-03-04", PermitID: "src:9"}}, "pit-id"),
		"monthly.search.json":                   monthlyBody("geo_ids", &mq),
		"monthly_pit.search.json":               withPIT(monthlyBody("property_id", &readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(prop), FromDate: "2024-01-01", ToDate: "2024-12-31"}), "pit-id"),
		"monthly_ranks.search.json":             monthRanksBody("geo_ids", &mq, "2024-01-15", "2024-01-31", guideRanges([]float64{9000, 12500, 12500, 15000.5})),
		"monthly_select.search.json":            withPIT(monthSelectBody("geo_ids", &mq, "2024-02-01", "2024-02-29", valRange{}, true, 4711, 2), "pit-id"),
		"monthly_select_range_desc.search.json": monthSelectBody("geo_ids", &mq, "2024-02-01", "2024-02-29", valRange{ptr(12500.0), ptr(15000.5)}, false, 812, 1),
	} {
		t.Run(name, func(t *testing.T) { osgolden.Compare(t, name, render(t, body)) })
	}
}

// sampleBatch holds one fully populated document of every kind and one
// delete.
func sampleBatch() readmodel.Batch {
	lat, lon := 47.61, -122.33
	conf := 0.8
	return readmodel.Batch{
		Locations: []readmodel.Location{{
			GeoID: geo, GeoType: readmodel.GeoCity, Name: "Mt Vernon", DisplayName: "Mt Vernon, WA", FullAddress: "Mt Vernon, Skagit County, WA",
			State: "WA", StateName: "Washington", County: "Skagit County", City: "Mt Vernon", Zipcode: "98273", Jurisdiction: "City of Mount Vernon",
			StateGeoID: "gWA", CountyGeoID: "gSKAGIT", CountyGeoIDs: []string{"gSKAGIT"}, CityGeoID: geo, JurisdictionGeoID: "gJUR",
			Aliases: []string{"Mount Vernon"}, Lat: 48.42, Lon: -122.33, Population: 35000, Incorporated: true, Version: 3,
		}},
		Permits: []readmodel.Permit{{
			PermitID: "seattle:1", PermitNumber: "1", PermitType: "Commercial", WorkType: "New", Status: "Issued",
			ApplicationDate: "2020-01-02", IssueDate: "2020-02-03", CompletionDate: "2021-01-01", RawDescription: "Build",
			Contractor: "ACME", Valuation: ptr(1000.0), Source: "seattle",
			Address: readmodel.Address{FullAddress: "600 University St", City: "Seattle", State: "WA", Zipcode: "98101", County: "King County", Jurisdiction: "City of Seattle"},
			Lat:     &lat, Lon: &lon, PropertyID: prop,
			GeoLinks: []readmodel.GeoLink{{GeoID: geo, GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}, {GeoID: prop, GeoType: readmodel.GeoProperty, Confidence: 1, Method: "address"}},
			Version:  20240101,
		}},
		Properties: []readmodel.Property{{
			PropertyID: prop, CanonicalAddress: "600 UNIVERSITY ST, SEATTLE, WA 98101", NormalizedAddress: "600 UNIVERSITY ST",
			City: "Seattle", State: "WA", Zipcode: "98101", ParcelID: "0942000640", Lat: &lat, Lon: &lon,
			GeoLinks: []readmodel.GeoLink{{GeoID: geo, GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}}, Version: 2,
		}},
		GeoSignals: []readmodel.GeoSignal{{
			GeoID: geo, GeoType: readmodel.GeoCity, DisplayName: "Mt Vernon, WA", State: "WA", SignalKey: "permit_velocity",
			Value: json.RawMessage(`{"ratio":1.2}`), Score: 0.9, Confidence: 0.7, Decision: "positive", Reasons: []string{"HIGH_VOLUME"},
			ComputedAt: time.Date(2026, 6, 30, 0, 0, 0, 0, time.UTC), Version: 1782777600,
		}},
		Leads: []readmodel.Lead{{
			LeadID: "lead_0001", SignalKey: "framing_nowcast_early", EventDateUsed: "2026-05-01", SignalBasis: "inferred_timing",
			Confidence: &conf, ReasonCodes: []string{"ISSUED_RECENTLY"}, PermitNumber: "1", Jurisdiction: "City of Seattle",
			Location: readmodel.LeadLocation{FullAddress: "600 University St", City: "Seattle", State: "WA", Zipcode: "98101", County: "King County",
				CityNorm: "seattle", ZipcodeNorm: "98101", CountyNorm: "king"},
			MapsURL: "https://maps.example/?q=1", GeoIDs: []string{geo, "gWA"}, Version: 20240101001,
		}},
		Catalog: []readmodel.CatalogEntry{{
			State: "WA", SignalKey: "permit_velocity", Family: "geo", ActiveSignalVersion: "v1", ActiveWeightsProfileID: "w1",
			Status: "active", Spec: json.RawMessage(`{"unit":"ratio"}`), Version: 1,
		}},
		Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "seattle:2", Version: 5}},
	}
}

// goldenIndexedAt is the Writer's clock in goldens: 2026-06-30T00:00Z.
const goldenIndexedAt = 1782777600000

func TestBulkGolden(t *testing.T) {
	s := &Store{prefix: mappings.DefaultPrefix, now: func() time.Time { return time.UnixMilli(goldenIndexedAt) }}
	body, its, err := s.bulkBody(sampleBatch())
	require.NoError(t, err)
	require.Len(t, its, 7)
	osgolden.Compare(t, "apply.bulk.ndjson", body)
}

// TestDocumentsFitMappings checks every field a document writes is mapped
// (the templates are dynamic: strict, so an unmapped field would fail the
// bulk item on a real cluster).
func TestDocumentsFitMappings(t *testing.T) {
	s := &Store{prefix: mappings.DefaultPrefix}
	for _, it := range items(sampleBatch(), goldenIndexedAt) {
		m, err := mappings.Mappings(it.kind)
		require.NoError(t, err)
		raw, err := json.Marshal(it.doc)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(raw, &doc))
		var missing []string
		checkMapped(m, doc, "", &missing)
		sort.Strings(missing)
		require.Empty(t, missing, "%s fields not in mappings/templates/%s.json", it.kind, mappings.Base(it.kind))
	}
	_ = s
}

func checkMapped(mapping map[string]any, doc map[string]any, prefix string, missing *[]string) {
	props, _ := mapping["properties"].(map[string]any)
	for k, v := range doc {
		f, ok := props[k].(map[string]any)
		if !ok {
			*missing = append(*missing, prefix+k)
			continue
		}
		if f["enabled"] == false || f["type"] == "geo_point" {
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			checkMapped(f, x, prefix+k+".", missing)
		case []any:
			for _, e := range x {
				if o, ok := e.(map[string]any); ok {
					checkMapped(f, o, prefix+k+".", missing)
				}
			}
		}
	}
}

// specQuirks lists correct bodies the OpenSearch specification rejects.
var specQuirks = map[string]string{}

func TestGoldensPassSpec(t *testing.T) {
	osgolden.ValidateAll(t, specQuirks)
}

func TestStatsFromBuckets(t *testing.T) {
	raw := `{"hits":{"total":{"value":10}},"aggregations":{
	 "by_signal":{"buckets":[{"key":"b","doc_count":5},{"key":"a","doc_count":5}]},
	 "top_counties":{"buckets":[{"key":"king","doc_count":7},{"key":"pierce","doc_count":2}]},
	 "top_cities":{"buckets":[]},"top_zips":{"buckets":[{"key":"98101","doc_count":1}]},
	 "confidence":{"buckets":{"high":{"doc_count":3},"medium":{"doc_count":4}}},
	 "freshness":{"buckets":{"d0_7":{"doc_count":1},"d8_14":{"doc_count":2},"d15_30":{"doc_count":3}}}}}`
	var r searchResult
	require.NoError(t, json.NewDecoder(strings.NewReader(raw)).Decode(&r))
	st, err := statsFrom(&r, 1)
	require.NoError(t, err)
	require.Equal(t, readmodel.PermitStats{
		Total:       10,
		BySignal:    []readmodel.ValueCount{{Value: "a", Count: 5}, {Value: "b", Count: 5}},
		TopCounties: []readmodel.ValueCount{{Value: "king", Count: 7}}, TopCities: []readmodel.ValueCount{},
		TopZips:        []readmodel.ValueCount{{Value: "98101", Count: 1}},
		ConfidenceHigh: 3, ConfidenceMedium: 4, ConfidenceLow: 3,
		Fresh0to7: 1, Fresh8to14: 2, Fresh15to30: 3, Fresh31Plus: 4,
	}, st)
}

// TestSortKeysFoldMissingLast: the single numeric sort keys put an
// undated permit after every dated one in both orders, and a lead
// without date or confidence after every lead with one, as the
// readmodel contracts order them.
func TestSortKeysFoldMissingLast(t *testing.T) {
	for _, day := range []string{"1900-01-01", "1969-12-31", "1970-01-01", "2026-11-22", "9999-12-31"} {
		up, down := issueKeys(day)
		uUp, uDown := issueKeys("")
		require.Less(t, up, uUp, "ascending: %s before undated", day)
		require.Greater(t, down, uDown, "descending: %s before undated", day)
		require.Greater(t, eventKey(day), eventKey(""), "leads: %s before undated", day)
	}
	for _, c := range []float64{0, 0.001, 1} {
		require.Greater(t, confKey(&c), confKey(nil), "confidence %g before none", c)
	}
}

// TestFuzzyLengthsNeverDropAMatch: every street name the fuzzy pass can
// match (similarity at least FuzzyMinSim) has a length inside
// fuzzyLengths of the query's name, so the length filter only drops
// properties the scorer would reject.
func TestFuzzyLengthsNeverDropAMatch(t *testing.T) {
	names := []string{"A", "ST", "ELM ST", "MAIN ST", "MAGNOLIA BLVD W", "UNIVERSITY ST", "MARTIN LUTHER KING JR WAY S",
		"108TH AVE NE", "NE 8TH ST", "ÉLAN CT", "AVENIDA DEL SOL", "Q00001 ZZZZ AVE", "BROADWAY", "BROADWAY E"}
	var cands []string
	for _, n := range names {
		cands = append(cands, n)
		for i := range len(n) {
			cands = append(cands, n[:i]+n[i+1:], n[:i]+"X"+n[i:], n+strings.Repeat("Y", i%5))
		}
	}
	for _, q := range names {
		lo, hi := fuzzyLengths(q)
		for _, c := range cands {
			if _, ok := propmatch.FuzzyConfidence(propmatch.Similarity(q, c)); !ok {
				continue
			}
			n := len([]rune(c))
			require.True(t, n >= lo && n <= hi, "%q matches %q but its length %d is outside [%d, %d]", c, q, n, lo, hi)
		}
	}
}

func TestPropertyPoolComplete(t *testing.T) {
	pool := func(total int, scores ...float64) *searchResult {
		var r searchResult
		r.Hits.Total = &struct {
			Value int64 `json:"value"`
		}{int64(total)}
		for i, s := range scores {
			r.Hits.Hits = append(r.Hits.Hits, searchHit{ID: fmt.Sprint(i), Sort: []any{json.Number(fmt.Sprint(s)), "id"}})
		}
		return &r
	}
	require.NoError(t, propertyPoolComplete(pool(2, 3, 1)), "everything came back")
	require.NoError(t, propertyPoolComplete(pool(9, 3, 3, 1)), "every street match came back: the fuzzy pass does not run")
	require.ErrorContains(t, propertyPoolComplete(pool(9, 3, 3, 3)), "overflow maxPropertyScan", "street matches were cut")
	require.ErrorContains(t, propertyPoolComplete(pool(9, 1, 1, 1)), "overflow maxPropertyScan", "fuzzy candidates were cut")
}
