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
	"io"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
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

	// payload is Data decoded, set by DecodeEvent; DecodeData copies it
	// out instead of parsing Data again.
	payload any
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
	return env, env.check()
}

// DecodeEvent is Decode that also decodes an upsert's payload, in the
// same single pass over raw in the common case, and keeps it in the
// envelope, so that DecodeData and Payload hand it out instead of parsing
// Data again. What it accepts and rejects, and the values it yields, are
// those of Decode followed by DecodeData: when the single pass is unsure
// it falls back to Decode, and DecodeData parses Data as usual.
//
// The envelope is the caller's: Data is a copy, and the payload is its
// own. The indexer's hot path lends instead (WithEvent).
func DecodeEvent(raw []byte) (Envelope, error) {
	if env, ok := fastEvent(raw, false); ok {
		env.Data = bytes.Clone(env.Data)
		return env, env.check()
	}
	return Decode(raw)
}

// WithEvent decodes raw as DecodeEvent does and calls fn with the
// envelope, lent for the call only: its Data and EventID alias raw and its payload
// (Payload's pointer) is reused by a later WithEvent once fn returns, so
// fn must copy what it keeps (the projection does: documents copy the
// payload's fields, which stay valid; only the struct is reused). A
// decoding error is returned without calling fn; otherwise fn's error.
func WithEvent(raw []byte, fn func(Envelope) error) error {
	p := Parse(raw)
	_, err := p.Use(fn)
	return err
}

// Parsed is an event decoded ahead of its use (Parse), as WithEvent
// decodes it: its Data and EventID alias the raw message, and its payload is lent
// from WithEvent's pools until Use. It is used once.
type Parsed struct {
	env  Envelope // zero once used
	err  error    // the decoding error; nil once used
	lent bool     // env's payload is lent (recycled after Use)
}

// Parse decodes raw for a later Use. The caller keeps raw unchanged
// until then.
func Parse(raw []byte) Parsed {
	env, ok := fastEvent(raw, true)
	if !ok {
		e, err := Decode(raw)
		if err != nil {
			return Parsed{err: err}
		}
		return Parsed{env: e}
	}
	if err := env.check(); err != nil {
		recycle(env)
		return Parsed{err: err}
	}
	return Parsed{env: env, lent: true}
}

// EntityID is the parsed event's entity_id, and false when p holds no
// event (a decoding error, or used).
func (p *Parsed) EntityID() (string, bool) {
	if p.err != nil || p.env.Type == "" {
		return "", false
	}
	return p.env.EntityID, true
}

// Use calls fn with the envelope, lent for the call as WithEvent lends
// it, or returns the decoding error without calling fn. used is false,
// and nothing is called, when p was used before (or is the zero
// Parsed): the caller decodes the message itself then.
func (p *Parsed) Use(fn func(Envelope) error) (used bool, err error) {
	env, err, lent := p.env, p.err, p.lent
	*p = Parsed{}
	switch {
	case err != nil:
		return true, err
	case env.Type == "":
		return false, nil
	}
	if lent {
		defer recycle(env)
	}
	return true, fn(env)
}

// check validates a decoded envelope.
func (env Envelope) check() error {
	if env.SchemaVersion != SchemaVersion {
		return fmt.Errorf("%w: unsupported schema_version %d", ErrInvalid, env.SchemaVersion)
	}
	if !env.Type.Known() {
		return fmt.Errorf("%w: unknown type %q", ErrInvalid, env.Type)
	}
	if env.EventID == "" || env.EntityID == "" {
		return fmt.Errorf("%w: event_id and entity_id are required", ErrInvalid)
	}
	if env.EntityVersion <= 0 {
		return fmt.Errorf("%w: entity_version must be positive", ErrInvalid)
	}
	hasData := len(env.Data) > 0 && !bytes.Equal(env.Data, []byte("null"))
	if env.Type.IsDelete() && hasData {
		return fmt.Errorf("%w: %s carries no data", ErrInvalid, env.Type)
	}
	if !env.Type.IsDelete() && !hasData {
		return fmt.Errorf("%w: %s requires data", ErrInvalid, env.Type)
	}
	return nil
}

// newPayload returns a zero payload of an upsert type (a recycled one
// when pooled and there is one), nil for any other type.
func newPayload(t Type, pooled bool) any {
	pool := payloadPoolOf(t)
	switch {
	case pool == nil:
		return nil
	case pooled:
		return pool.Get()
	default:
		return pool.New()
	}
}

// payloadPool keeps the payloads of one type WithEvent lent.
type payloadPool struct {
	sync.Pool
	reset func(any) bool // zeroes a payload of the pool's type; false for another type
}

