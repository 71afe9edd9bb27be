package events

import (
	"embed"
	"io/fs"
	"strings"
)

// schemaFS holds the JSON Schemas (draft 2020-12) that document every
// event type: one file per upsert type, and deleted.json for every delete
// (an envelope without data). They are the contract for external
// pipelines; Decode and the projections are the runtime validators, and
// the schema tests keep the two in step.
//
//go:embed schemas/*.json
var schemaFS embed.FS

// SchemaNames lists the embedded schema files.
func SchemaNames() []string {
	entries, _ := fs.ReadDir(schemaFS, "schemas")
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			out = append(out, e.Name())
		}
	}
	return out
}

// SchemaFile returns one embedded schema file by name
// ("permit.upserted.json", "deleted.json").
func SchemaFile(name string) ([]byte, bool) {
	b, err := fs.ReadFile(schemaFS, "schemas/"+name)
	return b, err == nil
}
