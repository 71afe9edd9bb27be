package api

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/pipeline/data"
	gazimport "github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/gen"
	seaimport "github.com/permitd/permitd/pipeline/seattle"
	"github.com/permitd/permitd/pipeline/signals"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
)

// agree fails unless the hand-written encoding equals encoding/json's
// encoding of the reference struct.
func agree(t *testing.T, what string, ref any, got []byte) {
	t.Helper()
	want, err := json.Marshal(ref)
	require.NoError(t, err)
	if string(want) != string(got) {
		t.Fatalf("%s: encoders disagree\nencoding/json: %s\nhand-written:  %s", what, want, got)
	}
}

var encNow = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// bundledStore is a memory read model holding the bundled gazetteer, the
// real Seattle permits, 5,000 generated permits and their signals.
func bundledStore(t *testing.T) *memory.Store { return bundledStoreB(t) }

// BundledStore is bundledStoreB for package api_test (FuzzQueryBundled),
// with its service clock.
var BundledStore, BundledNow = bundledStoreB, encNow

func bundledStoreB(t testing.TB) *memory.Store {
	store := memory.New(memory.Params{NewResolver: func() memory.Resolver { return resolve.New() }})
	ix, err := indexer.New(indexer.Params{Writer: store, Lookup: store,
		DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
			t.Errorf("dead letter at offset %d: %v", m.Offset, reason)
			return nil
		}})
	require.NoError(t, err)
	var buf []events.Envelope
	flush := func() {
		for i := 0; i < len(buf); i += 4096 {
			part := buf[i:min(i+4096, len(buf))]
			msgs := make([]indexer.Message, 0, len(part))
			for j, e := range part {
				raw, err := json.Marshal(e)
				require.NoError(t, err)
				msgs = append(msgs, indexer.Message{Topic: "test", Offset: int64(j), Key: []byte(e.EntityID), Value: raw})
			}
			require.NoError(t, ix.HandleBatch(context.Background(), msgs))
		}
		buf = buf[:0]
	}
	var sig []events.Envelope
	pl, err := signals.New(signals.Params{AsOf: encNow}, func(e events.Envelope) error { sig = append(sig, e); return nil })
	require.NoError(t, err)
	collect := func(e events.Envelope) error { buf = append(buf, e); return pl.Add(e) }
	ctx := context.Background()
	_, err = gazimport.Import(ctx, data.Open, collect)
	require.NoError(t, err)
	flush()
	_, err = seaimport.Import(ctx, data.Open, collect)
	require.NoError(t, err)
	_, err = gen.Generate(ctx, gen.Params{Permits: 5000, Seed: 3, Now: encNow}, collect)
	require.NoError(t, err)
	flush()
	_, err = pl.Finish(ctx)
	require.NoError(t, err)
	buf = sig
	flush()
	return store
}

// qualityQueries are the resolve quality set's query texts.
func qualityQueries(t *testing.T) []string {
	f, err := os.Open("../readmodel/resolve/testdata/quality.tsv")
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "query\t") {
			continue
		}
		if q, _, _ := strings.Cut(line, "\t"); strings.TrimSpace(q) != "" {
			out = append(out, strings.TrimSpace(q))
		}
	}
	return out
}

