package events_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/events/eventstest"
)

func TestPermitAndPropertySchemasMatchGoTypes(t *testing.T) {
	tests := []struct {
		file    string
		typ     events.Type
		payload reflect.Type
	}{
		{"permit.upserted.json", events.PermitUpserted, reflect.TypeOf(events.Permit{})},
		{"property.upserted.json", events.PropertyUpserted, reflect.TypeOf(events.Property{})},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			doc := loadSchemaDoc(t, tt.file)
			require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
			checkObject(t, doc, doc, reflect.TypeOf(events.Envelope{}), "data")
			props := doc["properties"].(map[string]any)
			require.Equal(t, string(tt.typ), props["type"].(map[string]any)["const"])
			require.EqualValues(t, events.SchemaVersion, props["schema_version"].(map[string]any)["const"])
			checkObject(t, doc, resolve(doc, props["data"].(map[string]any)), tt.payload)
		})
	}
}

const validPermitEvent = `{"schema_version":1,"event_id":"ev_0123456789abcdef01234567","type":"permit.upserted",` +
	`"entity_id":"seattle_sdci_commercial:6268348","entity_version":20151204,"occurred_at":"2015-12-04T00:00:00Z","source":"seattle_sdci_commercial",` +
	`"data":{"permit_number":"6268348","permit_type":"Construction","valuation":149000,` +
	`"address":{"line":"600 UNIVERSITY ST","city":"SEATTLE","state":"WA","zipcode":"98101","zip_source":"nearest_zip","zip_confidence":0.8},` +
	`"lat":47.60967252,"lon":-122.3323065,"property_id":"prop_1669d7a27376ea09763e5b80b5f989f6","source":"seattle_sdci_commercial"}}`

const validPropertyEvent = `{"schema_version":1,"event_id":"ev_0123456789abcdef01234567","type":"property.upserted",` +
	`"entity_id":"prop_1669d7a27376ea09763e5b80b5f989f6","entity_version":20151204,"occurred_at":"2015-12-04T00:00:00Z","source":"seattle_sdci",` +
	`"data":{"canonical_address":"600 UNIVERSITY ST, SEATTLE, WA 98101","normalized_address":"600 UNIVERSITY ST","city":"SEATTLE","state":"WA","zipcode":"98101","lat":47.6,"lon":-122.3}}`

// TestPermitSchemaAndDecoderAgree feeds broken permit and property events
// to both validators, as TestSchemaAndDecoderAgree does for locations.
func TestPermitSchemaAndDecoderAgree(t *testing.T) {
	schemas := map[events.Type]*jsonschema.Schema{
		events.PermitUpserted:   eventstest.Schema(t, "permit.upserted.json"),
		events.PropertyUpserted: eventstest.Schema(t, "property.upserted.json"),
	}
	edit := func(base string, f func(env, data map[string]any)) string {
		var env map[string]any
		require.NoError(t, json.Unmarshal([]byte(base), &env))
		data, _ := env["data"].(map[string]any)
		f(env, data)
		b, err := json.Marshal(env)
		require.NoError(t, err)
		return string(b)
	}
	permit := func(f func(env, data map[string]any)) string { return edit(validPermitEvent, f) }
	property := func(f func(env, data map[string]any)) string { return edit(validPropertyEvent, f) }
	tests := []struct {
		name          string
		event         string
		schemaRejects bool
		decoderErr    string // what the decoder's error names; "": accepted
	}{
		{"valid permit", validPermitEvent, false, ""},
		{"valid property", validPropertyEvent, false, ""},
		{"permit with every optional field", permit(func(_, d map[string]any) {
			d["work_type"], d["action_type"], d["status"] = "Addition/Alteration", "ADD/ALT", "Permit Closed"
			d["application_date"], d["issue_date"], d["completion_date"], d["expiration_date"] = "2010-12-06", "2010-12-06", "2011-08-19", "2012-06-06"
			d["description"], d["description_derived"], d["contractor"] = "x", true, "ACME"
			d["valuation_note"], d["housing_units"], d["source_url"] = "placeholder_1", 3, "https://example.com/p/1"
		}), false, ""},
		{"null valuation and coordinates", permit(func(_, d map[string]any) { d["valuation"], d["lat"], d["lon"] = nil, nil, nil }), false, ""},
		{"property without coordinates", property(func(_, d map[string]any) { d["lat"], d["lon"] = nil, nil }), false, ""},
		{"unknown permit field", permit(func(_, d map[string]any) { d["mup"] = "3011243" }), true, "unknown field \"mup\""},
		{"unknown address field", permit(func(_, d map[string]any) { d["address"].(map[string]any)["county"] = "King" }), true, "unknown field \"county\""},
		{"valuation as string", permit(func(_, d map[string]any) { d["valuation"] = "149000" }), true, `field "valuation": a JSON string, where a number goes`},
		{"housing units fractional", permit(func(_, d map[string]any) { d["housing_units"] = 1.5 }), true, `field "housing_units": a JSON number 1.5, where an integer goes`},
		{"property lat as string", property(func(_, d map[string]any) { d["lat"] = "47.6" }), true, `field "lat": a JSON string, where a number goes`},
		// Documented in the schema, left to the producer by the decoder.
		{"missing valuation", permit(func(_, d map[string]any) { delete(d, "valuation") }), true, ""},
		{"missing lat", permit(func(_, d map[string]any) { delete(d, "lat") }), true, ""},
		{"issue date not a date", permit(func(_, d map[string]any) { d["issue_date"] = "2024-13-40" }), true, ""},
		{"issue date US style", permit(func(_, d map[string]any) { d["issue_date"] = "12/6/10" }), true, ""},
		{"unknown zip_source", permit(func(_, d map[string]any) { d["address"].(map[string]any)["zip_source"] = "guess" }), true, ""},
		{"zip_confidence above 1", permit(func(_, d map[string]any) { d["address"].(map[string]any)["zip_confidence"] = 1.5 }), true, ""},
		{"malformed property_id", permit(func(_, d map[string]any) { d["property_id"] = "prop_XYZ" }), true, ""},
		{"property entity_id not a property id", property(func(e, _ map[string]any) { e["entity_id"] = "600 UNIVERSITY ST" }), true, ""},
		{"property zip ZIP+4", property(func(_, d map[string]any) { d["zipcode"] = "98101-1234" }), true, ""},
		{"property missing canonical_address", property(func(_, d map[string]any) { delete(d, "canonical_address") }), true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			typ := events.PermitUpserted
			if strings.Contains(tc.event, `"type":"property.upserted"`) {
				typ = events.PropertyUpserted
			}
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.event))
			require.NoError(t, err)
			schemaErr := schemas[typ].Validate(inst)
			require.Equal(t, tc.schemaRejects, schemaErr != nil, "schema: %v", schemaErr)

			env, err := events.Decode([]byte(tc.event))
			if err == nil {
				switch env.Type {
				case events.PermitUpserted:
					var p events.Permit
					err = events.DecodeData(env, &p)
				case events.PropertyUpserted:
					var p events.Property
					err = events.DecodeData(env, &p)
				}
			}
			if tc.decoderErr == "" {
				require.NoError(t, err, "decoder")
			} else {
				require.ErrorIs(t, err, events.ErrInvalid, "decoder")
				require.ErrorContains(t, err, tc.decoderErr, "decoder")
			}
		})
	}
}
