package gazetteer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/pipeline/data"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// national is one import of the bundled data, shared by the tests.
type national struct {
	raw    []byte
	report Report
	envs   []events.Envelope
	locs   []events.Location
	byID   map[string]events.Location
}

var (
	nationalOnce sync.Once
	nationalRun  national
	nationalErr  error
)

func loadNational(t testing.TB) national {
	t.Helper()
	nationalOnce.Do(func() {
		var buf bytes.Buffer
		rep, err := WriteNDJSON(context.Background(), &buf)
		n := national{raw: buf.Bytes(), report: rep, byID: map[string]events.Location{}}
		if err != nil {
			nationalErr = err
			return
		}
		sc := bufio.NewScanner(bytes.NewReader(n.raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			env, err := events.Decode(sc.Bytes())
			if err != nil {
				nationalErr = err
				return
			}
			var loc events.Location
			if err := events.DecodeData(env, &loc); err != nil {
				nationalErr = err
				return
			}
			if want, err := json.Marshal(env); err != nil || !bytes.Equal(want, sc.Bytes()) {
				nationalErr = fmt.Errorf("line %d differs from json.Marshal of its envelope (%v):\n%s\n%s", len(n.envs)+1, err, sc.Bytes(), want)
				return
			}
			n.envs = append(n.envs, env)
			n.locs = append(n.locs, loc)
			n.byID[env.EntityID] = loc
		}
		nationalErr = sc.Err()
		nationalRun = n
	})
	require.NoError(t, nationalErr)
	return nationalRun
}

// dataLines counts the lines of a bundled file.
func dataLines(t *testing.T, name string) int {
	t.Helper()
	rc, err := data.Open(name)
	require.NoError(t, err)
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
	}
	require.NoError(t, sc.Err())
	return n
}

func TestCounts(t *testing.T) {
	n := loadNational(t)
	rep := n.report

	placeRows := dataLines(t, data.Cities) - 1 // header
	postalRows := dataLines(t, data.PostalCodes)
	incorporated := 0
	for _, l := range n.locs {
		if l.GeoType == TypeCity && l.Incorporated {
			incorporated++
		}
	}

	tests := []struct {
		geoType string
		want    int
	}{
		{TypeState, 52},
		{TypeCounty, 3220},
		{TypeCity, placeRows - rep.SkippedRows(data.Cities)},
		{TypeZip, postalRows - rep.SkippedRows(data.PostalCodes)},
		{TypeJurisdiction, incorporated + 3220},
	}
	got := map[string]int{}
	for _, l := range n.locs {
		got[l.GeoType]++
	}
	for _, tc := range tests {
		t.Run(tc.geoType, func(t *testing.T) {
			require.Equal(t, tc.want, got[tc.geoType], "decoded events")
			require.Equal(t, tc.want, rep.Locations[tc.geoType], "report")
		})
	}
	require.Equal(t, len(n.locs), rep.Events)
	require.Len(t, got, len(tests), "unexpected geo types: %v", got)

	// Absolute expectations on the bundled data, so a silent loss of rows
	// fails even if the skip accounting is wrong too.
	require.Equal(t, 30409, got[TypeCity])
	require.Equal(t, 1, rep.SkippedRows(data.Cities), "only the empty trailing row")
	require.InDelta(t, 41000, got[TypeZip], 500)
	require.Equal(t, 0, rep.SkippedRows(data.Counties))
	for _, s := range rep.Skipped {
		require.NotEmpty(t, s.Reason)
		require.Positive(t, s.Rows)
		require.NotEmpty(t, s.Lines)
	}
	t.Logf("locations %v, skipped %+v, adjustments %v", rep.Locations, rep.Skipped, rep.Adjustments)
}