func poolOf[T any]() *payloadPool {
	return &payloadPool{
		Pool: sync.Pool{New: func() any { return new(T) }},
		reset: func(p any) bool {
			v, ok := p.(*T)
			if ok {
				*v = *new(T)
			}
			return ok
		},
	}
}

// The payload pools of the upsert types.
var (
	locationPool  = poolOf[Location]()
	permitPool    = poolOf[Permit]()
	propertyPool  = poolOf[Property]()
	geoSignalPool = poolOf[GeoSignal]()
	leadPool      = poolOf[Lead]()
	catalogPool   = poolOf[CatalogEntry]()
)

// payloadPool is the pool of the payload type of t, an upsert type; nil
// for any other type. A switch, not a map: every decoded event asks
// twice (newPayload, recycle), and the map's look-ups took 0.05 of the
// parse's 0.78 CPU-seconds in a profile of the mix (IngestMix, round 2).
func payloadPoolOf(t Type) *payloadPool {
	switch t {
	case LocationUpserted:
		return locationPool
	case PermitUpserted:
		return permitPool
	case PropertyUpserted:
		return propertyPool
	case GeoSignalUpserted:
		return geoSignalPool
	case LeadUpserted:
		return leadPool
	case CatalogUpserted:
		return catalogPool
	}
	return nil
}

// recycle hands the payload WithEvent lent back for a later WithEvent to
// reuse.
func recycle(env Envelope) {
	if pool := payloadPoolOf(env.Type); pool != nil && env.payload != nil && pool.reset(env.payload) {
		pool.Put(env.payload)
	}
}

// DecodeData parses an upsert's payload strictly into v.
func DecodeData(env Envelope, v any) error {
	if env.payload != nil {
		dst, src := reflect.ValueOf(v), reflect.ValueOf(env.payload)
		if dst.Type() == src.Type() && !dst.IsNil() {
			dst.Elem().Set(src.Elem())
			return nil
		}
	}
	if err := decodeStrict(env.Data, v); err != nil {
		return fmt.Errorf("%w: %s data: %v", ErrInvalid, env.Type, err)
	}
	return nil
}

// Payload returns an upsert's payload as a *T: the one DecodeEvent
// decoded (shared, not copied: treat it as read-only), or else Data
// parsed strictly as DecodeData does.
func Payload[T any](env Envelope) (*T, error) {
	if p, ok := env.payload.(*T); ok {
		return p, nil
	}
	v := new(T)
	if err := DecodeData(env, v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeStrict decodes exactly one JSON value with no unknown fields. The
// common case takes fastDecode's single pass (fastdecode.go); anything it
// is unsure of, and every error, goes through encoding/json's strict
// decoder.
func decodeStrict(raw []byte, v any) error {
	if fastDecode(raw, v) {
		return nil
	}
	return decodeStream(raw, v)
}

// decodeStream is decodeStrict with encoding/json's strict decoder only.
// (goccy/go-json, used here before as about three times faster, reads
// past its buffer on an escaped unknown key: garbage in its messages,
// sometimes a panic, and a checkptr fault under -race. Only input the
// fast path gives up on comes here.)
func decodeStream(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return typeWords(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// typeWords says a value of the wrong JSON kind in JSON's words: the
// field's path and what was there against what goes there
// (`field "type": a JSON number, where a string goes`), where
// encoding/json names Go types (`cannot unmarshal number into Go struct
// field Envelope.type of type events.Type`). Other errors are returned
// as they are.
func typeWords(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil {
		return err
	}
	want := "a value of another kind"
	switch te.Type.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Struct, reflect.Map:
		want = "an object"
	}
	got := "a JSON " + te.Value
	if te.Field == "" {
		return fmt.Errorf("%s, where %s goes", got, want)
	}
	return fmt.Errorf("field %q: %s, where %s goes", te.Field, got, want)
}

// New builds an upsert or delete envelope with a deterministic event id
// (derived from type, entity and version) so a re-run of a producer yields
// byte-identical events. entityID is taken as its JSON carries it: a byte
// that is not UTF-8 becomes U+FFFD, as encoding/json writes it, so that
// the EntityID a publisher keys the message with is the entity_id the
// indexer reads (it refuses a message whose key differs).
func New(t Type, entityID string, version int64, occurred time.Time, source string, data any) (Envelope, error) {
	entityID = asJSONString(entityID)
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

// asJSONString is s as encoding/json encodes it, decoded again: each byte
// of s that is not part of a UTF-8 sequence replaced by U+FFFD.
func asJSONString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString(string(utf8.RuneError))
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