// TestEncodersAgree compares every hand-written encoder with
// encoding/json over real reads of the bundled data.
func TestEncodersAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: loads the bundled gazetteer and permits")
	}
	store := bundledStore(t)
	ctx := t.Context()
	next := "eyJhIjoiYiJ9.c2ln"
	geoIDs := map[string]bool{}

	queries := qualityQueries(t)
	require.Greater(t, len(queries), 300)
	for _, text := range queries {
		cands, err := store.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: text, Limit: 20})
		require.NoError(t, err)
		agree(t, "resolve "+text, refResolve(text, cands), appendResolve(nil, text, cands))
		for _, cd := range cands {
			geoIDs[cd.Location.GeoID] = true
		}
	}
	seattle := events.GeoID("city", "1840021117")
	anchors := []string{events.GeoID("state", "WA"), events.GeoID("county", "53033"), seattle, events.GeoID("zip", "98101")}
	for _, id := range anchors {
		geoIDs[id] = true
	}
	var addrs []string
	nLoc, nPermits := 0, 0
	for id := range geoIDs {
		l, err := store.Location(ctx, readmodel.ParseGeoRef(id))
		if err != nil {
			continue
		}
		nLoc++
		agree(t, "location "+id, refLocation(l), appendLocation(nil, &l))
		page, err := store.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(id), Desc: true, Limit: 100})
		if err != nil {
			continue
		}
		nPermits += len(page.Permits)
		agree(t, "permits "+id, refPermits(id, page.Permits, &next), appendPermits(nil, id, page.Permits, &next))
		agree(t, "permits "+id, refPermits(id, page.Permits, nil), appendPermits(nil, id, page.Permits, nil))
		for _, h := range page.Permits {
			if a := h.Permit.Address.FullAddress; a != "" && len(addrs) < 300 {
				addrs = append(addrs, a)
			}
		}
	}
	require.Greater(t, nLoc, 100)
	require.Greater(t, nPermits, 1000)

	nProps := 0
	for _, a := range addrs {
		ms, err := store.SearchProperties(ctx, readmodel.PropertyQuery{Address: a, Limit: 1})
		require.NoError(t, err)
		if len(ms) == 0 {
			continue
		}
		nProps++
		agree(t, "property "+a, refProperty(a, ms[0]), appendProperty(nil, a, &ms[0]))
		id := ms[0].Property.PropertyID
		pp, err := store.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(id), Desc: true, Limit: 100})
		require.NoError(t, err)
		agree(t, "property permits "+id, refPropertyPermits(id, pp.Permits, &next), appendPropertyPermits(nil, id, pp.Permits, &next))
	}
	require.Greater(t, nProps, 50)

	cat, err := store.Catalog(ctx, readmodel.CatalogQuery{State: "WA"})
	require.NoError(t, err)
	require.NotEmpty(t, cat)
	agree(t, "catalog", refCatalog("WA", cat), appendCatalog(nil, "WA", cat))

	keys := append([]string{"no_such_key"}, events.PermitSignalKeys...)
	for _, id := range anchors {
		ls, err := store.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef(id), nil)
		require.NoError(t, err)
		agree(t, "geo signals "+id, refGeoLocationSignals(id, ls, nil), appendGeoLocationSignals(nil, id, &ls, nil))
		agree(t, "geo signals "+id, refGeoLocationSignals(id, ls, keys), appendGeoLocationSignals(nil, id, &ls, keys))
	}
	gs, err := store.SearchGeoSignals(ctx, readmodel.GeoSignalQuery{State: "WA", Limit: 100})
	require.NoError(t, err)
	require.NotEmpty(t, gs.Signals)
	agree(t, "geo search", refGeoSearch("WA", gs.Signals, &next), appendGeoSearch(nil, "WA", gs.Signals, &next))

	fresh := 30
	for _, id := range anchors {
		for _, sortBy := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
			page, err := store.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(id)}, Sort: sortBy, Limit: 100})
			require.NoError(t, err)
			require.NotEmpty(t, page.Leads, id)
			for _, mf := range []*int{nil, &fresh} {
				h := leadsHead{geoID: id, geoType: page.GeoType, keys: events.PermitSignalKeys, maxFresh: mf}
				for _, by := range []string{"none", "city", "zip"} {
					agree(t, "leads "+id+" "+by, refLeads(h, by, page.Leads, &next, encNow), appendLeads(nil, &h, by, page.Leads, &next, encNow))
				}
			}
		}
		st, err := store.PermitStats(ctx, readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(id)}, Today: "2026-01-15", TopN: readmodel.StatsTopN})
		require.NoError(t, err)
		h := leadsHead{geoID: id, geoType: st.GeoType, keys: events.PermitSignalKeys}
		agree(t, "stats "+id, refStats(h, st), appendStats(nil, &h, &st))
	}
}

// hostile strings and floats for the fuzzed comparison.
var (
	oddStrings = []string{"", "a", `q"uote`, `back\slash`, "ctl\x00\x01\x1f\x7f", "tab\tnl\nret\r\b\f", "<b>&amp;</b>",
		"caf\u00e9 \u6771\u4eac \U0001F600", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x80", "King County", "2025-13-40", "2024-02-29", "2023-02-29", "0000-01-01"}
	oddFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.33333, 1e-7, 2.5e-9, 1e21, 123456.789, 1e300, 47.6062, -122.3321}
)

func oddString(r *rand.Rand) string {
	if r.IntN(4) == 0 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return string(b)
	}
	return oddStrings[r.IntN(len(oddStrings))]
}

