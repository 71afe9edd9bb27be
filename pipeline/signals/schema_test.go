package signals

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/events/eventstest"
)

// TestEventsMatchSchemas: every event the pipeline writes (leads, lead
// retractions, geo signals, catalog) is valid under its published JSON
// Schema and passes the strict decoder, so external pipelines can rely on
// the schemas as the contract.
func TestEventsMatchSchemas(t *testing.T) {
	var envs []events.Envelope
	works := []string{"New Construction", "Addition/Alteration", "Demolition", "Grading", ""}
	for i := range 40 {
		envs = append(envs, permitEnv(t, string(rune('a'+i)), 1, events.Permit{
			WorkType: works[i%len(works)], IssueDate: asOf.AddDate(0, 0, -9*i).Format(time.DateOnly),
		}))
	}
	// A newer snapshot without an issue date retracts that permit's leads.
	envs = append(envs, permitEnv(t, "a", 2, events.Permit{WorkType: "New Construction"}))
	out, _ := run(t, envs...)

	schemas := map[events.Type]*jsonschema.Schema{}
	seen := map[events.Type]int{}
	for _, env := range out {
		if schemas[env.Type] == nil {
			schemas[env.Type] = eventstest.TypeSchema(t, env.Type)
		}
		raw, err := json.Marshal(env)
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		require.NoError(t, err)
		require.NoError(t, schemas[env.Type].Validate(doc), "%s %s", env.Type, raw)
		_, err = events.Decode(raw)
		require.NoError(t, err)
		seen[env.Type]++
	}
	for _, typ := range []events.Type{events.LeadUpserted, events.LeadDeleted, events.GeoSignalUpserted, events.CatalogUpserted} {
		require.Positive(t, seen[typ], "no %s event to check", typ)
	}
}
