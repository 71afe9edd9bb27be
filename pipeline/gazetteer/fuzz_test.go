package gazetteer

import (
	"context"
	"strings"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer/indexertest"
	"github.com/permitd/permitd/pipeline/data"
)

// FuzzImportEmitsAccepted imports the four sources with any rows under
// their real headers and checks what a pipeline user relies on: a row is
// kept, adjusted or skipped (the import does not fail on a row), every
// location another names is emitted, and every event is one the indexer
// projects, never one it sends to the dead-letter topic
// (indexertest.Rejects).
//
//	go test -run '^$' -fuzz '^FuzzImportEmitsAccepted$' -fuzztime 4m ./pipeline/gazetteer/
func FuzzImportEmitsAccepted(f *testing.F) {
	body := func(s string) string { _, b, _ := strings.Cut(s, "\n"); return b }
	f.Add(body(tinyCounties), body(tinyCities), tinyPostal, body(tinyUSDA))
	f.Add("", "", "", "")
	f.Add("WA|53033|01531933|King County|5479337863|496916128|2115.619|191.861|47.490599|-121.833996\n",
		"Seattle,Seattle,WA,Washington,53033,King,47.6211,-122.3244,3530752,3414,shape,FALSE,TRUE,America/Los_Angeles,1,98101,1840021117\n",
		"US\t98101\tSeattle\tWashington\tWA\tKing\t033\t\t\t47.6114\t-122.3305\t4\n",
		"98101,53033,King,WA\n")
	citiesHeader, _, _ := strings.Cut(tinyCities, "\n")
	usdaHeader, _, _ := strings.Cut(tinyUSDA, "\n")
	f.Fuzz(func(t *testing.T, counties, cities, postal, usda string) {
		open := fakeOpen(map[string]string{
			data.Counties:    countiesHeader + "\n" + counties,
			data.Cities:      citiesHeader + "\n" + cities,
			data.PostalCodes: postal,
			data.ZipCounties: usdaHeader + "\n" + usda,
		})
		indexertest.CheckImport(t, func(emit func(events.Envelope) error) (int, error) {
			rep, err := Import(context.Background(), open, emit)
			return rep.Events, err
		})
	})
}
