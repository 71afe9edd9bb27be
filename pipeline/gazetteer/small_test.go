package gazetteer

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
)

// Imports of small hand-written sources: joins, errors and name rules,
// each case small enough to read.

// fakeOpen serves small in-memory sources.
func fakeOpen(files map[string]string) func(string) (io.ReadCloser, error) {
	return func(name string) (io.ReadCloser, error) {
		s, ok := files[name]
		if !ok {
			return nil, os.ErrNotExist
		}
		return io.NopCloser(strings.NewReader(s)), nil
	}
}

const (
	tinyCounties = countiesHeader + "\n" +
		"WA|53033|01531933|King County|5479337863|496916128|2115.619|191.861|47.490599|-121.833996\n" +
		"WA|53063|01529225|Spokane County|4568155898|44006155|1763.776|16.991|47.620376|-117.404327\n" +
		"WA|5306|x|Broken|1|1|1|1|1|1\n" + // malformed FIPS
		"ZZ|99001|x|Nowhere County|1|1|1|1|10|10\n" // no such state
	tinyCities = "city,city_ascii,state_id,state_name,county_fips,county_name,lat,lng,population,density,source,military,incorporated,timezone,ranking,zips,id\r\n" +
		"Seattle,Seattle,WA,Washington,53033,King,47.6211,-122.3244,3530752,3414,shape,FALSE,TRUE,America/Los_Angeles,1,98101 98104,1840021117\r\n" +
		"White Center,White Center,WA,Washington,53033,King,47.5108,-122.3471,16631,2257,shape,FALSE,FALSE,America/Los_Angeles,3,98146 98106,1840037727\r\n" +
		"Spokane,Spokane,WA,Washington,53063,Spokane,47.6671,-117.433,402497,1588,shape,FALSE,TRUE,America/Los_Angeles,2,99201,1840021093\r\n" +
		"Seattle,Seattle,WA,Washington,53033,King,47.6,-122.3,1,1,shape,FALSE,TRUE,America/Los_Angeles,1,,1840021117\r\n" + // duplicate id
		"Lost,Lost,WA,Washington,53999,Nowhere,47,-120,5,1,shape,FALSE,TRUE,America/Los_Angeles,3,,1840000001\r\n" + // unknown county
		"Bad,Bad,WA,Washington,53033,King,north,-120,5,1,shape,FALSE,TRUE,America/Los_Angeles,3,,1840000002\r\n" + // bad lat
		",,,,,,,,,,,,,,,,"
	tinyPostal = "US\t98101\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.6114\t-122.3305\t4\n" +
		"US\t98146\tBurien\tWashington\tWA\tKing\t033\t\t\t47.5, \t-122.35\t4\n" + // bad lat
		"US\t98106\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.5343\t-122.3548\t4\n" +
		"US\t99201\tSpokane\tWashington\tWA\tSpokane\t063\t\t\t47.6665\t-117.4365\t4\n" +
		"US\t99299\tNowhere\tWashington\tWA\t\t\t\t\t47.5\t-117.5\t4\n" + // no county code: USDA, else nearest place
		"US\t98101\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.6114\t-122.3305\t4\n" + // duplicate
		"US\t09001\tAPO AA\t\t\t\t\t\t\t38.1\t15.6\t\n" + // military
		"US\t96960\tMarshall Islands\tMarshall Islands\tMH\tMarshall Islands\t020\t\t\t7.1\t171.2\t1\n" + // not a state
		"US\t9810\ttoo short\n"
	tinyUSDA = "zip,fips,county,state\n" +
		"98101,53033,King,WA\n" +
		"98106,53033,King,WA\n" +
		"98106,53063,Spokane,WA\n" + // a second county
		"99201,53063,Spokane,WA\n" +
		"99201,53063,Spokane,WA\n" + // duplicate pair
		"99201,60010,Eastern,AS\n" + // unknown county
		"98999,53033,King,WA\n" // no such ZIP in the postal file
)

