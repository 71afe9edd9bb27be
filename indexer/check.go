package indexer

import (
	"context"
	"errors"
	"fmt"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// checked compiles the event schemas once for every Check.
var checked events.Validator

// Check reports whether raw, one event as a pipeline publishes it, is one
// the indexer projects once the locations it names exist: nil, or an
// error wrapping events.ErrInvalid that says why in one line. It checks
// what events.Validator checks (the event type's JSON Schema and the
// runtime decoder), the message limit (Params.MaxMessageBytes' default,
// 1 MiB), and then the projection's own rules, the ones a schema cannot
// say or does not (an entity_id that must be its permit's or lead's id,
// a blank permit number, a state code in either case): the same code,
// run with every geography found. So `permitd publish --dry-run`
// reports what would otherwise end in the dead-letter topic, except a
// lead or geo signal whose location is never published, which only the
// indexer, holding the locations, can tell.
func Check(raw []byte) error {
	if len(raw) > DefaultMaxMessageBytes {
		return fmt.Errorf("%w: event of %d bytes exceeds the indexer's limit of %d", events.ErrInvalid, len(raw), DefaultMaxMessageBytes)
	}
	env, err := checked.ValidateEnvelope(raw)
	if err != nil {
		return err
	}
	var b readmodel.Batch
	if err := projectInto(context.Background(), env, everyLocation{}, &b); err != nil {
		if !errors.Is(err, events.ErrInvalid) { // none is transient here: no read
			return fmt.Errorf("%w: %v", events.ErrInvalid, err)
		}
		return err
	}
	return nil
}

// ErrUnknownGeography is wrapped, beside events.ErrInvalid, by the dead
// letters only the locations decide: a geo signal of a geo_id the table
// does not hold, a lead whose anchor and state are both unknown. Check,
// which takes every geography as known, passes those events.
var ErrUnknownGeography = errors.New("indexer: unknown geography")

// unknownGeography is a projection error that ErrUnknownGeography marks;
// its message is the error's own.
type unknownGeography struct{ error }

func (e unknownGeography) Unwrap() []error { return []error{e.error, ErrUnknownGeography} }

// everyLocation finds every geography: a property_id as a property, any
// other geo_id as a ZIP of that id.
type everyLocation struct{}

func (everyLocation) Location(_ context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	t := readmodel.GeoZip
	if geo.IsProperty() {
		t = readmodel.GeoProperty
	}
	return readmodel.Location{GeoID: geo.ID(), GeoType: t}, nil
}
