package seattle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/events/eventstest"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/readmodel/address"
)

// imported is one import of the bundled data, shared by the tests.
type imported struct {
	rep   Report
	lines [][]byte // one json.Marshal(envelope) per event
	envs  []events.Envelope
	byID  map[string]events.Envelope
}

var (
	bundledOnce sync.Once
	bundled     imported
	bundledErr  error
)

func runImport(open func(string) (io.ReadCloser, error)) (imported, error) {
	out := imported{byID: map[string]events.Envelope{}}
	rep, err := Import(context.Background(), open, func(env events.Envelope) error {
		b, err := json.Marshal(env)
		if err != nil {
			return err
		}
		out.lines = append(out.lines, b)
		out.envs = append(out.envs, env)
		out.byID[env.EntityID] = env
		return nil
	})
	out.rep = rep
	return out, err
}

func importBundled(t *testing.T) imported {
	t.Helper()
	bundledOnce.Do(func() { bundled, bundledErr = runImport(data.Open) })
	require.NoError(t, bundledErr)
	return bundled
}

func TestImportCounts(t *testing.T) {
	im := importBundled(t)
	rep := im.rep

	com, ok := rep.File(data.SeattleCommercialPermits)
	require.True(t, ok)
	assert.Equal(t, SourceCommercial, com.Source)
	assert.EqualValues(t, 20151204, com.Version)
	assert.Equal(t, 10246, com.Rows)
	assert.Equal(t, 10246, com.Permits)
	assert.Equal(t, 0, com.BadRows, "the commercial export has no bad rows: %v", com.Bad)
	assert.Equal(t, map[string]int{
		"valuation_placeholder_1": 723,
		"zip_nearest":             10246,
	}, com.Notes)

	mf, ok := rep.File(data.SeattleMultifamilyPermits)
	require.True(t, ok)
	assert.Equal(t, SourceMultifamily, mf.Source)
	assert.EqualValues(t, 20251106, mf.Version)
	assert.Equal(t, 4180, mf.Rows)
	assert.Equal(t, 4180, mf.Permits)
	assert.Equal(t, 0, mf.BadRows, "the multifamily export has no bad rows: %v", mf.Bad)
	assert.Equal(t, map[string]int{
		"city_corrected_to_seattle":    1,   // SEATLLE
		"city_missing_assumed_seattle": 123, //
		"no_address":                   11,
		"no_coordinates":               14,
		"state_missing_assumed_wa":     96,
		"valuation_missing":            1,
		"valuation_placeholder_0":      4,
		"zip_invalid_in_source":        1, // "83.0"
		"zip_nearest":                  188,
		"zip_unknown":                  14,
	}, mf.Notes)

	assert.Equal(t, 8230, rep.Properties)
	assert.Equal(t, 10246+4180+8230, rep.Events)
	assert.Len(t, im.envs, rep.Events)
	assert.Equal(t, ZipCheck{Compared: 3978, Agreed: 3092}, rep.ZipCheck)

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Contains(t, text.String(), "seattle_commercial_permits_2010_2015.csv (seattle_sdci_commercial, version 20151204): 10246 rows, 10246 permits, 0 bad rows")
	assert.Contains(t, text.String(), "note valuation_placeholder_1")
}

func permitOf(t *testing.T, im imported, source, number string) (events.Envelope, events.Permit) {
	t.Helper()
	env, ok := im.byID[events.PermitDocID(source, number)]
	require.True(t, ok, "permit %s %s", source, number)
	var p events.Permit
	require.NoError(t, events.DecodeData(env, &p))
	return env, p
}

func propertyOf(t *testing.T, im imported, id string) events.Property {
	t.Helper()
	env, ok := im.byID[id]
	require.True(t, ok, "property %s", id)
	require.Equal(t, events.PropertyUpserted, env.Type)
	var p events.Property
	require.NoError(t, events.DecodeData(env, &p))
	return p
}

