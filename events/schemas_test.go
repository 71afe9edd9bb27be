package events_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/events/eventstest"
)

func TestEveryTypeHasASchema(t *testing.T) {
	for _, typ := range events.Types {
		eventstest.TypeSchema(t, typ)
	}
}

func TestDeleteSchemaAgreesWithDecode(t *testing.T) {
	s := eventstest.TypeSchema(t, events.PermitDeleted)
	good, err := events.New(events.PermitDeleted, "seattle:1", 7, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		raw  string
		want bool
	}{
		"valid delete":      {string(raw), true},
		"delete with data":  {string(bytes.Replace(raw, []byte(`"source":"test"`), []byte(`"source":"test","data":{"x":1}`), 1)), false},
		"upsert type":       {string(bytes.Replace(raw, []byte(`permit.deleted`), []byte(`permit.upserted`), 1)), false},
		"zero version":      {string(bytes.Replace(raw, []byte(`"entity_version":7`), []byte(`"entity_version":0`), 1)), false},
		"unknown field":     {string(bytes.Replace(raw, []byte(`"source":"test"`), []byte(`"source":"test","extra":1`), 1)), false},
		"missing entity_id": {string(bytes.Replace(raw, []byte(`"entity_id":"seattle:1",`), nil, 1)), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(tc.raw)))
			if err != nil {
				t.Fatal(err)
			}
			schemaOK := s.Validate(doc) == nil
			_, decErr := events.Decode([]byte(tc.raw))
			if schemaOK != tc.want || (decErr == nil) != tc.want {
				t.Fatalf("schema ok=%v decode err=%v, want valid=%v", schemaOK, decErr, tc.want)
			}
		})
	}
}
