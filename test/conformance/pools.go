package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/resolve"
)

// propertyPoolDecoys is how many properties of a large city share the
// looked-up house number: more than a backend's candidate pool used to
// hold (2,000), so a pool cut in property_id order drops the match.
const propertyPoolDecoys = 2500

// largeCityPool: a city where thousands of properties share the house
// number of a misspelled address. The one fuzzy match has a property_id
// after every other (so a pool cut in id order loses it); the decoys'
// street names have the same length but are not similar. Every backend
// answers the match, as the memory backend does, or fails: never another
// property or nothing.
func largeCityPool(t *testing.T, e *Env) {
	e.Require(t, CapPropertySearch)
	e.Load(t, LocationEvents(t)...)
	lat, lon := 47.6, -122.3
	prop := func(norm string) (string, events.Envelope) {
		id := events.PropertyID("addr:" + norm + "|SEATTLE|WA")
		return id, mustEnv(t, events.PropertyUpserted, id, 1, events.Property{
			CanonicalAddress: norm + ", SEATTLE, WA 98199", NormalizedAddress: norm,
			City: "SEATTLE", State: "WA", Zipcode: "98199", Lat: &lat, Lon: &lon,
		})
	}
	// The match: of a few spellings of one street, the one whose id sorts
	// last; the decoys are the names whose ids sort before it.
	var target, targetStreet string
	var targetEnv events.Envelope
	for _, street := range []string{"MAGNOLIA BLVD W", "MAGNOLIA WAY W", "MAGNOLIA PL W", "MAGNOLIA LN W", "MAGNOLIA DR W"} {
		if id, env := prop("600 " + street); id > target {
			target, targetEnv, targetStreet = id, env, street
		}
	}
	envs := []events.Envelope{targetEnv}
	for i := 0; len(envs) <= propertyPoolDecoys; i++ {
		id, env := prop(fmt.Sprintf("600 Q%05d ZZZZ AVE", i))
		if id < target {
			envs = append(envs, env)
		}
	}
	e.Load(t, envs...)

	ms, err := e.B.SearchProperties(e.Ctx(), readmodel.PropertyQuery{Address: "600 " + strings.Replace(targetStreet, "MAGNOLIA", "MAGNOLAI", 1), City: "Seattle", Limit: 5})
	e.Check(t, CapPropertySearch, err)
	require.NotEmpty(t, ms, "the fuzzy match is in the candidate pool")
	require.Equal(t, target, ms[0].Property.PropertyID)
	require.Equal(t, "fuzzy", ms[0].MatchType)
	require.Len(t, ms, 1, "the decoys are not similar")

	// An exact street among the thousands sharing its number comes first.
	decoy := e.Properties[envs[len(envs)/2].EntityID]
	ms, err = e.B.SearchProperties(e.Ctx(), readmodel.PropertyQuery{Address: decoy.NormalizedAddress, City: "Seattle", Limit: 5})
	e.Check(t, CapPropertySearch, err)
	require.Len(t, ms, 1)
	require.Equal(t, decoy.PropertyID, ms[0].Property.PropertyID)
	require.Equal(t, "exact", ms[0].MatchType)
}

// resolvePoolDecoys is how many places share the looked-up name word:
// more than the OpenSearch backend's resolve pool (200 hits).
const resolvePoolDecoys = 260

// largeResolvePool: hundreds of places, each more populous than the
// target, have "Springfield" as one word of a longer name. For the exact
// name, a typo and a prefix, a backend's first answer is the reference
// index's (package resolve, the memory backend's): the pool a backend
// re-ranks must hold it even when more places match than the pool
// takes, so it may not be cut by population, id or anything but how
// well the name matches.
func largeResolvePool(t *testing.T, e *Env) {
	e.Require(t, CapResolve)
	e.Load(t, LocationEvents(t)...)
	target := events.GeoID("city", "1840099001")
	envs := []events.Envelope{mustEnv(t, events.LocationUpserted, target, 1, events.Location{
		GeoType: "city", Name: "Springfield", DisplayName: "Springfield, OR", State: "OR", StateName: "Oregon",
		City: "Springfield", StateGeoID: OR, Lat: 44.05, Lon: -123.02, Population: 62000, Incorporated: true,
	})}
	for i := range resolvePoolDecoys {
		id := events.GeoID("city", fmt.Sprintf("18400%05d", 20000+i))
		name := fmt.Sprintf("Springfield Township %03d", i)
		envs = append(envs, mustEnv(t, events.LocationUpserted, id, 1, events.Location{
			GeoType: "city", Name: name, DisplayName: name + ", WA", State: "WA", StateName: "Washington", City: name,
			StateGeoID: WA, Lat: 47 + float64(i)/1000, Lon: -120, Population: 900000 + int64(i), Incorporated: true,
		}))
	}
	e.Load(t, envs...)
	ref := resolve.New()
	for _, l := range e.Locations {
		ref.Upsert(l)
	}
	for _, text := range []string{"Springfield", "Springfeild", "Springfield, OR", "Springfi"} {
		q := readmodel.ResolveQuery{Text: text, Limit: 5}
		want := ref.Search(q)
		require.NotEmpty(t, want, text)
		if text != "Springfi" { // a prefix of every name: population decides
			require.Equal(t, target, want[0].Location.GeoID, "the reference answers the exact name first for %q", text)
		}
		got, err := e.B.ResolveCandidates(e.Ctx(), q)
		e.Check(t, CapResolve, err)
		require.NotEmpty(t, got, text)
		require.Equal(t, want[0].Location.GeoID, got[0].Location.GeoID, "first answer for %q", text)
		require.Equal(t, want[0].Score, got[0].Score, text)
		require.Equal(t, want[0].Decision, got[0].Decision, text)
	}
}