func TestEnvelopes(t *testing.T) {
	n := loadNational(t)
	seenEvent := map[string]bool{}
	for i, env := range n.envs {
		loc := n.locs[i]
		require.Equal(t, events.LocationUpserted, env.Type)
		require.Equal(t, Source, env.Source)
		require.Equal(t, DatasetVersion, env.EntityVersion)
		require.True(t, OccurredAt.Equal(env.OccurredAt))
		require.False(t, seenEvent[env.EventID], "duplicate event id %s", env.EventID)
		seenEvent[env.EventID] = true
		require.NotEmpty(t, loc.Name, env.EntityID)
		require.NotEmpty(t, loc.DisplayName, env.EntityID)
		require.NotEmpty(t, loc.FullAddress, env.EntityID)
		require.Len(t, loc.State, 2, env.EntityID)
		require.NotEmpty(t, loc.StateName, env.EntityID)
		require.False(t, loc.Lat == 0 && loc.Lon == 0, "%s has no coordinates", loc.DisplayName)
	}
	require.Len(t, n.byID, len(n.envs), "geo_ids are unique")
}

// TestOrder checks the emission order: states, counties, jurisdictions,
// cities, zips, each in key order.
func TestOrder(t *testing.T) {
	n := loadNational(t)
	rank := map[string]int{TypeState: 0, TypeCounty: 1, TypeJurisdiction: 2, TypeCity: 3, TypeZip: 4}
	var prevKey string
	for i := 1; i < len(n.locs); i++ {
		a, b := n.locs[i-1], n.locs[i]
		require.LessOrEqual(t, rank[a.GeoType], rank[b.GeoType], "event %d: %s after %s", i, b.GeoType, a.GeoType)
		if a.GeoType != b.GeoType {
			prevKey = ""
			continue
		}
		var key string
		switch b.GeoType {
		case TypeState:
			key = b.State
		case TypeZip:
			key = b.Zipcode
		default:
			continue
		}
		require.Less(t, prevKey, key)
		prevKey = key
	}
}

// TestHierarchy checks that every referenced geo_id is an emitted location
// of the right type, and that every location but a state names its
// jurisdiction consistently.
func TestHierarchy(t *testing.T) {
	n := loadNational(t)
	ref := func(owner events.Location, id, wantType string) events.Location {
		t.Helper()
		target, ok := n.byID[id]
		require.True(t, ok, "%s %q references missing %s %s", owner.GeoType, owner.DisplayName, wantType, id)
		require.Equal(t, wantType, target.GeoType, "%s %q", owner.GeoType, owner.DisplayName)
		return target
	}
	for _, l := range n.locs {
		if l.GeoType == TypeState {
			require.Empty(t, l.Jurisdiction)
			require.Empty(t, l.JurisdictionGeoID)
			require.Empty(t, l.StateGeoID)
			continue
		}
		st := ref(l, l.StateGeoID, TypeState)
		require.Equal(t, st.State, l.State)
		require.Equal(t, st.StateName, l.StateName)

		j := ref(l, l.JurisdictionGeoID, TypeJurisdiction)
		require.Equal(t, j.Name, l.Jurisdiction, "%s %q", l.GeoType, l.DisplayName)
		require.Equal(t, l.State, j.State)

		switch l.GeoType {
		case TypeCounty:
			require.Empty(t, l.CountyGeoID)
		default:
			c := ref(l, l.CountyGeoID, TypeCounty)
			require.Equal(t, c.Name, l.County, "%s %q", l.GeoType, l.DisplayName)
			require.Equal(t, l.State, c.State)
		}
		if l.CityGeoID != "" {
			c := ref(l, l.CityGeoID, TypeCity)
			require.Equal(t, l.State, c.State)
		}
		for _, id := range l.CountyGeoIDs {
			ref(l, id, TypeCounty)
		}
		if l.GeoType == TypeZip {
			require.Contains(t, l.CountyGeoIDs, l.CountyGeoID, l.DisplayName)
		} else {
			require.Empty(t, l.CountyGeoIDs)
		}
	}
}

