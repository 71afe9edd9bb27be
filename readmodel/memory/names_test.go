package memory_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// TestStatsTopListsSpellLocations: top lists name cities and counties as
// their locations spell them, follow a rename (and the cached answer
// with it), and show a key no location spells as it is.
func TestStatsTopListsSpellLocations(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Params{})
	locs := []readmodel.Location{
		{GeoID: "state:WA", GeoType: readmodel.GeoState, Name: "Washington", Version: 1},
		{GeoID: "county:53033", GeoType: readmodel.GeoCounty, Name: "King County", Version: 1},
		{GeoID: "city:1", GeoType: readmodel.GeoCity, Name: "Seattle", Version: 1},
	}
	conf := 0.9
	lead := func(id, city, county string) readmodel.Lead {
		return readmodel.Lead{LeadID: id, SignalKey: "k", EventDateUsed: "2026-01-01", Confidence: &conf, Version: 1, GeoIDs: []string{"state:WA"},
			Location: readmodel.LeadLocation{CityNorm: city, CountyNorm: county, ZipcodeNorm: "98101"}}
	}
	_, err := s.Apply(ctx, readmodel.Batch{Locations: locs, Leads: []readmodel.Lead{
		lead("a", "seattle", "king county"), lead("b", "seattle", "king county"), lead("c", "tukwila", "king county"),
	}})
	require.NoError(t, err)
	q := readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef("state:WA")}, Today: "2026-01-15", TopN: 10}
	st, err := s.PermitStats(ctx, q)
	require.NoError(t, err)
	require.Equal(t, []readmodel.ValueCount{{Value: "Seattle", Count: 2}, {Value: "tukwila", Count: 1}}, st.TopCities)
	require.Equal(t, []readmodel.ValueCount{{Value: "King County", Count: 3}}, st.TopCounties)
	require.Equal(t, []readmodel.ValueCount{{Value: "98101", Count: 3}}, st.TopZips)

	renamed := locs[1]
	renamed.Name, renamed.Version = "KING County", 2
	_, err = s.Apply(ctx, readmodel.Batch{Locations: []readmodel.Location{renamed}})
	require.NoError(t, err)
	st, err = s.PermitStats(ctx, q)
	require.NoError(t, err)
	require.Equal(t, []readmodel.ValueCount{{Value: "KING County", Count: 3}}, st.TopCounties)
}
