// Package signals is permitd's reference signal pipeline: it reads
// location and permit events and writes signal-computation events —
// catalog entries, permit leads and geo signal rows — under the contracts
// of package events. External pipelines publish the same events.
//
// The methodology (which permits qualify for which key, the dates used,
// confidence factors, reason codes, geo signal formulas) is written up in
// docs/signals.md and published in each catalog entry's spec.
//
// Determinism: given the same input events and AsOf, the output is
// byte-identical. Leads do not depend on AsOf except that a lead dated
// after AsOf is not emitted yet; geo signal rows are versioned by AsOf.
package signals

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
)

// Versioning of the methodology.
const (
	// SignalVersion is every key's active_signal_version.
	SignalVersion = "1.0.0"
	// Revision orders methodology versions: catalog entity versions and the
	// last three digits of lead entity versions.
	Revision = 1
	// WeightsProfileID names the confidence and score weights in use.
	WeightsProfileID = "baseline-2025-11"
	// Source is the envelope source of every event this pipeline writes.
	Source = "permitd-signals"
)

// Params configure a Pipeline.
type Params struct {
	// AsOf is the computation instant: geo windows end at it, leads dated
	// after it wait for a later run. Required.
	AsOf time.Time
	// States lists states that get catalog entries even without permits
	// (upper case); WA is always included.
	States []string
}

// Report counts what a run read and wrote.
type Report struct {
	PermitsRead    int            `json:"permits_read"`
	LocationsRead  int            `json:"locations_read"`
	Leads          int            `json:"leads"`
	LeadDeletes    int            `json:"lead_deletes"`
	LeadsByKey     map[string]int `json:"leads_by_key"`
	GeoSignals     int            `json:"geo_signals"`
	CatalogEntries int            `json:"catalog_entries"`
	Ignored        int            `json:"ignored"` // events of other types
	// VersionTooLarge counts permits and permit deletes whose entity
	// version is over MaxLeadPermitVersion: they have no lead version,
	// so no lead is written or deleted for them.
	VersionTooLarge int `json:"version_too_large"`
}

// Emit receives one event; an error stops the run.
type Emit = func(events.Envelope) error

// Pipeline consumes events with Add and emits the geo signals and catalog
// with Finish. Leads are emitted as their permits arrive. Not safe for
// concurrent use.
//
// Where its output goes is the emit of each call: Add and Finish write to
// the emit given to New; Tee and FinishTo name theirs. A pipeline that
// reads several streams, each with its own destination (the embedded
// feed's producers), uses the latter.
type Pipeline struct {
	p    Params
	emit Emit
	rep  Report

	// emitted remembers, per permit, the version and keys of the leads
	// written, so a newer snapshot that no longer qualifies for a key
	// deletes that lead.
	emitted map[string]permitLeads
	geo     *geoAcc
	states  map[string]bool
}

type permitLeads struct {
	version int64
	keys    uint8 // bit i: PermitSignalKeys[i]
}

// errNoEmit is what Add and Finish return on a Pipeline made without an
// emit.
var errNoEmit = errors.New("signals: no emit given to New: use Tee and FinishTo")

// New returns a Pipeline whose Add and Finish write to emit. emit may be
// nil for a pipeline read only through Tee and finished with FinishTo;
// Add and Finish then fail.
func New(p Params, emit Emit) (*Pipeline, error) {
	if p.AsOf.IsZero() {
		return nil, errors.New("signals: AsOf is required")
	}
	if p.AsOf.Unix() < 1 {
		// Geo signal rows are versioned by it in Unix seconds, and a
		// version is positive.
		return nil, fmt.Errorf("signals: AsOf %s is not after 1970-01-01T00:00:00Z", p.AsOf.UTC().Format(time.RFC3339))
	}
	if emit == nil {
		emit = func(events.Envelope) error { return errNoEmit }
	}
	p.AsOf = p.AsOf.UTC()
	pl := &Pipeline{
		p:       p,
		emit:    emit,
		rep:     Report{LeadsByKey: map[string]int{}},
		emitted: map[string]permitLeads{},
		geo:     newGeoAcc(p.AsOf),
		states:  map[string]bool{"WA": true},
	}
	for _, s := range p.States {
		pl.states[strings.ToUpper(s)] = true
	}
	return pl, nil
}

func keyBit(key string) uint8 {
	for i, k := range events.PermitSignalKeys {
		if k == key {
			return 1 << i
		}
	}
	return 0
}

// Add consumes one event: location.upserted feeds the geography
// hierarchy, permit.upserted and permit.deleted derive leads; other types
// are ignored. An error from emit stops the run.
func (pl *Pipeline) Add(env events.Envelope) error { return pl.add(env, pl.emit) }

// Tee returns the emit of a stream the pipeline reads on its way to next:
// each envelope goes to next, then to the pipeline as with Add, and the
// leads it derives go to next right after it. The pipeline reads the
// envelope as it is, never a re-decoded copy of what next wrote.
func (pl *Pipeline) Tee(next Emit) Emit {
	return func(env events.Envelope) error {
		if err := next(env); err != nil {
			return err
		}
		return pl.add(env, next)
	}
}

