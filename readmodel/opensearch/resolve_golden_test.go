package opensearch

import (
	"testing"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/opensearch/osgolden"
	"github.com/permitd/permitd/readmodel/resolve"
)

// TestResolveGoldens renders the resolve bodies of issue 17's rules:
// filler words dropped into their own reading, a one-letter last word, a
// text of filler words only, and a focus point.
func TestResolveGoldens(t *testing.T) {
	focus := &readmodel.Point{Lat: 39.8, Lon: -89.65}
	for name, rq := range map[string]readmodel.ResolveQuery{
		"resolve_filler.search.json":      {Text: "Spokane, Washington, USA", Limit: 5},
		"resolve_state_of.search.json":    {Text: "State of Washington", Limit: 5},
		"resolve_one_letter.search.json":  {Text: "Lake Forest P", Limit: 5},
		"resolve_only_filler.search.json": {Text: "United States", Limit: 5},
		"resolve_focus.search.json":       {Text: "Springfield", Limit: 5, Focus: focus},
		"resolve_focus_zip.search.json":   {Text: "98101", Limit: 5, Focus: focus},
	} {
		t.Run(name, func(t *testing.T) {
			osgolden.Compare(t, name, render(t, resolveBody(resolve.ParseQuery(rq))))
		})
	}
}
