// Package conformance is the one acceptance suite every read-model backend
// runs: the scenarios are listed once (Scenarios), each backend's test file
// only builds a Harness and calls Run.
//
// Data enters a backend only through the indexer's projection
// (indexer.Project with the backend itself as Lookup), as in production.
// Expected answers are computed from the projected documents by the
// contracts in package readmodel, never read back from a backend.
//
// Gaps are declared once per backend in Harness.Lacks (the capabilities
// list); a scenario that needs a lacking capability skips with a message
// naming it, and a backend that answers ErrUnsupported for a capability
// it does not declare fails.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
)

// Backend is what a harness builds: the three read-model contracts.
type Backend interface {
	readmodel.Reader
	readmodel.Writer
	readmodel.Inspector
}

// Capability names one read a backend may not implement yet.
type Capability string

// The capabilities scenarios ask for.
const (
	CapResolve          Capability = "resolve_candidates"
	CapPropertySearch   Capability = "property_search"
	CapPropertyPermits  Capability = "property_permits"
	CapPropertyLocation Capability = "property_location"
	CapGeoSignals       Capability = "geo_signals"
	CapLeads            Capability = "permit_leads"
	CapStats            Capability = "permit_stats"
	CapCatalog          Capability = "catalog"
	// CapStatsNames: stats top lists name cities and counties as their
	// locations spell them ("King County"), not by the lower-case keys
	// they are counted under ("king county").
	CapStatsNames Capability = "stats_display_names"
)

// Harness builds fresh backends of one kind.
type Harness struct {
	Name string
	// New returns an empty backend; cleanup goes through t.Cleanup.
	New func(t *testing.T) Backend
	// Lacks is the backend's capabilities list: every capability it does
	// not implement, with the reason. Empty for a complete backend.
	Lacks map[Capability]string
}

// Scenario is one conformance check.
type Scenario struct {
	Name string
	Run  func(t *testing.T, e *Env)
}

// Run runs every scenario against a fresh backend of h.
func Run(t *testing.T, h Harness) {
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			sc.Run(t, &Env{h: h, B: h.New(t), ctx: context.Background()})
		})
	}
}

// Env is one scenario's backend and the documents projected into it.
type Env struct {
	h   Harness
	B   Backend
	ctx context.Context

	// Projected documents by id, as the projection produced them (the last
	// version applied wins, deletes remove); the oracle of expectations.
	Locations  map[string]readmodel.Location
	Permits    map[string]readmodel.Permit
	Properties map[string]readmodel.Property
	GeoSignals map[string]readmodel.GeoSignal
	Leads      map[string]readmodel.Lead
	Catalog    map[string]readmodel.CatalogEntry
	versions   map[string]int64 // kind|id -> newest version applied, deletes included
}

// Require skips the scenario when the backend declares it lacks c.
func (e *Env) Require(t *testing.T, c Capability) {
	t.Helper()
	if why, ok := e.h.Lacks[c]; ok {
		t.Skipf("capability %s not implemented by %s provider (declared in its capabilities list: %s)", c, e.h.Name, why)
	}
}

// Check fails on err, and explains an undeclared ErrUnsupported.
func (e *Env) Check(t *testing.T, c Capability, err error) {
	t.Helper()
	if errors.Is(err, readmodel.ErrUnsupported) {
		t.Fatalf("%s provider answered ErrUnsupported for %s but does not declare it in its capabilities list", e.h.Name, c)
	}
	require.NoError(t, err)
}

// refresher is a backend whose Apply promises visibility within a bound
// rather than on return (OpenSearch: the refresh interval): the suite
// asserts contents, not that bound, so it forces the refresh.
type refresher interface {
	Refresh(ctx context.Context) error
}

func (e *Env) refresh(t *testing.T) {
	t.Helper()
	if r, ok := e.B.(refresher); ok {
		require.NoError(t, r.Refresh(e.ctx))
	}
}

