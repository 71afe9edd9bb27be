// Package events holds permitd's event contracts: the versioned JSON
// envelope every pipeline publishes, the payload of each event type, the
// JSON Schemas that document them (schemas/*.json, embedded), strict
// decoding, and the deterministic ids producers derive from an entity's
// identity.
//
// Producers (importers, generators, the signal pipeline, external
// pipelines) write envelopes; the indexer decodes and projects them. Every
// envelope carries the entity id and a per-entity version: the read model
// keeps the newest version, so replays, duplicates and reordering are
// harmless.
package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// SchemaVersion is the only envelope version this build understands.
const SchemaVersion = 1

// Type names an event type: "<family>.<verb>".
type Type string

// Event types. Upserts carry Data; deletes carry none.
const (
	LocationUpserted  Type = "location.upserted"
	LocationDeleted   Type = "location.deleted"
	PermitUpserted    Type = "permit.upserted"
	PermitDeleted     Type = "permit.deleted"
	PropertyUpserted  Type = "property.upserted"
	PropertyDeleted   Type = "property.deleted"
	GeoSignalUpserted Type = "geo_signal.upserted"
	GeoSignalDeleted  Type = "geo_signal.deleted"
	LeadUpserted      Type = "permit_lead.upserted"
	LeadDeleted       Type = "permit_lead.deleted"
	CatalogUpserted   Type = "catalog.upserted"
	CatalogDeleted    Type = "catalog.deleted"
)

// Types lists every known event type.
var Types = []Type{
	LocationUpserted, LocationDeleted, PermitUpserted, PermitDeleted,
	PropertyUpserted, PropertyDeleted, GeoSignalUpserted, GeoSignalDeleted,
	LeadUpserted, LeadDeleted, CatalogUpserted, CatalogDeleted,
}

// Known reports whether t is a type of this schema version.
func (t Type) Known() bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// IsDelete reports whether t removes its entity.
func (t Type) IsDelete() bool {
	return len(t) > 8 && t[len(t)-8:] == ".deleted"
}

// Family is the entity family of t ("location", "permit", ...), which is
// also the topic suffix.
func (t Type) Family() string {
	for i := 0; i < len(t); i++ {
		if t[i] == '.' {
			return string(t[:i])
		}
	}
	return string(t)
}

// Envelope is the versioned wrapper of every event.
type Envelope struct {
	SchemaVersion int    `json:"schema_version"`
	EventID       string `json:"event_id"`
	Type          Type   `json:"type"`
	// EntityID is the read-model document id (geo_id, permit_id, ...), also
	// the Kafka message key.
	EntityID string `json:"entity_id"`
	// EntityVersion orders the versions of one entity; larger is newer.
	EntityVersion int64           `json:"entity_version"`
	OccurredAt    time.Time       `json:"occurred_at"`
	Source        string          `json:"source"`
	Data          json.RawMessage `json:"data,omitempty"`
}

// ErrInvalid wraps every reason Decode rejects an event; such an event can
// never be projected and belongs in the dead-letter topic.
var ErrInvalid = errors.New("invalid event")

// Decode parses and validates one envelope strictly: valid UTF-8, no
// unknown fields, a known schema version and type, non-empty ids, a
// positive version, Data present exactly for upserts. The payload itself is
// validated by the projection with DecodeData.
func Decode(raw []byte) (Envelope, error) {
	var env Envelope
	if !utf8.Valid(raw) {
		return env, fmt.Errorf("%w: not valid UTF-8", ErrInvalid)
	}
	if err := decodeStrict(raw, &env); err != nil {
		return env, fmt.Errorf("%w: envelope: %v", ErrInvalid, err)
	}
	if env.SchemaVersion != SchemaVersion {
		return env, fmt.Errorf("%w: unsupported schema_version %d", ErrInvalid, env.SchemaVersion)
	}
	if !env.Type.Known() {
		return env, fmt.Errorf("%w: unknown type %q", ErrInvalid, env.Type)
	}
	if env.EventID == "" || env.EntityID == "" {
		return env, fmt.Errorf("%w: event_id and entity_id are required", ErrInvalid)
	}
	if env.EntityVersion <= 0 {
		return env, fmt.Errorf("%w: entity_version must be positive", ErrInvalid)
	}
	hasData := len(env.Data) > 0 && !bytes.Equal(env.Data, []byte("null"))
	if env.Type.IsDelete() && hasData {
		return env, fmt.Errorf("%w: %s carries no data", ErrInvalid, env.Type)
	}
	if !env.Type.IsDelete() && !hasData {
		return env, fmt.Errorf("%w: %s requires data", ErrInvalid, env.Type)
	}
	return env, nil
}

// DecodeData parses an upsert's payload strictly into v.
func DecodeData(env Envelope, v any) error {
	if err := decodeStrict(env.Data, v); err != nil {
		return fmt.Errorf("%w: %s data: %v", ErrInvalid, env.Type, err)
	}
	return nil
}

// decodeStrict decodes exactly one JSON value with no unknown fields. The
// common case takes fastDecode's single pass (fastdecode.go); anything it
// is unsure of, and every error, goes through goccy/go-json's strict stream
// decoder (encoding/json-compatible, about three times faster than it).
func decodeStrict(raw []byte, v any) error {
	if fastDecode(raw, v) {
		return nil
	}
	return decodeStream(raw, v)
}

// decodeStream is decodeStrict with goccy's strict stream decoder only.
func decodeStream(raw []byte, v any) error {
	dec := gojson.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// New builds an upsert or delete envelope with a deterministic event id
// (derived from type, entity and version) so a re-run of a producer yields
// byte-identical events.
func New(t Type, entityID string, version int64, occurred time.Time, source string, data any) (Envelope, error) {
	env := Envelope{
		SchemaVersion: SchemaVersion,
		EventID:       EventID(t, entityID, version),
		Type:          t,
		EntityID:      entityID,
		EntityVersion: version,
		OccurredAt:    occurred.UTC(),
		Source:        source,
	}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return env, err
		}
		env.Data = raw
	}
	return env, nil
}