func TestSpotChecks(t *testing.T) {
	n := loadNational(t)
	var (
		wa         = events.GeoID("state", "WA")
		king       = events.GeoID("county", "53033")
		spokaneCo  = events.GeoID("county", "53063")
		seattle    = events.GeoID("city", "1840021117")
		spokane    = events.GeoID("city", "1840021093")
		seattleJ   = events.GeoID("jurisdiction", "city:1840021117")
		spokaneJ   = events.GeoID("jurisdiction", "city:1840021093")
		kingJ      = events.GeoID("jurisdiction", "county:53033")
		whiteCtr   = events.GeoID("city", "1840037727")
		valdezCord = events.GeoID("county", "02261")
	)
	tests := []struct {
		name string
		id   string
		want events.Location // only the fields set here are compared, plus GeoType
	}{
		{"state WA", wa, events.Location{
			GeoType: "state", Name: "Washington", DisplayName: "Washington", FullAddress: "Washington, US",
			State: "WA", StateName: "Washington",
		}},
		{"county King WA", king, events.Location{
			GeoType: "county", Name: "King County", DisplayName: "King County, WA", FullAddress: "King County, WA",
			State: "WA", StateName: "Washington", County: "King County", Jurisdiction: "King County",
			StateGeoID: wa, JurisdictionGeoID: kingJ,
		}},
		{"city Seattle", seattle, events.Location{
			GeoType: "city", Name: "Seattle", DisplayName: "Seattle, WA", FullAddress: "Seattle, King County, WA",
			State: "WA", StateName: "Washington", County: "King County", City: "Seattle", Jurisdiction: "City of Seattle",
			StateGeoID: wa, CountyGeoID: king, JurisdictionGeoID: seattleJ, Incorporated: true,
		}},
		{"city Spokane", spokane, events.Location{
			GeoType: "city", Name: "Spokane", DisplayName: "Spokane, WA", FullAddress: "Spokane, Spokane County, WA",
			State: "WA", County: "Spokane County", City: "Spokane", Jurisdiction: "City of Spokane",
			StateGeoID: wa, CountyGeoID: spokaneCo, JurisdictionGeoID: spokaneJ, Incorporated: true,
		}},
		{"unincorporated place White Center", whiteCtr, events.Location{
			GeoType: "city", Name: "White Center", DisplayName: "White Center, WA",
			County: "King County", Jurisdiction: "King County", CountyGeoID: king, JurisdictionGeoID: kingJ,
		}},
		{"jurisdiction City of Seattle", seattleJ, events.Location{
			GeoType: "jurisdiction", Name: "City of Seattle", DisplayName: "City of Seattle, WA",
			State: "WA", County: "King County", City: "Seattle", Jurisdiction: "City of Seattle",
			StateGeoID: wa, CountyGeoID: king, CityGeoID: seattle, JurisdictionGeoID: seattleJ, Incorporated: true,
		}},
		{"jurisdiction unincorporated King County", kingJ, events.Location{
			GeoType: "jurisdiction", Name: "King County", DisplayName: "King County, WA (unincorporated)",
			State: "WA", County: "King County", Jurisdiction: "King County",
			StateGeoID: wa, CountyGeoID: king, JurisdictionGeoID: kingJ,
		}},
		{"zip 98101", events.GeoID("zip", "98101"), events.Location{
			GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)", FullAddress: "98101, Seattle, WA",
			State: "WA", StateName: "Washington", County: "King County", City: "Seattle", Zipcode: "98101",
			Jurisdiction: "City of Seattle", StateGeoID: wa, CountyGeoID: king, CountyGeoIDs: []string{king},
			CityGeoID: seattle, JurisdictionGeoID: seattleJ, Lat: 47.6114, Lon: -122.3305,
		}},
		{"zip 99201", events.GeoID("zip", "99201"), events.Location{
			GeoType: "zip", DisplayName: "99201 (Spokane, WA)", County: "Spokane County", CityGeoID: spokane,
			CountyGeoID: spokaneCo, JurisdictionGeoID: spokaneJ,
		}},
		{"zip in a 2019 Alaska census area, remapped", events.GeoID("zip", "99686"), events.Location{
			GeoType: "zip", DisplayName: "99686 (Valdez, AK)", County: "Valdez-Cordova Census Area",
			CountyGeoID: valdezCord, CountyGeoIDs: []string{valdezCord}, Jurisdiction: "City of Valdez",
		}},
		{"accented place keeps an ASCII alias", events.GeoID("city", "1840020510"), events.Location{
			GeoType: "city", Name: "La Cañada Flintridge", DisplayName: "La Cañada Flintridge, CA",
			Aliases: []string{"La Canada Flintridge"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := n.byID[tc.id]
			require.True(t, ok, "geo_id %s not emitted", tc.id)
			require.Equal(t, tc.want, project(got, tc.want))
		})
	}

	// Population priors (documented sums).
	require.Greater(t, n.byID[king].Population, n.byID[kingJ].Population)
	require.Positive(t, n.byID[kingJ].Population)
	require.Equal(t, int64(3530752), n.byID[seattle].Population)
	require.Zero(t, n.byID[events.GeoID("zip", "98101")].Population)
}

