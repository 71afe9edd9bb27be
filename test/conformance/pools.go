package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
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