func TestImportSmall(t *testing.T) {
	var got []events.Location
	byID := map[string]events.Location{}
	rep, err := Import(context.Background(), fakeOpen(map[string]string{
		data.Counties: tinyCounties, data.Cities: tinyCities, data.PostalCodes: tinyPostal, data.ZipCounties: tinyUSDA,
	}), func(env events.Envelope) error {
		var l events.Location
		if err := events.DecodeData(env, &l); err != nil {
			return err
		}
		got = append(got, l)
		byID[env.EntityID] = l
		return nil
	})
	require.NoError(t, err)

	type key struct{ file, reason string }
	skipped := map[key]int{}
	for _, s := range rep.Skipped {
		skipped[key{s.File, s.Reason}] = s.Rows
	}
	require.Equal(t, map[key]int{
		{data.Counties, "malformed_row"}:              1,
		{data.Counties, "unknown_state"}:              1,
		{data.Cities, "duplicate_id"}:                 1,
		{data.Cities, "unknown_county"}:               1,
		{data.Cities, "bad_coordinates"}:              1,
		{data.Cities, "empty_row"}:                    1,
		{data.PostalCodes, "bad_coordinates"}:         1,
		{data.PostalCodes, "duplicate_zip"}:           1,
		{data.PostalCodes, "no_state_military"}:       1,
		{data.PostalCodes, "state_not_covered"}:       1,
		{data.PostalCodes, "malformed_row"}:           1,
		{data.ZipCounties, "duplicate_pair"}:          1,
		{data.ZipCounties, "unknown_county"}:          1,
		{data.ZipCounties, "zip_not_in_postal_codes"}: 1,
	}, skipped)
	require.Equal(t, map[string]int{
		TypeState: 1, TypeCounty: 2, TypeJurisdiction: 4, TypeCity: 3, TypeZip: 4,
	}, rep.Locations)
	require.Equal(t, 1, rep.Adjustments["zip_county_nearest_place"], "99299")
	require.Equal(t, 1, rep.Adjustments["zip_place_unmatched"], "99299")

	z := byID[events.GeoID("zip", "98106")]
	require.Equal(t, []string{events.GeoID("county", "53033"), events.GeoID("county", "53063")}, z.CountyGeoIDs)
	require.Equal(t, events.GeoID("county", "53033"), z.CountyGeoID)

	z = byID[events.GeoID("zip", "99299")]
	require.Equal(t, "Spokane County", z.County, "nearest place is Spokane")
	require.Equal(t, "Spokane County", z.Jurisdiction, "no place matched: the county's authority")
	require.Empty(t, z.CityGeoID)

	st := byID[events.GeoID("state", "WA")]
	require.Equal(t, int64(3530752+16631+402497), st.Population)
}

func TestImportErrors(t *testing.T) {
	files := map[string]string{
		data.Counties: tinyCounties, data.Cities: tinyCities, data.PostalCodes: tinyPostal, data.ZipCounties: tinyUSDA,
	}
	t.Run("missing source", func(t *testing.T) {
		partial := map[string]string{data.Counties: tinyCounties}
		_, err := Import(context.Background(), fakeOpen(partial), func(events.Envelope) error { return nil })
		require.ErrorIs(t, err, os.ErrNotExist)
	})
	for file, header := range map[string]string{
		data.Counties:    "USPS|GEOID\n",
		data.Cities:      "city,city_ascii,state_id\n",
		data.ZipCounties: "zip,fips,county\n",
	} {
		t.Run("bad header "+file, func(t *testing.T) {
			bad := map[string]string{}
			for k, v := range files {
				bad[k] = v
			}
			bad[file] = header
			_, err := Import(context.Background(), fakeOpen(bad), func(events.Envelope) error { return nil })
			require.ErrorContains(t, err, "unexpected header")
		})
	}
	t.Run("emit error stops the import", func(t *testing.T) {
		boom := errors.New("boom")
		calls := 0
		rep, err := Import(context.Background(), fakeOpen(files), func(events.Envelope) error {
			calls++
			if calls == 3 {
				return boom
			}
			return nil
		})
		require.ErrorIs(t, err, boom)
		require.Equal(t, 3, calls)
		require.Equal(t, 2, rep.Events)
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Import(ctx, fakeOpen(files), func(events.Envelope) error { return nil })
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestNameKey(t *testing.T) {
	tests := []struct{ a, b string }{
		{"Saint Louis", "St. Louis"},
		{"Mount Vernon", "Mt. Vernon"},
		{"Fort Smith", "Ft Smith"},
		{"Mc Lean", "McLean"},
		{"St. Mary's", "Saint Marys"},
		{"Cañon City", "Canon City"},
		{"COEUR D'ALENE", "Coeur d'Alene"},
	}
	for _, tc := range tests {
		t.Run(tc.a, func(t *testing.T) {
			require.Equal(t, nameKey(tc.a), nameKey(tc.b))
		})
	}
	require.NotEqual(t, nameKey("Seattle"), nameKey("Seatac"))
}

func TestPlaceAliases(t *testing.T) {
	tests := []struct {
		name, ascii string
		want        []string
	}{
		{"Seattle", "Seattle", nil},
		{"La Cañada Flintridge", "La Canada Flintridge", []string{"La Canada Flintridge"}},
		{"St. Louis", "St. Louis", []string{"Saint Louis"}},
		{"Mount Vernon", "Mount Vernon", []string{"Mt. Vernon"}},
		{"Doña Ana County", fold("Doña Ana County"), []string{"Dona Ana County"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, placeAliases(tc.name, tc.ascii))
		})
	}
}