// project keeps the fields of got that want sets (GeoType always).
func project(got, want events.Location) events.Location {
	out := events.Location{GeoType: got.GeoType}
	pick := func(dst *string, w, g string) {
		if w != "" {
			*dst = g
		}
	}
	pick(&out.Name, want.Name, got.Name)
	pick(&out.DisplayName, want.DisplayName, got.DisplayName)
	pick(&out.FullAddress, want.FullAddress, got.FullAddress)
	pick(&out.State, want.State, got.State)
	pick(&out.StateName, want.StateName, got.StateName)
	pick(&out.County, want.County, got.County)
	pick(&out.City, want.City, got.City)
	pick(&out.Zipcode, want.Zipcode, got.Zipcode)
	pick(&out.Jurisdiction, want.Jurisdiction, got.Jurisdiction)
	pick(&out.StateGeoID, want.StateGeoID, got.StateGeoID)
	pick(&out.CountyGeoID, want.CountyGeoID, got.CountyGeoID)
	pick(&out.CityGeoID, want.CityGeoID, got.CityGeoID)
	pick(&out.JurisdictionGeoID, want.JurisdictionGeoID, got.JurisdictionGeoID)
	if want.CountyGeoIDs != nil {
		out.CountyGeoIDs = got.CountyGeoIDs
	}
	if want.Aliases != nil {
		out.Aliases = got.Aliases
	}
	if want.Lat != 0 || want.Lon != 0 {
		out.Lat, out.Lon = got.Lat, got.Lon
	}
	if want.Incorporated {
		out.Incorporated = got.Incorporated
	}
	return out
}

// TestGolden pins the complete events of a few well-known places; run
// with -update after an intended change (and bump DatasetVersion).
func TestGolden(t *testing.T) {
	n := loadNational(t)
	ids := map[string]bool{}
	for _, id := range []string{
		events.GeoID("state", "WA"),
		events.GeoID("county", "53033"),
		events.GeoID("jurisdiction", "county:53033"),
		events.GeoID("jurisdiction", "city:1840021117"),
		events.GeoID("city", "1840021117"),
		events.GeoID("city", "1840021093"),
		events.GeoID("city", "1840037727"),
		events.GeoID("zip", "98101"),
		events.GeoID("zip", "98168"),
		events.GeoID("zip", "99201"),
		events.GeoID("zip", "06087"),
	} {
		ids[id] = true
	}
	var got bytes.Buffer
	for _, line := range bytes.Split(n.raw, []byte("\n")) {
		env, err := events.Decode(line)
		if err == nil && ids[env.EntityID] {
			got.Write(line)
			got.WriteByte('\n')
		}
	}
	path := filepath.Join("testdata", "golden.ndjson")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run TestGolden -update")
	require.Equal(t, string(want), got.String())
}

func TestDeterministic(t *testing.T) {
	n := loadNational(t)
	var again bytes.Buffer
	_, err := WriteNDJSON(context.Background(), &again)
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256(n.raw), sha256.Sum256(again.Bytes()), "two runs differ")
	require.Equal(t, len(n.envs), bytes.Count(again.Bytes(), []byte("\n")))
}

func BenchmarkImport(b *testing.B) {
	var n int
	for b.Loop() {
		n = 0
		_, err := Import(context.Background(), data.Open, func(events.Envelope) error { n++; return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "events/op")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
}

func BenchmarkWriteNDJSON(b *testing.B) {
	for b.Loop() {
		if _, err := WriteNDJSON(context.Background(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
