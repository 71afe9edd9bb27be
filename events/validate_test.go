package events_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
)

func TestValidatorChecksTheSchemaAndTheDecoder(t *testing.T) {
	env, err := events.New(events.LocationUpserted, events.GeoID("state", "WA"), 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test",
		events.Location{GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120})
	require.NoError(t, err)
	good, err := json.Marshal(env)
	require.NoError(t, err)
	var v events.Validator
	require.NoError(t, v.Validate(good))
	for name, tc := range map[string]struct{ raw, want string }{
		"not json": {`{"type":`, "not a JSON object"},
		// No Go type in the words (encoding/json's own message names one).
		"an array":      {`[1,2]`, "not a JSON object: a JSON array, where an object goes"},
		"a string":      {`"x"`, "not a JSON object: a JSON string, where an object goes"},
		"type a number": {`{"type":5}`, `field "type": a JSON number, where a string goes`},
		"unknown type":  {string(bytes.Replace(good, []byte(`location.upserted`), []byte(`thing.upserted`), 1)), `unknown event type "thing.upserted"`},
		"bad state":     {string(bytes.Replace(good, []byte(`"state":"WA"`), []byte(`"state":"Washington"`), 1)), "schema location.upserted.json: at /data/state"},
		"extra field":   {string(bytes.Replace(good, []byte(`"source":"test"`), []byte(`"source":"test","x":1`), 1)), "schema location.upserted.json"},
	} {
		t.Run(name, func(t *testing.T) {
			err := v.Validate([]byte(tc.raw))
			require.ErrorIs(t, err, events.ErrInvalid)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n")
			require.NotContains(t, err.Error(), "Go value")
		})
	}
}
