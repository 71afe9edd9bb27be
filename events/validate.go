package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Validator checks raw envelopes against the published contract: the
// JSON Schema of their event type (schemas/) and the runtime decoder
// (Decode), so a pipeline can check a file before it sends it (`permitd
// publish --dry-run`). Safe for concurrent use; the schemas compile once.
type Validator struct {
	once    sync.Once
	err     error
	schemas map[string]*jsonschema.Schema // by file name
}

// Validate returns nil when raw is a valid envelope of a known type whose
// data matches its type's schema, else an error wrapping ErrInvalid that
// says why in one line.
func (v *Validator) Validate(raw []byte) error {
	_, err := v.ValidateEnvelope(raw)
	return err
}

// ValidateEnvelope is Validate that also returns the envelope the decoder
// made of raw, for a caller that goes on with it (indexer.Check) rather
// than decoding raw again.
func (v *Validator) ValidateEnvelope(raw []byte) (Envelope, error) {
	v.once.Do(v.compile)
	if v.err != nil {
		return Envelope{}, v.err
	}
	var head struct {
		Type Type `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" { // an object, its type not a string
			return Envelope{}, fmt.Errorf("%w: %v", ErrInvalid, typeWords(err))
		}
		return Envelope{}, fmt.Errorf("%w: not a JSON object: %v", ErrInvalid, typeWords(err))
	}
	if !head.Type.Known() {
		return Envelope{}, fmt.Errorf("%w: unknown event type %q", ErrInvalid, head.Type)
	}
	name := string(head.Type) + ".json"
	if head.Type.IsDelete() {
		name = "deleted.json"
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := v.schemas[name].Validate(doc); err != nil {
		return Envelope{}, fmt.Errorf("%w: schema %s: %s", ErrInvalid, name, oneLine(err))
	}
	return Decode(raw)
}

func (v *Validator) compile() {
	v.schemas = map[string]*jsonschema.Schema{}
	for _, name := range SchemaNames() {
		raw, _ := SchemaFile(name)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			v.err = fmt.Errorf("events: schema %s: %w", name, err)
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		if err := c.AddResource(name, doc); err != nil {
			v.err = fmt.Errorf("events: schema %s: %w", name, err)
			return
		}
		s, err := c.Compile(name)
		if err != nil {
			v.err = fmt.Errorf("events: schema %s: %w", name, err)
			return
		}
		v.schemas[name] = s
	}
}

var englishPrinter = message.NewPrinter(language.English)

// oneLine flattens a schema validation error to its innermost causes on
// one line.
func oneLine(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("at %s: %s", loc, strings.Join(strings.Fields(e.ErrorKind.LocalizedString(englishPrinter)), " ")))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) > 3 {
		leaves = append(leaves[:3], fmt.Sprintf("and %d more", len(leaves)-3))
	}
	return strings.Join(leaves, "; ")
}