func oddFloat(r *rand.Rand) float64 {
	if r.IntN(3) == 0 {
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	}
	return oddFloats[r.IntN(len(oddFloats))]
}

func oddFloatPtr(r *rand.Rand) *float64 {
	if r.IntN(3) == 0 {
		return nil
	}
	f := oddFloat(r)
	return &f
}

func oddStrs(r *rand.Rand) []string {
	if r.IntN(3) == 0 {
		return nil
	}
	out := make([]string, r.IntN(4))
	for i := range out {
		out[i] = oddString(r)
	}
	return out
}

func oddRaw(r *rand.Rand) json.RawMessage {
	raws := []string{"", `{}`, `{"a": 1, "b" : [ 1.5 , "x <y> & z" ] }`, "{\"s\":\"\u2028\",\"n\":null,\"t\":true}", ` {"k":"a\"b\\"} `}
	return json.RawMessage(raws[r.IntN(len(raws))])
}

// TestEncodersAgreeOnOddValues compares the encoders with encoding/json
// over generated values: quotes, control characters, invalid UTF-8,
// HTML characters, line separators, nulls, empty lists, extreme floats.
func TestEncodersAgreeOnOddValues(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	s := func() string { return oddString(r) }
	for range 3000 {
		l := readmodel.Location{GeoID: s(), GeoType: readmodel.GeoType(s()), DisplayName: s(), FullAddress: s(), State: s(),
			County: s(), City: s(), Zipcode: s(), Jurisdiction: s(), Lat: oddFloat(r), Lon: oddFloat(r),
			PermitCount: r.Int64N(1e9) - 5, LatestPermitDate: s()}
		agree(t, "location", refLocation(l), appendLocation(nil, &l))
		cands := make([]readmodel.Candidate, r.IntN(3))
		for i := range cands {
			cands[i] = readmodel.Candidate{Location: l, Score: oddFloat(r), Confidence: oddFloat(r), MatchMethod: s(), Decision: s(), Reasons: oddStrs(r)}
		}
		text := s()
		agree(t, "resolve", refResolve(text, cands), appendResolve(nil, text, cands))

		var next *string
		if r.IntN(2) == 0 {
			n := s()
			next = &n
		}
		p := readmodel.Permit{PermitID: s(), PermitType: s(), WorkType: s(), Status: s(), IssueDate: s(), CompletionDate: s(),
			Contractor: s(), Valuation: oddFloatPtr(r), RawDescription: s(), Source: s()}
		p.Address.FullAddress, p.Address.City, p.Address.State, p.Address.Zipcode, p.Address.County, p.Address.Jurisdiction = s(), s(), s(), s(), s(), s()
		p.Lat, p.Lon = oddFloatPtr(r), oddFloatPtr(r)
		hits := []readmodel.PermitHit{{Permit: p, Match: readmodel.GeoLink{GeoID: s(), GeoType: readmodel.GeoType(s()), Confidence: oddFloat(r)}, DistanceM: oddFloatPtr(r)}}
		agree(t, "permits", refPermits(text, hits, next), appendPermits(nil, text, hits, next))
		agree(t, "property permits", refPropertyPermits(text, append(hits, hits...), next), appendPropertyPermits(nil, text, append(hits, hits...), next))

		m := readmodel.PropertyMatch{MatchConfidence: oddFloat(r), MatchType: s(), NormalizedInput: s(), MatchedFields: oddStrs(r)}
		m.Property.PropertyID, m.Property.CanonicalAddress, m.Property.State, m.Property.City, m.Property.ParcelID = s(), s(), s(), s(), s()
		m.Property.Lat, m.Property.Lon = oddFloatPtr(r), oddFloatPtr(r)
		agree(t, "property", refProperty(text, m), appendProperty(nil, text, &m))

		cat := []readmodel.CatalogEntry{{SignalKey: s(), ActiveSignalVersion: s(), ActiveWeightsProfileID: s(), Status: s(), Spec: oddRaw(r)}}
		agree(t, "catalog", refCatalog(text, cat), appendCatalog(nil, text, cat))

		g := readmodel.GeoSignal{SignalKey: s(), Value: oddRaw(r), Score: oddFloat(r), Confidence: oddFloat(r), Decision: s(),
			Reasons: oddStrs(r), ComputedAt: time.Unix(r.Int64N(4e9), 0).In(time.FixedZone("x", 3600)), GeoID: s(), GeoType: readmodel.GeoType(s()), DisplayName: s()}
		ls := readmodel.LocationSignals{GeoType: readmodel.GeoType(s()), State: s(), Signals: []readmodel.GeoSignal{g, g}}
		keys := oddStrs(r)
		agree(t, "geo signals", refGeoLocationSignals(text, ls, keys), appendGeoLocationSignals(nil, text, &ls, keys))
		agree(t, "geo search", refGeoSearch(text, ls.Signals, next), appendGeoSearch(nil, text, ls.Signals, next))

		leads := make([]readmodel.Lead, r.IntN(6))
		for i := range leads {
			ld := readmodel.Lead{LeadID: s(), SignalKey: s(), EventDateUsed: s(), SignalBasis: s(), Confidence: oddFloatPtr(r),
				ReasonCodes: oddStrs(r), PermitNumber: s(), Jurisdiction: s(), MapsURL: s()}
			if r.IntN(2) == 0 {
				ld.EventDateUsed = time.Date(2020+r.IntN(8), time.Month(1+r.IntN(12)), 1+r.IntN(31), 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
			}
			loc := &ld.Location
			loc.FullAddress, loc.City, loc.State, loc.Zipcode, loc.County = s(), s(), s(), s(), s()
			loc.CityNorm, loc.ZipcodeNorm, loc.CountyNorm = oddStrings[r.IntN(4)], oddStrings[r.IntN(4)], s()
			leads[i] = ld
		}
		var mf *int
		if r.IntN(2) == 0 {
			n := r.IntN(3650)
			mf = &n
		}
		h := leadsHead{geoID: s(), geoType: readmodel.GeoType(s()), keys: oddStrs(r), maxFresh: mf}
		if h.keys == nil {
			h.keys = []string{} // the handler always has a list
		}
		for _, by := range []string{"none", "city", "zip"} {
			agree(t, "leads "+by, refLeads(h, by, leads, next, encNow), appendLeads(nil, &h, by, leads, next, encNow))
		}
		vc := func() []readmodel.ValueCount {
			out := make([]readmodel.ValueCount, r.IntN(14))
			for i := range out {
				out[i] = readmodel.ValueCount{Value: s(), Count: r.Int64N(1000)}
			}
			return out
		}
		st := readmodel.PermitStats{GeoType: readmodel.GeoType(s()), Total: r.Int64N(1e6), BySignal: vc(), TopCounties: vc(), TopCities: vc(), TopZips: vc(),
			ConfidenceHigh: r.Int64N(9), ConfidenceMedium: r.Int64N(9), ConfidenceLow: r.Int64N(9),
			Fresh0to7: r.Int64N(9), Fresh8to14: r.Int64N(9), Fresh15to30: r.Int64N(9), Fresh31Plus: r.Int64N(9)}
		h.geoType = st.GeoType // the handler echoes the stats' anchor type
		agree(t, "stats", refStats(h, st), appendStats(nil, &h, &st))

		code, msg, rid := s(), s(), s()
		agree(t, "error", errorBody{Error: errorDetail{Code: code, Message: msg, RequestID: &rid}}, appendErrorBody(nil, code, msg, rid))
		agree(t, "gateway", gatewayBody{Message: msg}, appendGatewayBody(nil, msg))
	}
}

// TestEncodersDoNotAllocatePerItem: a 100-lead page into a warm buffer
// allocates nothing.
func TestEncodersDoNotAllocatePerItem(t *testing.T) {
	c := 0.8
	leads := make([]readmodel.Lead, 100)
	for i := range leads {
		leads[i] = readmodel.Lead{LeadID: "lead_x", SignalKey: "k", EventDateUsed: "2025-12-01", SignalBasis: "issued",
			Confidence: &c, ReasonCodes: []string{"a", "b"}, PermitNumber: "P-1"}
		leads[i].Location.CityNorm = []string{"seattle", "tacoma", ""}[i%3]
	}
	h := leadsHead{geoID: "state_WA", geoType: "state", keys: []string{"k"}}
	buf := make([]byte, 0, 1<<20)
	for _, by := range []string{"none", "city"} {
		allocs := testing.AllocsPerRun(20, func() { buf = appendLeads(buf[:0], &h, by, leads, nil, encNow) })
		require.Zero(t, allocs, by)
	}
}