func TestSpotChecks(t *testing.T) {
	im := importBundled(t)

	t.Run("commercial 6268348 at 600 UNIVERSITY ST", func(t *testing.T) {
		env, p := permitOf(t, im, SourceCommercial, "6268348")
		assert.Equal(t, "seattle_sdci_commercial:6268348", env.EntityID)
		assert.EqualValues(t, 20151204, env.EntityVersion)
		assert.Equal(t, "2015-12-04T00:00:00Z", env.OccurredAt.Format("2006-01-02T15:04:05Z07:00"))
		assert.Equal(t, SourceCommercial, env.Source)
		assert.Equal(t, "Construction", p.PermitType)
		assert.Equal(t, "ADD/ALT", p.ActionType)
		assert.Equal(t, events.WorkAdditionAlter, p.WorkType)
		assert.Equal(t, "Permit Closed", p.Status)
		assert.Equal(t, "2010-12-06", p.ApplicationDate)
		assert.Equal(t, "2010-12-06", p.IssueDate)
		assert.Equal(t, "2011-08-19", p.CompletionDate)
		assert.Equal(t, "2012-06-06", p.ExpirationDate)
		assert.Equal(t, "Commercial construction: addition/alteration (no plan review)", p.Description)
		assert.True(t, p.DescriptionDerived)
		require.NotNil(t, p.Valuation)
		assert.InDelta(t, 149000, *p.Valuation, 0)
		assert.Empty(t, p.ValuationNote)
		assert.Equal(t, events.PermitAddress{Line: "600 UNIVERSITY ST", City: "SEATTLE", State: "WA", Zipcode: "98101", ZipSource: "nearest_zip", ZipConfidence: 0.8}, p.Address)
		require.NotNil(t, p.Lat)
		assert.InDelta(t, 47.60967252, *p.Lat, 1e-9)
		assert.InDelta(t, -122.3323065, *p.Lon, 1e-9)

		// The read side finds the same property from free text.
		want := address.PropertyID(address.Normalize("600 University Street, Seattle"), "", "WA")
		assert.Equal(t, want, p.PropertyID)
		prop := propertyOf(t, im, p.PropertyID)
		assert.Equal(t, "600 UNIVERSITY ST, SEATTLE, WA 98101", prop.CanonicalAddress)
		assert.Equal(t, "600 UNIVERSITY ST", prop.NormalizedAddress)
		assert.Equal(t, "SEATTLE", prop.City)
		assert.Equal(t, "WA", prop.State)
		assert.Equal(t, "98101", prop.Zipcode)
		require.NotNil(t, prop.Lat)
	})

	t.Run("commercial placeholder value 1 keeps its record", func(t *testing.T) {
		_, p := permitOf(t, im, SourceCommercial, "6250271")
		assert.Nil(t, p.Valuation)
		assert.Equal(t, "placeholder_1", p.ValuationNote)
		assert.Equal(t, "Demolition", p.PermitType)
		assert.Equal(t, events.WorkDemolition, p.WorkType)
		assert.Equal(t, "Commercial demolition (no plan review)", p.Description)
		assert.Equal(t, "2010-05-27", p.ApplicationDate)
	})

	t.Run("multifamily 6062967-PH", func(t *testing.T) {
		env, p := permitOf(t, im, SourceMultifamily, "6062967-PH")
		assert.EqualValues(t, 20251106, env.EntityVersion)
		assert.Equal(t, "Building", p.PermitType)
		assert.Equal(t, "New", p.ActionType)
		assert.Equal(t, events.WorkNewConstruction, p.WorkType)
		assert.Equal(t, "Expired", p.Status)
		assert.Equal(t, "2014-08-15", p.ApplicationDate)
		assert.Equal(t, "2021-12-13", p.IssueDate)
		assert.Empty(t, p.CompletionDate)
		require.NotNil(t, p.Valuation)
		assert.InDelta(t, 3203426, *p.Valuation, 0)
		require.NotNil(t, p.HousingUnits)
		assert.Equal(t, 14, *p.HousingUnits)
		assert.False(t, p.DescriptionDerived)
		assert.True(t, strings.HasPrefix(p.Description, "Phased project:"))
		assert.Equal(t, events.PermitAddress{Line: "416 E HARRISON ST", City: "SEATTLE", State: "WA", Zipcode: "98102", ZipSource: "source", ZipConfidence: 1}, p.Address)
		assert.Equal(t, "https://services.seattle.gov/portal/customize/LinkToRecord.aspx?altId=6062967-PH", p.SourceURL)
	})

	t.Run("multifamily contractor and completion", func(t *testing.T) {
		_, p := permitOf(t, im, SourceMultifamily, "6146807-CN")
		assert.Equal(t, "DOUG BUCY", p.Contractor)
		assert.Equal(t, "2019-12-27", p.CompletionDate)
		assert.Equal(t, "98118", p.Address.Zipcode)
	})

	t.Run("multifamily invalid source ZIP falls back to the nearest", func(t *testing.T) {
		_, p := permitOf(t, im, SourceMultifamily, "6873831-CN")
		assert.Equal(t, "711 M L KING JR WAY S", p.Address.Line)
		assert.Equal(t, "nearest_zip", p.Address.ZipSource)
		assert.Regexp(t, `^981\d\d$`, p.Address.Zipcode)
		assert.GreaterOrEqual(t, p.Address.ZipConfidence, 0.6)
		assert.LessOrEqual(t, p.Address.ZipConfidence, 0.8)
	})

	t.Run("multifamily without address keeps its record", func(t *testing.T) {
		_, p := permitOf(t, im, SourceMultifamily, "6485468-CN")
		assert.Empty(t, p.Address.Line)
		assert.Empty(t, p.PropertyID)
		assert.Empty(t, p.Address.Zipcode)
		assert.Empty(t, p.Address.ZipSource)
		assert.Nil(t, p.Lat)
		assert.Nil(t, p.Lon)
		assert.Equal(t, "SEATTLE", p.Address.City)
	})

	t.Run("multifamily missing cost", func(t *testing.T) {
		_, p := permitOf(t, im, SourceMultifamily, "6453674-CN")
		assert.Nil(t, p.Valuation)
		assert.Equal(t, "missing", p.ValuationNote)
	})
}

