package events_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/events/eventstest"
	"github.com/permitd/permitd/pipeline/gazetteer"
)

// The Go decoder (events.Decode + events.DecodeData) is the runtime
// validator; schemas/*.json document the same contract. These tests keep
// the two in sync: the schema's properties, types and required lists match
// the Go structs, every event a producer emits passes both, and a table of
// broken events shows where each rejects.

func loadSchemaDoc(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("schemas", name))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	return doc
}

// jsonField describes one field of a Go struct as encoding/json sees it.
type jsonField struct {
	typ       reflect.Type
	omitempty bool
}

func jsonFields(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{typ: f.Type, omitempty: strings.Contains(opts, "omitempty")}
	}
	return out
}

// schemaType is the JSON Schema "type" a Go type encodes as.
func schemaType(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(time.Time{}):
		return "string"
	case t == reflect.TypeOf(json.RawMessage{}):
		return "object"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	default:
		return "object"
	}
}

// resolve follows a local "#/$defs/x" reference.
func resolve(doc, node map[string]any) map[string]any {
	for {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		name := strings.TrimPrefix(ref, "#/$defs/")
		node = doc["$defs"].(map[string]any)[name].(map[string]any)
	}
}

// declaredType is the type a schema node admits: its "type", or the type
// of its "const".
func declaredType(node map[string]any) string {
	if s, ok := node["type"].(string); ok {
		return s
	}
	switch c := node["const"].(type) {
	case string:
		return "string"
	case float64:
		if c == float64(int64(c)) {
			return "integer"
		}
		return "number"
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	sort.Strings(out)
	return out
}

// checkObject compares one schema object node with a Go struct type.
// alsoRequired lists omitempty fields that this event type requires anyway.
// A pointer field encodes as its element's type, or null unless it is
// omitempty (an omitted nil never encodes as null); a struct field is an
// object checked recursively.
func checkObject(t *testing.T, doc, node map[string]any, goType reflect.Type, alsoRequired ...string) {
	t.Helper()
	require.Equal(t, "object", node["type"])
	require.Equal(t, false, node["additionalProperties"], "%s: additionalProperties must be false", goType)

	fields := jsonFields(goType)
	props := node["properties"].(map[string]any)
	require.Equal(t, sortedKeys(fields), sortedKeys(props), "%s: schema properties vs JSON fields", goType)

	var wantRequired []string
	for name, f := range fields {
		if !f.omitempty {
			wantRequired = append(wantRequired, name)
		}
	}
	wantRequired = append(wantRequired, alsoRequired...)
	sort.Strings(wantRequired)
	require.Equal(t, wantRequired, toStrings(node["required"]), "%s: required = fields without omitempty", goType)

	for name, f := range fields {
		p := resolve(doc, props[name].(map[string]any))
		typ := f.typ
		if typ.Kind() == reflect.Pointer {
			if f.omitempty {
				require.Equal(t, schemaType(typ.Elem()), p["type"], "%s.%s", goType, name)
			} else {
				got, _ := p["type"].([]any)
				require.Equal(t, []any{schemaType(typ.Elem()), "null"}, got, "%s.%s: pointer without omitempty is type-or-null", goType, name)
			}
			continue
		}
		require.Equal(t, schemaType(typ), declaredType(p), "%s.%s", goType, name)
		switch {
		case typ.Kind() == reflect.Slice && typ != reflect.TypeOf(json.RawMessage{}):
			items := resolve(doc, p["items"].(map[string]any))
			require.Equal(t, schemaType(typ.Elem()), declaredType(items), "%s.%s items", goType, name)
		case typ.Kind() == reflect.Struct && typ != reflect.TypeOf(time.Time{}):
			checkObject(t, doc, p, typ)
		}
	}
}

func TestLocationSchemaMatchesGoTypes(t *testing.T) {
	doc := loadSchemaDoc(t, "location.upserted.json")
	require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])

	// data is omitempty in the envelope (deletes carry none) but Decode
	// requires it for every upsert.
	checkObject(t, doc, doc, reflect.TypeOf(events.Envelope{}), "data")
	props := doc["properties"].(map[string]any)
	require.Equal(t, string(events.LocationUpserted), props["type"].(map[string]any)["const"])
	require.EqualValues(t, events.SchemaVersion, props["schema_version"].(map[string]any)["const"])

	data := resolve(doc, props["data"].(map[string]any))
	checkObject(t, doc, data, reflect.TypeOf(events.Location{}))
}

