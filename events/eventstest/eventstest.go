// Package eventstest compiles the embedded event JSON Schemas for tests
// that check producers' output against the published contract.
package eventstest

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/permitd/permitd/events"
)

// Schema compiles the embedded schema file name (draft 2020-12, formats
// asserted), failing the test when it is missing or invalid.
func Schema(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	raw, ok := events.SchemaFile(name)
	if !ok {
		t.Fatalf("eventstest: no schema %q", name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("eventstest: %s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatalf("eventstest: %s: %v", name, err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatalf("eventstest: %s: %v", name, err)
	}
	return s
}

// TypeSchema compiles the schema of event type typ (deletes share
// deleted.json).
func TypeSchema(t testing.TB, typ events.Type) *jsonschema.Schema {
	t.Helper()
	name := string(typ) + ".json"
	if typ.IsDelete() {
		name = "deleted.json"
	}
	return Schema(t, name)
}