func TestPropertiesAndPermitsAgree(t *testing.T) {
	im := importBundled(t)
	props := map[string]int{}
	permits := 0
	for _, env := range im.envs {
		switch env.Type {
		case events.PropertyUpserted:
			require.Zero(t, permits, "properties come before permits")
			props[env.EntityID] = 0
		case events.PermitUpserted:
			permits++
			var p events.Permit
			require.NoError(t, events.DecodeData(env, &p))
			if p.PropertyID == "" {
				continue
			}
			_, ok := props[p.PropertyID]
			require.True(t, ok, "permit %s points at unknown property %s", env.EntityID, p.PropertyID)
			props[p.PropertyID]++
		default:
			t.Fatalf("unexpected event type %s", env.Type)
		}
	}
	for id, n := range props {
		require.Positive(t, n, "property %s has no permit", id)
	}
	// Both files share properties: 600 UNIVERSITY ST-style addresses
	// appear in both exports.
	assert.Equal(t, 8230, len(props))
}

func TestDeterministic(t *testing.T) {
	first := importBundled(t)
	second, err := runImport(data.Open)
	require.NoError(t, err)
	require.Equal(t, len(first.lines), len(second.lines))
	h1, h2 := sha256.New(), sha256.New()
	for i := range first.lines {
		h1.Write(first.lines[i])
		h2.Write(second.lines[i])
	}
	assert.Equal(t, h1.Sum(nil), h2.Sum(nil), "two imports differ")
}

// TestEventsDecodeStrictly runs every event through the decoder the
// indexer uses.
func TestEventsDecodeStrictly(t *testing.T) {
	im := importBundled(t)
	for i, line := range im.lines {
		env, err := events.Decode(line)
		require.NoError(t, err, "event %d", i)
		switch env.Type {
		case events.PermitUpserted:
			var p events.Permit
			require.NoError(t, events.DecodeData(env, &p), "event %d", i)
			require.Equal(t, events.PermitDocID(p.Source, p.PermitNumber), env.EntityID)
			require.Equal(t, p.Source, env.Source)
		case events.PropertyUpserted:
			var p events.Property
			require.NoError(t, events.DecodeData(env, &p), "event %d", i)
			require.Regexp(t, `^prop_[0-9a-f]{32}$`, env.EntityID)
		default:
			t.Fatalf("event %d: unexpected type %s", i, env.Type)
		}
	}
}

// TestEventsMatchSchema validates every emitted event against its JSON
// Schema in events/schemas.
func TestEventsMatchSchema(t *testing.T) {
	im := importBundled(t)
	schemas := map[events.Type]*jsonschema.Schema{
		events.PermitUpserted:   eventstest.Schema(t, "permit.upserted.json"),
		events.PropertyUpserted: eventstest.Schema(t, "property.upserted.json"),
	}
	for i, line := range im.lines {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
		require.NoError(t, err)
		require.NoError(t, schemas[im.envs[i].Type].Validate(inst), "event %d: %s", i, line)
	}
}

