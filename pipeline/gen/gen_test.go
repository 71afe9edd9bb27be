package gen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/events/eventstest"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/pipeline/data"
)

var testNow = time.Date(2025, 11, 22, 0, 0, 0, 0, time.UTC)

func hashRun(t *testing.T, p Params) ([]byte, Report) {
	t.Helper()
	h := sha256.New()
	rep, err := Generate(context.Background(), p, func(env events.Envelope) error {
		b, err := json.Marshal(env)
		if err != nil {
			return err
		}
		h.Write(b)
		return nil
	})
	require.NoError(t, err)
	return h.Sum(nil), rep
}

func TestDeterministic(t *testing.T) {
	a, repA := hashRun(t, Params{Permits: 5000, Seed: 7, Now: testNow})
	b, _ := hashRun(t, Params{Permits: 5000, Seed: 7, Now: testNow})
	c, _ := hashRun(t, Params{Permits: 5000, Seed: 8, Now: testNow})
	assert.Equal(t, a, b, "same seed, same events")
	assert.NotEqual(t, a, c, "another seed, other events")
	assert.Equal(t, 5000, repA.Permits)
	assert.Equal(t, repA.Permits+repA.Properties, repA.Events)
}

// TestEvents checks one run event by event: strict decoding, the schema,
// ids, properties before their permits, dates and statuses.
func TestEvents(t *testing.T) {
	const n = 20000
	schemas := map[events.Type]*jsonschema.Schema{
		events.PermitUpserted:   eventstest.Schema(t, "permit.upserted.json"),
		events.PropertyUpserted: eventstest.Schema(t, "property.upserted.json"),
	}
	props := map[string]events.Property{}
	numbers := map[string]bool{}
	states := map[string]int{}
	cities := map[string]int{}
	oldest := testNow.AddDate(0, 0, -window).Format(time.DateOnly)
	today := testNow.Format(time.DateOnly)
	i := 0
	rep, err := Generate(context.Background(), Params{Permits: n, Seed: 42, Now: testNow}, func(env events.Envelope) error {
		i++
		line, err := json.Marshal(env)
		require.NoError(t, err)
		env, err = events.Decode(line)
		require.NoError(t, err)
		assert.EqualValues(t, 1, env.EntityVersion)
		assert.Equal(t, "synthetic", env.Source)
		assert.True(t, env.OccurredAt.Equal(testNow))
		if i <= 2000 || i%50 == 0 {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
			require.NoError(t, err)
			require.NoError(t, schemas[env.Type].Validate(inst), "%s", line)
			require.NoError(t, indexer.Check(line), "the indexer's rules: %s", line)
		}
		switch env.Type {
		case events.PropertyUpserted:
			var p events.Property
			require.NoError(t, events.DecodeData(env, &p))
			_, dup := props[env.EntityID]
			require.False(t, dup, "property %s emitted twice", env.EntityID)
			props[env.EntityID] = p
			require.Equal(t, address.PropertyID(address.Normalize(p.CanonicalAddress), "", ""), env.EntityID,
				"the read side derives the id from the canonical address %q", p.CanonicalAddress)
		case events.PermitUpserted:
			var p events.Permit
			require.NoError(t, events.DecodeData(env, &p))
			require.False(t, numbers[p.PermitNumber], "permit number %s repeats", p.PermitNumber)
			numbers[p.PermitNumber] = true
			require.Equal(t, events.PermitDocID("synthetic", p.PermitNumber), env.EntityID)
			require.Regexp(t, `^SYN-42-\d+$`, p.PermitNumber)
			prop, ok := props[p.PropertyID]
			require.True(t, ok, "permit %s before its property", p.PermitNumber)
			require.Equal(t, prop.NormalizedAddress, p.Address.Line)
			require.Equal(t, prop.Zipcode, p.Address.Zipcode)
			require.Equal(t, prop.City, p.Address.City)
			states[p.Address.State]++
			cities[p.Address.City+", "+p.Address.State]++

			require.NotEmpty(t, p.ApplicationDate)
			require.LessOrEqual(t, p.ApplicationDate, today)
			switch p.Status {
			case "In Review":
				require.Empty(t, p.IssueDate)
			case "Completed":
				require.NotEmpty(t, p.CompletionDate)
				require.LessOrEqual(t, p.CompletionDate, today)
				require.Less(t, p.IssueDate, p.CompletionDate)
			case "Issued", "Expired":
				require.Empty(t, p.CompletionDate)
			default:
				t.Fatalf("unexpected status %q", p.Status)
			}
			if p.IssueDate != "" {
				require.GreaterOrEqual(t, p.IssueDate, oldest)
				require.LessOrEqual(t, p.IssueDate, today)
				require.LessOrEqual(t, p.ApplicationDate, p.IssueDate)
				require.Equal(t, p.Status == "Expired", p.ExpirationDate < today && p.Status != "Completed", "status %s expiry %s", p.Status, p.ExpirationDate)
			}
			require.NotNil(t, p.Valuation)
			require.GreaterOrEqual(t, *p.Valuation, 100.0)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, n, rep.Permits)
	assert.Len(t, numbers, n)
	assert.Len(t, props, rep.Properties)
	assert.Less(t, rep.Properties, n, "some addresses have several permits")
	assert.Greater(t, rep.Properties, n/2)

	// The mix: shares within a few points of the documented ones.
	for _, k := range kinds {
		assert.InDelta(t, k.share, float64(rep.WorkTypes[k.workType])/n, 0.02, k.workType)
	}
	assert.InDelta(t, 0.04, float64(rep.Statuses["In Review"])/n, 0.01)
	assert.Greater(t, rep.Statuses["Completed"], n/3)
	assert.Positive(t, rep.Statuses["Expired"])
	assert.Positive(t, rep.Statuses["Issued"])

	// Spread by population: every big state, the biggest cities.
	assert.Greater(t, len(states), 45)
	assert.Greater(t, states["CA"], states["WA"])
	assert.Greater(t, states["WA"], states["WY"])
	assert.Positive(t, cities["SEATTLE, WA"])
	assert.Greater(t, cities["NEW YORK, NY"], cities["SEATTLE, WA"])
}

func TestStreetsAreNormalised(t *testing.T) {
	require.NotEmpty(t, streets)
	for _, s := range streets {
		line := "123 " + s
		assert.Equal(t, line, address.Normalize(line).Street(), s)
	}
}

func TestParams(t *testing.T) {
	_, err := Generate(context.Background(), Params{Permits: 0}, func(events.Envelope) error { return nil })
	require.EqualError(t, err, "gen: Permits must be 1 to 1000000000")
	// Past the bound the address bits outgrew the memory, or their count
	// overflowed (a panic in makeslice).
	_, err = Generate(context.Background(), Params{Permits: 9_000_000_000_000_000_000}, func(events.Envelope) error { return nil })
	require.EqualError(t, err, "gen: Permits must be 1 to 1000000000")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Generate(ctx, Params{Permits: 10, Now: testNow}, func(events.Envelope) error { return nil })
	require.ErrorIs(t, err, context.Canceled)

	rep, err := Generate(context.Background(), Params{Permits: 3, Seed: 1}, func(events.Envelope) error { return nil })
	require.NoError(t, err, "zero Now uses the system clock")
	assert.Equal(t, 3, rep.Permits)
}

// BenchmarkGenerate measures generation into a discarding emit: the cost
// a benchmark pays to load N permits, excluding its own projection.
func BenchmarkGenerate(b *testing.B) {
	const n = 200000
	for b.Loop() {
		_, err := Generate(context.Background(), Params{Permits: n, Seed: 1, Now: testNow}, func(events.Envelope) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/permit")
}

// TestPlacesRoundTrip: the canonical address of every place parses back
// to its city and state, so the read side finds generated properties.
func TestPlacesRoundTrip(t *testing.T) {
	places, err := loadPlaces(data.Open, nil)
	require.NoError(t, err)
	require.Greater(t, len(places), 29000)
	bad := 0
	for _, pl := range places {
		p := address.Normalize(address.Canonical("100 MAIN ST", pl.city, pl.state, pl.zips[0]))
		if p.City != pl.city || p.State != pl.state || p.Street() != "100 MAIN ST" {
			bad++
			t.Errorf("%s, %s: parsed %+v", pl.city, pl.state, p)
		}
	}
	assert.Zero(t, bad)
}

// TestJSONMatchesEncodingJSON: the hand encoder writes what json.Marshal
// writes, for generated payloads and for one with every field set.
func TestJSONMatchesEncodingJSON(t *testing.T) {
	n := 0
	_, err := Generate(context.Background(), Params{Permits: 3000, Seed: 3, Now: testNow}, func(env events.Envelope) error {
		n++
		var want []byte
		var err error
		switch env.Type {
		case events.PermitUpserted:
			var p events.Permit
			require.NoError(t, events.DecodeData(env, &p))
			want, err = json.Marshal(&p)
		case events.PropertyUpserted:
			var p events.Property
			require.NoError(t, events.DecodeData(env, &p))
			want, err = json.Marshal(&p)
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(env.Data))
		return nil
	})
	require.NoError(t, err)

	v, lat, units := 1e22, 1e-7, 3
	full := events.Permit{
		PermitNumber: "N<1>", PermitType: "T \"q\"", WorkType: "W&", ActionType: "A", Status: "S\n",
		ApplicationDate: "2024-01-01", IssueDate: "2024-01-02", CompletionDate: "2024-01-03", ExpirationDate: "2024-01-04",
		Description: "Café – ☃", DescriptionDerived: true, Contractor: "C\\", Valuation: &v, ValuationNote: "placeholder_1",
		HousingUnits: &units, Address: events.PermitAddress{Line: "L", City: "C", State: "WA", Zipcode: "98101", ZipSource: "source", ZipConfidence: 0.75},
		Lat: &lat, Lon: nil, PropertyID: "prop_x", Source: "synthetic", SourceURL: "https://x.example/?a=1&b=2",
	}
	want, err := json.Marshal(&full)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(appendPermit(nil, &full)))
	prop := events.Property{CanonicalAddress: "A", NormalizedAddress: "B", City: "C", State: "D", Zipcode: "1", ParcelID: "P", Lat: &lat, Lon: &v}
	want, err = json.Marshal(&prop)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(appendProperty(nil, &prop)))
}

// TestStates: with States, every permit and property is in those states
// (any case), spread over all of their places and only theirs.
func TestStates(t *testing.T) {
	all, err := loadPlaces(data.Open, nil)
	require.NoError(t, err)
	wa := 0
	for _, pl := range all {
		if pl.state == "WA" {
			wa++
		}
	}
	require.Positive(t, wa)
	states := map[string]int{}
	rep, err := Generate(context.Background(), Params{Permits: 500, Seed: 1, Now: testNow, States: []string{"wa"}}, func(env events.Envelope) error {
		switch env.Type {
		case events.PermitUpserted:
			var p events.Permit
			require.NoError(t, events.DecodeData(env, &p))
			states[p.Address.State]++
		case events.PropertyUpserted:
			var p events.Property
			require.NoError(t, events.DecodeData(env, &p))
			states[p.State]++
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, wa, rep.Places)
	require.Equal(t, map[string]int{"WA": rep.Permits + rep.Properties}, states)
}