func (pl *Pipeline) add(env events.Envelope, emit Emit) error {
	switch env.Type {
	case events.LocationUpserted:
		var l events.Location
		if err := events.DecodeData(env, &l); err != nil {
			return err
		}
		pl.geo.location(env.EntityID, l)
		pl.rep.LocationsRead++
		return nil
	case events.PermitUpserted:
		var p events.Permit
		if err := events.DecodeData(env, &p); err != nil {
			return err
		}
		pl.rep.PermitsRead++
		return pl.permit(env, p, emit)
	case events.PermitDeleted:
		pl.geo.remove(env.EntityID)
		return pl.retract(env.EntityID, env.EntityVersion, 0, env.OccurredAt, emit)
	}
	pl.rep.Ignored++
	return nil
}

func leadVersion(permitVersion int64) int64 { return permitVersion*1000 + Revision }

// MaxLeadPermitVersion is the largest permit entity version whose leads
// have a version (permit version x 1000 + Revision) that an int64 holds:
// 9,223,372,036,854,775: past a timestamp in microseconds, short of
// one in nanoseconds.
const MaxLeadPermitVersion = (math.MaxInt64 - Revision) / 1000

func (pl *Pipeline) permit(env events.Envelope, p events.Permit, emit Emit) error {
	prev, seen := pl.emitted[env.EntityID]
	if seen && env.EntityVersion <= prev.version {
		return nil // an older or repeated snapshot
	}
	f := permitFacts{
		id: env.EntityID, version: env.EntityVersion, occurred: env.OccurredAt, p: p, class: classify(p),
		issue: parseDate(p.IssueDate), completed: parseDate(p.CompletionDate), zip: address.NormalizeZip(p.Address.Zipcode),
	}
	if st := strings.ToUpper(p.Address.State); len(st) == 2 {
		pl.states[st] = true
	}
	pl.geo.permit(f)
	if f.version > MaxLeadPermitVersion {
		pl.rep.VersionTooLarge++
		return nil
	}
	var keys uint8
	for _, l := range derive(f, pl.p.AsOf) {
		env, err := events.New(events.LeadUpserted, events.LeadID(f.id, l.SignalKey), leadVersion(f.version), f.occurred, Source, &l)
		if err != nil {
			return fmt.Errorf("signals: lead of %s: %w", f.id, err)
		}
		if err := emit(env); err != nil {
			return err
		}
		keys |= keyBit(l.SignalKey)
		pl.rep.Leads++
		pl.rep.LeadsByKey[l.SignalKey]++
	}
	if seen {
		if err := pl.retract(f.id, f.version, keys, f.occurred, emit); err != nil {
			return err
		}
	}
	pl.emitted[f.id] = permitLeads{version: f.version, keys: keys}
	return nil
}

// retract deletes the leads of permitID written earlier in this run that
// are not in keep. For a permit deleted without earlier leads in this run
// it deletes all six (deletes are idempotent tombstones).
func (pl *Pipeline) retract(permitID string, version int64, keep uint8, occurred time.Time, emit Emit) error {
	if version > MaxLeadPermitVersion {
		pl.rep.VersionTooLarge++
		return nil
	}
	prev, seen := pl.emitted[permitID]
	had := prev.keys
	if !seen {
		had = 0xff
	}
	for i, k := range events.PermitSignalKeys {
		bit := uint8(1) << i
		if had&bit == 0 || keep&bit != 0 {
			continue
		}
		env, err := events.New(events.LeadDeleted, events.LeadID(permitID, k), leadVersion(version), occurred, Source, nil)
		if err != nil {
			return err
		}
		if err := emit(env); err != nil {
			return err
		}
		pl.rep.LeadDeletes++
	}
	if keep == 0 {
		pl.emitted[permitID] = permitLeads{version: version}
	}
	return nil
}

// Finish emits the catalog of every state seen (and WA), then the geo
// signal rows, and returns the report.
func (pl *Pipeline) Finish(ctx context.Context) (Report, error) { return pl.FinishTo(ctx, pl.emit) }

// FinishTo is Finish writing to emit.
func (pl *Pipeline) FinishTo(ctx context.Context, emit Emit) (Report, error) {
	for _, st := range slices.Sorted(maps.Keys(pl.states)) {
		for _, e := range Catalog(st) {
			env, err := events.New(events.CatalogUpserted, events.CatalogID(e.State, e.SignalKey), Revision, pl.p.AsOf, Source, &e)
			if err != nil {
				return pl.rep, err
			}
			if err := emit(env); err != nil {
				return pl.rep, err
			}
			pl.rep.CatalogEntries++
		}
	}
	rows := pl.geo.rows()
	for i, g := range rows {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return pl.rep, err
			}
		}
		env, err := events.New(events.GeoSignalUpserted, events.GeoSignalID(g.GeoID, g.SignalKey), pl.p.AsOf.Unix(), pl.p.AsOf, Source, &g)
		if err != nil {
			return pl.rep, err
		}
		if err := emit(env); err != nil {
			return pl.rep, err
		}
		pl.rep.GeoSignals++
	}
	return pl.rep, nil
}