// withFile serves content instead of the bundled file name.
func withFile(name, content string) func(string) (io.ReadCloser, error) {
	return func(n string) (io.ReadCloser, error) {
		if n == name {
			return io.NopCloser(strings.NewReader(content)), nil
		}
		return data.Open(n)
	}
}

func TestBadRows(t *testing.T) {
	const header = "Application/Permit Number,Permit Type,Address,Category,Action Type,Work Type,Value,Application Date,Issue Date,Final Date,Expiration Date,Status,Master Use Permit,Latitude,Longitude\n"
	good := "1,Construction,600 UNIVERSITY ST,COMMERCIAL,ADD/ALT,Plan Review,1000,12/6/10,12/6/10,,6/6/12,Permit Issued,,47.60967252,-122.3323065\n"
	rows := header +
		good + // line 2: kept
		",Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 3: missing number
		"3,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,13/45/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 4: bad application date
		"4,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,2010-12-06,,,Permit Issued,,47.6,-122.3\n" + // 5: bad issue date
		"5,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,lots,12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 6: bad value
		"6,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,-5,12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" + // 7: negative value
		"7,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,12/6/10,,,Permit Issued,,north,-122.3\n" + // 8: bad coordinates
		"8,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,5,12/6/10,12/6/10,,,Permit Issued,,47.6\n" + // 9: too few fields
		good + // 10: duplicate number
		"11,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,\"1,250\",12/6/10,12/6/10,,,Permit Issued,,47.6,-122.3\n" // 11: kept, 1250

	im, err := runImport(withFile(data.SeattleCommercialPermits, rows))
	require.NoError(t, err)
	com, ok := im.rep.File(data.SeattleCommercialPermits)
	require.True(t, ok)
	assert.Equal(t, 10, com.Rows)
	assert.Equal(t, 2, com.Permits)
	assert.Equal(t, 8, com.BadRows)
	assert.Equal(t, []Bad{
		{Reason: "missing_permit_number", Rows: 1, Lines: []int{3}},
		{Reason: "bad_application_date", Rows: 1, Lines: []int{4}},
		{Reason: "bad_issue_date", Rows: 1, Lines: []int{5}},
		{Reason: "bad_value", Rows: 2, Lines: []int{6, 7}},
		{Reason: "bad_coordinates", Rows: 1, Lines: []int{8}},
		{Reason: "malformed_row", Rows: 1, Lines: []int{9}},
		{Reason: "duplicate_permit_number", Rows: 1, Lines: []int{10}},
	}, com.Bad)

	_, p := permitOf(t, im, SourceCommercial, "11")
	require.NotNil(t, p.Valuation)
	assert.InDelta(t, 1250, *p.Valuation, 0)

	var text bytes.Buffer
	require.NoError(t, im.rep.WriteText(&text))
	assert.Contains(t, text.String(), "bad bad_value")
	assert.Contains(t, text.String(), "[6 7]")
}

func TestMultifamilyBadRows(t *testing.T) {
	header := strings.Join(multifamilyHeader, ",") + "\n"
	row := func(num, units, cost, applied, lat string) string {
		f := make([]string, len(multifamilyHeader))
		f[1], f[4], f[5], f[6] = num, "Building", "New", "Build"
		f[7], f[10], f[11] = units, cost, applied
		f[17], f[18], f[19], f[20] = "1 MAIN ST", "SEATTLE", "WA", "98101.0"
		f[23], f[24] = lat, "-122.33"
		return strings.Join(f, ",") + "\n"
	}
	rows := header +
		row("A-1", "2", `"400,000"`, "2014-06-17", "47.61") + // 2 kept
		row("A-2", "2", "400", "2014-06-31", "47.61") + // 3 bad date
		row("A-3", "two", "400", "2014-06-17", "47.61") + // 4 bad units
		row("A-4", "2", "400", "2014-06-17", "") + // 5 lat without lon
		row("A-5", "2", "4OO", "2014-06-17", "47.61") // 6 bad value
	im, err := runImport(withFile(data.SeattleMultifamilyPermits, rows))
	require.NoError(t, err)
	mf, ok := im.rep.File(data.SeattleMultifamilyPermits)
	require.True(t, ok)
	assert.Equal(t, 5, mf.Rows)
	assert.Equal(t, 1, mf.Permits)
	assert.Equal(t, []Bad{
		{Reason: "bad_application_date", Rows: 1, Lines: []int{3}},
		{Reason: "bad_housing_units", Rows: 1, Lines: []int{4}},
		{Reason: "bad_coordinates", Rows: 1, Lines: []int{5}},
		{Reason: "bad_value", Rows: 1, Lines: []int{6}},
	}, mf.Bad)
	_, p := permitOf(t, im, SourceMultifamily, "A-1")
	assert.InDelta(t, 400000, *p.Valuation, 0)
	assert.Equal(t, "98101", p.Address.Zipcode)
}

