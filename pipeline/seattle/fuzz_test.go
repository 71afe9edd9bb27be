package seattle

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer/indexertest"
	"github.com/permitd/permitd/pipeline/data"
)

// FuzzImportEmitsAccepted imports two exports of any rows under their
// real headers and checks what a pipeline user relies on: a row is kept or
// counted as bad (the import does not fail on a row), and every event
// emitted is one the indexer projects, never one it sends to the
// dead-letter topic (indexertest.Rejects). The ZIP points are a few of
// Seattle's, so that each run is quick.
//
//	go test -run '^$' -fuzz '^FuzzImportEmitsAccepted$' -fuzztime 4m ./pipeline/seattle/
func FuzzImportEmitsAccepted(f *testing.F) {
	for _, n := range []int{1, 4, 30} {
		f.Add(bundledRows(f, data.SeattleCommercialPermits, n), bundledRows(f, data.SeattleMultifamilyPermits, n))
	}
	f.Add([]byte("1,Construction,600 UNIVERSITY ST,COMMERCIAL,ADD/ALT,Plan Review,\"1,250\",12/6/10,12/6/10,,6/6/12,Permit Issued,,47.60967252,-122.3323065\n"+
		"2,Construction,1 MAIN ST,COMMERCIAL,NEW,Plan Review,-5,12/6/10,12/6/10,,,Permit Issued,,north,-122.3\n"+
		"3,Construction,\"1 MAIN\nST\",COMMERCIAL,NEW,,5,2/29/12,2/29/12,,,,,,\n"),
		[]byte(",A-1,Multifamily,Residential,Building,New,,2,0.0,2.0,\"400,000\",2014-06-17,2014-10-23,,,Completed,,1 MAIN ST,SEATTLE,WA,98101.0,,,47.61,-122.33,,,,,,,,,,,,,,,,,2014,2014,\n"))
	commercial := strings.Join(commercialHeader, ",") + "\n"
	multifamily := strings.Join(multifamilyHeader, ",") + "\n"
	f.Fuzz(func(t *testing.T, com, mf []byte) {
		files := map[string]string{
			data.SeattleCommercialPermits:  commercial + string(com),
			data.SeattleMultifamilyPermits: multifamily + string(mf),
			data.Cities:                    fuzzCities,
			data.PostalCodes:               fuzzPostal,
		}
		open := func(name string) (io.ReadCloser, error) {
			s, ok := files[name]
			if !ok {
				return data.Open(name)
			}
			return io.NopCloser(strings.NewReader(s)), nil
		}
		var rep Report
		indexertest.CheckImport(t, func(emit func(events.Envelope) error) (n int, err error) {
			rep, err = Import(context.Background(), open, emit)
			return rep.Events, err
		})
		for _, fr := range rep.Files {
			if fr.Rows != fr.Permits+fr.BadRows {
				t.Fatalf("%s: %d rows, but %d permits and %d bad rows", fr.File, fr.Rows, fr.Permits, fr.BadRows)
			}
		}
	})
}

// fuzzCities and fuzzPostal are a few of Seattle's ZIPs, as the bundled
// sources give them.
const (
	fuzzCities = "city,city_ascii,state_id,state_name,county_fips,county_name,lat,lng,population,density,source,military,incorporated,timezone,ranking,zips,id\n" +
		"Seattle,Seattle,WA,Washington,53033,King,47.6211,-122.3244,3530752,3414,shape,FALSE,TRUE,America/Los_Angeles,1,98101 98102 98104 98112 98134,1840021117\n"
	fuzzPostal = "US\t98101\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.6114\t-122.3305\t4\n" +
		"US\t98102\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.6302\t-122.321\t4\n" +
		"US\t98104\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.6036\t-122.3256\t4\n" +
		"US\t98112\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.6298\t-122.2901\t4\n" +
		"US\t98134\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.5765\t-122.339\t4\n"
)

// bundledRows returns the first n rows of a bundled export, without its
// header.
func bundledRows(tb testing.TB, name string, n int) []byte {
	tb.Helper()
	rc, err := data.Open(name)
	if err != nil {
		tb.Fatal(err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var b strings.Builder
	for i := 0; i <= n && sc.Scan(); i++ {
		if i > 0 {
			b.WriteString(sc.Text())
			b.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return []byte(b.String())
}