// TestGazetteerEventsMatchSchema validates events of the national
// gazetteer with both the schema and the Go decoder: every event passes the
// decoder; the schema sees the first 200 events of each geo_type and every
// 20th event after that (the schema validator takes about 90 us per event,
// too slow for all 98,000 on a shared machine; set
// PERMITD_SCHEMA_ALL_EVENTS=1 to validate them all).
func TestGazetteerEventsMatchSchema(t *testing.T) {
	all := os.Getenv("PERMITD_SCHEMA_ALL_EVENTS") == "1"
	sch := eventstest.Schema(t, "location.upserted.json")
	var buf bytes.Buffer
	rep, err := gazetteer.WriteNDJSON(context.Background(), &buf)
	require.NoError(t, err)

	start := time.Now()
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n, checked := 0, 0
	perType := map[string]int{}
	for sc.Scan() {
		line := sc.Bytes()
		n++
		env, err := events.Decode(line)
		require.NoError(t, err, "line %d", n)
		var loc events.Location
		require.NoError(t, events.DecodeData(env, &loc), "line %d", n)

		perType[loc.GeoType]++
		if !all && perType[loc.GeoType] > 200 && n%20 != 0 {
			continue
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
		require.NoError(t, err)
		require.NoError(t, sch.Validate(inst), "line %d: %s", n, line)
		checked++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, rep.Events, n)
	require.Len(t, perType, 5, "every geo_type is exercised: %v", perType)
	t.Logf("%d events pass the decoder, %d of them also the schema, in %v", n, checked, time.Since(start))
}

const validLocationEvent = `{"schema_version":1,"event_id":"ev_0123456789abcdef01234567","type":"location.upserted",` +
	`"entity_id":"gabc","entity_version":1,"occurred_at":"2025-11-22T00:00:00Z","source":"test",` +
	`"data":{"geo_type":"city","name":"Seattle","display_name":"Seattle, WA","state":"WA","state_name":"Washington","lat":47.6,"lon":-122.3}}`

// TestSchemaAndDecoderAgree feeds broken events to both validators. Where
// the schema documents more than the decoder enforces (enumerations,
// patterns, ranges), decoderRejects says so explicitly.
func TestSchemaAndDecoderAgree(t *testing.T) {
	sch := eventstest.Schema(t, "location.upserted.json")
	edit := func(f func(env, data map[string]any)) string {
		var env map[string]any
		require.NoError(t, json.Unmarshal([]byte(validLocationEvent), &env))
		data, _ := env["data"].(map[string]any)
		f(env, data)
		b, err := json.Marshal(env)
		require.NoError(t, err)
		return string(b)
	}
	tests := []struct {
		name           string
		event          string
		schemaRejects  bool
		decoderRejects bool
	}{
		{"valid", validLocationEvent, false, false},
		{"all optional fields", edit(func(_, d map[string]any) {
			d["full_address"], d["county"], d["city"], d["zipcode"], d["jurisdiction"] = "a", "b", "c", "98101", "d"
			d["state_geo_id"], d["county_geo_id"], d["city_geo_id"], d["jurisdiction_geo_id"] = "g1", "g2", "g3", "g4"
			d["county_geo_ids"], d["aliases"] = []string{"g2"}, []string{"x"}
			d["population"], d["incorporated"] = 5, true
		}), false, false},
		{"unknown envelope field", edit(func(e, _ map[string]any) { e["extra"] = 1 }), true, true},
		{"unknown data field", edit(func(_, d map[string]any) { d["county_fips"] = "53033" }), true, true},
		{"missing data", edit(func(e, _ map[string]any) { delete(e, "data") }), true, true},
		{"schema_version 2", edit(func(e, _ map[string]any) { e["schema_version"] = 2 }), true, true},
		{"other type", edit(func(e, _ map[string]any) { e["type"] = "permit.upserted" }), true, false},
		{"empty entity_id", edit(func(e, _ map[string]any) { e["entity_id"] = "" }), true, true},
		{"entity_version 0", edit(func(e, _ map[string]any) { e["entity_version"] = 0 }), true, true},
		{"occurred_at not a date-time", edit(func(e, _ map[string]any) { e["occurred_at"] = "yesterday" }), true, true},
		{"lat as string", edit(func(_, d map[string]any) { d["lat"] = "47.6" }), true, true},
		{"population fractional", edit(func(_, d map[string]any) { d["population"] = 1.5 }), true, true},
		{"aliases not strings", edit(func(_, d map[string]any) { d["aliases"] = []int{1} }), true, true},
		// Documented in the schema, left to the producer by the decoder.
		{"missing display_name", edit(func(_, d map[string]any) { delete(d, "display_name") }), true, false},
		{"unknown geo_type", edit(func(_, d map[string]any) { d["geo_type"] = "parcel" }), true, false},
		{"lowercase state", edit(func(_, d map[string]any) { d["state"] = "wa" }), true, false},
		{"lat out of range", edit(func(_, d map[string]any) { d["lat"] = 123.0 }), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.event))
			require.NoError(t, err)
			schemaErr := sch.Validate(inst)
			require.Equal(t, tc.schemaRejects, schemaErr != nil, "schema: %v", schemaErr)

			env, err := events.Decode([]byte(tc.event))
			if err == nil && env.Type == events.LocationUpserted {
				var loc events.Location
				err = events.DecodeData(env, &loc)
			}
			require.Equal(t, tc.decoderRejects, err != nil, "decoder: %v", err)
		})
	}
}