func TestUnexpectedHeaderFails(t *testing.T) {
	n := 0
	_, err := Import(context.Background(), withFile(data.SeattleMultifamilyPermits, "PermitNum,Other\n"), func(events.Envelope) error { n++; return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unexpected header")
	assert.Zero(t, n, "nothing is emitted unless both files were read")
}

func TestImportStopsOnEmitError(t *testing.T) {
	stop := io.ErrShortWrite
	n := 0
	_, err := Import(context.Background(), data.Open, func(events.Envelope) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 3, n)
}

func TestImportHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Import(ctx, data.Open, func(events.Envelope) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
}

func TestNearestZIP(t *testing.T) {
	idx, err := loadZipIndex(data.Open, "WA")
	require.NoError(t, err)
	tests := []struct {
		name     string
		lat, lon float64
		zip      string
		conf     float64
	}{
		{"600 University St, downtown", 47.60967252, -122.3323065, "98101", 0.8},
		{"Capitol Hill", 47.62218901, -122.32586296, "98102", 0.8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zip, _, conf := idx.nearest(tt.lat, tt.lon)
			assert.Equal(t, tt.zip, zip)
			assert.InDelta(t, tt.conf, conf, 0)
		})
	}
	t.Run("PO-box ZIPs on the city centre are not candidates", func(t *testing.T) {
		zip, _, _ := idx.nearest(47.6062, -122.3321)
		assert.NotContains(t, []string{"98111", "98114", "98124", "98129", "98131", "98138", "98145", "98160", "98161", "98174", "98181", "98185", "98190", "98191"}, zip)
	})
}

func TestParsers(t *testing.T) {
	t.Run("dates", func(t *testing.T) {
		for _, tt := range []struct{ in, layout, want string }{
			{"12/6/10", "1/2/06", "2010-12-06"},
			{"6/17/05", "1/2/06", "2005-06-17"},
			{"", "1/2/06", ""},
			{"2024-02-29", "2006-01-02", "2024-02-29"},
		} {
			got, ok := parseDate(tt.in, tt.layout)
			assert.True(t, ok, tt.in)
			assert.Equal(t, tt.want, got, tt.in)
		}
		for _, in := range []string{"2/30/12", "12/6/2010x", "13/1/10"} {
			_, ok := parseDate(in, "1/2/06")
			assert.False(t, ok, in)
		}
	})
	t.Run("valuation", func(t *testing.T) {
		for _, tt := range []struct {
			in   string
			want float64
			note string
			null bool
		}{
			{"3,203,426", 3203426, "", false},
			{"149000", 149000, "", false},
			{"1", 0, "placeholder_1", true},
			{"0", 0, "placeholder_0", true},
			{"", 0, "missing", true},
			{"1.5", 1.5, "", false},
		} {
			v, note, ok := parseValuation(tt.in)
			require.True(t, ok, tt.in)
			assert.Equal(t, tt.note, note, tt.in)
			if tt.null {
				assert.Nil(t, v, tt.in)
			} else {
				require.NotNil(t, v, tt.in)
				assert.InDelta(t, tt.want, *v, 0, tt.in)
			}
		}
		for _, in := range []string{"abc", "-3", "NaN", "Inf"} {
			_, _, ok := parseValuation(in)
			assert.False(t, ok, in)
		}
	})
	t.Run("source zip", func(t *testing.T) {
		for in, want := range map[string]string{"98102.0": "98102", "98102": "98102", "98102-1234": "98102", "83.0": "", "": "", "9810A": ""} {
			got, ok := sourceZIP(in)
			assert.Equal(t, want != "", ok, in)
			assert.Equal(t, want, got, in)
		}
	})
}

func BenchmarkImport(b *testing.B) {
	n := 0
	for b.Loop() {
		_, err := Import(context.Background(), data.Open, func(events.Envelope) error { n++; return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
}
