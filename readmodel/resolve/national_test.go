package resolve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/readmodel"
)

// national loads the bundled national gazetteer through the real path:
// gazetteer.Import -> JSON -> events.Decode -> indexer.ProjectLocation ->
// Index.Upsert.
var national = sync.OnceValues(func() (*Index, error) {
	x := New()
	_, err := gazetteer.Import(context.Background(), data.Open, func(env events.Envelope) error {
		raw, err := json.Marshal(env)
		if err != nil {
			return err
		}
		env, err = events.Decode(raw)
		if err != nil {
			return err
		}
		loc, err := indexer.ProjectLocation(env)
		if err != nil {
			return err
		}
		x.Upsert(loc)
		return nil
	})
	return x, err
})

func nationalIndex(tb testing.TB) *Index {
	tb.Helper()
	x, err := national()
	if err != nil {
		tb.Fatalf("load national gazetteer: %v", err)
	}
	return x
}

func describe(cs []readmodel.Candidate) string {
	var b strings.Builder
	for i, c := range cs {
		fmt.Fprintf(&b, "  %d. %-40s %-12s score=%.4f conf=%.4f %-11s %-6s %v\n", i+1, c.Location.DisplayName, c.Location.GeoType, c.Score, c.Confidence, c.MatchMethod, c.Decision, c.Reasons)
	}
	return b.String()
}