// Apply projects envelopes one by one and applies each batch; it returns
// the summed results.
func (e *Env) Apply(t *testing.T, envs ...events.Envelope) readmodel.ApplyResult {
	t.Helper()
	var sum readmodel.ApplyResult
	for _, env := range envs {
		b, err := indexer.Project(e.ctx, env, e.B)
		require.NoError(t, err, "projecting %s %s v%d", env.Type, env.EntityID, env.EntityVersion)
		r, err := e.B.Apply(e.ctx, b)
		require.NoError(t, err, "applying %s %s", env.Type, env.EntityID)
		e.refresh(t)
		sum.Applied += r.Applied
		sum.Stale += r.Stale
		e.record(b)
	}
	return sum
}

func (e *Env) newer(kind readmodel.Kind, id string, v int64) bool {
	if e.versions == nil {
		e.versions = map[string]int64{}
		e.Locations = map[string]readmodel.Location{}
		e.Permits = map[string]readmodel.Permit{}
		e.Properties = map[string]readmodel.Property{}
		e.GeoSignals = map[string]readmodel.GeoSignal{}
		e.Leads = map[string]readmodel.Lead{}
		e.Catalog = map[string]readmodel.CatalogEntry{}
	}
	k := string(kind) + "|" + id
	if old, ok := e.versions[k]; ok && v <= old {
		return false
	}
	e.versions[k] = v
	return true
}

// record keeps the oracle in step with the version rule.
func (e *Env) record(b readmodel.Batch) {
	for _, l := range b.Locations {
		if e.newer(readmodel.KindLocation, l.GeoID, l.Version) {
			e.Locations[l.GeoID] = l
		}
	}
	for _, p := range b.Permits {
		if e.newer(readmodel.KindPermit, p.PermitID, p.Version) {
			e.Permits[p.PermitID] = p
		}
	}
	for _, p := range b.Properties {
		if e.newer(readmodel.KindProperty, p.PropertyID, p.Version) {
			e.Properties[p.PropertyID] = p
		}
	}
	for _, g := range b.GeoSignals {
		if e.newer(readmodel.KindGeoSignal, g.ID(), g.Version) {
			e.GeoSignals[g.ID()] = g
		}
	}
	for _, l := range b.Leads {
		if e.newer(readmodel.KindLead, l.LeadID, l.Version) {
			e.Leads[l.LeadID] = l
		}
	}
	for _, c := range b.Catalog {
		if e.newer(readmodel.KindCatalog, c.ID(), c.Version) {
			e.Catalog[c.ID()] = c
		}
	}
	for _, d := range b.Deletes {
		if !e.newer(d.Kind, d.ID, d.Version) {
			continue
		}
		switch d.Kind {
		case readmodel.KindLocation:
			delete(e.Locations, d.ID)
		case readmodel.KindPermit:
			delete(e.Permits, d.ID)
		case readmodel.KindProperty:
			delete(e.Properties, d.ID)
		case readmodel.KindGeoSignal:
			delete(e.GeoSignals, d.ID)
		case readmodel.KindLead:
			delete(e.Leads, d.ID)
		case readmodel.KindCatalog:
			delete(e.Catalog, d.ID)
		}
	}
}

// Load applies envelopes in two batches, as an indexer batch would: the
// locations first (projections look them up), then everything else.
func (e *Env) Load(t *testing.T, envs ...events.Envelope) readmodel.ApplyResult {
	t.Helper()
	var locs, rest readmodel.Batch
	var others []events.Envelope
	for _, env := range envs {
		if env.Type.Family() == "location" {
			b, err := indexer.Project(e.ctx, env, e.B)
			require.NoError(t, err)
			locs.Append(b)
		} else {
			others = append(others, env)
		}
	}
	var sum readmodel.ApplyResult
	apply := func(b readmodel.Batch) {
		if b.Len() == 0 {
			return
		}
		r, err := e.B.Apply(e.ctx, b)
		require.NoError(t, err)
		e.refresh(t)
		sum.Applied += r.Applied
		sum.Stale += r.Stale
		e.record(b)
	}
	apply(locs)
	for _, env := range others {
		b, err := indexer.Project(e.ctx, env, e.B)
		require.NoError(t, err, "projecting %s %s", env.Type, env.EntityID)
		rest.Append(b)
	}
	apply(rest)
	return sum
}

// Ctx is the scenario's context.
func (e *Env) Ctx() context.Context { return e.ctx }

func (e *Env) String() string { return fmt.Sprintf("%s backend", e.h.Name) }
