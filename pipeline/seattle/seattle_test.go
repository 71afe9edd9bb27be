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
	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/pipeline/data"
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
	require.NotEmpty(t, im.lines)
	for i, line := range im.lines {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
		require.NoError(t, err)
		schema, ok := schemas[im.envs[i].Type]
		require.True(t, ok, "event %d has type %s, which the importer does not write", i, im.envs[i].Type)
		require.NoError(t, schema.Validate(inst), "event %d: %s", i, line)
	}
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
