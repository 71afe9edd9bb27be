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
		b := e.project(t, env)
		r, err := e.B.Apply(e.ctx, b)
		require.NoError(t, err, "applying %s %s", env.Type, env.EntityID)
		e.refresh(t)
		sum.Applied += r.Applied
		sum.Stale += r.Stale
		e.record(b)
	}
	return sum
}

// project projects envelopes, in order, into one batch.
func (e *Env) project(t *testing.T, envs ...events.Envelope) readmodel.Batch {
	t.Helper()
	var b readmodel.Batch
	for _, env := range envs {
		p, err := indexer.Project(e.ctx, env, e.B)
		require.NoError(t, err, "projecting %s %s v%d", env.Type, env.EntityID, env.EntityVersion)
		b.Append(p)
	}
	return b
}

// replayStale applies envs again in batches of per messages and requires
// that none of them changes anything; the oracle is left as it was.
func (e *Env) replayStale(t *testing.T, envs []events.Envelope, per int) {
	t.Helper()
	for i := 0; i < len(envs); i += per {
		r, err := e.B.Apply(e.ctx, e.project(t, envs[i:min(i+per, len(envs))]...))
		require.NoError(t, err)
		require.Zero(t, r.Applied, "a replay is stale")
	}
	e.refresh(t)
}

// walkPermits pages SearchPermits from q to its last page (failing past
// 200 pages) and returns the permit ids in the order served; page, when not
// nil, sees every page first.
func (e *Env) walkPermits(t *testing.T, q readmodel.PermitQuery, page func(readmodel.PermitPage)) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		require.Less(t, pages, 200, "walk does not end")
		p, err := e.B.SearchPermits(e.ctx, q)
		require.NoError(t, err)
		if page != nil {
			page(p)
		}
		for _, h := range p.Permits {
			ids = append(ids, h.Permit.PermitID)
		}
		if p.Next == nil {
			return ids
		}
		q.After = p.Next
	}
}

func (e *Env) newer(kind readmodel.Kind, id string, v int64) bool {
	k := string(kind) + "|" + id
	if old, ok := e.versions[k]; ok && v <= old {
		return false
	}
	e.versions[k] = v
	return true
}

// recordDocs puts each of docs that is newer than the oracle's version
// of its id into the oracle's map of its kind.
func recordDocs[D any](e *Env, kind readmodel.Kind, docs []D, into map[string]D, key func(D) (string, int64)) {
	for _, d := range docs {
		if id, v := key(d); e.newer(kind, id, v) {
			into[id] = d
		}
	}
}

// record keeps the oracle in step with the version rule.
func (e *Env) record(b readmodel.Batch) {
	if e.versions == nil {
		e.versions = map[string]int64{}
		e.Locations = map[string]readmodel.Location{}
		e.Permits = map[string]readmodel.Permit{}
		e.Properties = map[string]readmodel.Property{}
		e.GeoSignals = map[string]readmodel.GeoSignal{}
		e.Leads = map[string]readmodel.Lead{}
		e.Catalog = map[string]readmodel.CatalogEntry{}
	}
	recordDocs(e, readmodel.KindLocation, b.Locations, e.Locations, func(l readmodel.Location) (string, int64) { return l.GeoID, l.Version })
	recordDocs(e, readmodel.KindPermit, b.Permits, e.Permits, func(p readmodel.Permit) (string, int64) { return p.PermitID, p.Version })
	recordDocs(e, readmodel.KindProperty, b.Properties, e.Properties, func(p readmodel.Property) (string, int64) { return p.PropertyID, p.Version })
	recordDocs(e, readmodel.KindGeoSignal, b.GeoSignals, e.GeoSignals, func(g readmodel.GeoSignal) (string, int64) { return g.ID(), g.Version })
	recordDocs(e, readmodel.KindLead, b.Leads, e.Leads, func(l readmodel.Lead) (string, int64) { return l.LeadID, l.Version })
	recordDocs(e, readmodel.KindCatalog, b.Catalog, e.Catalog, func(c readmodel.CatalogEntry) (string, int64) { return c.ID(), c.Version })
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
	var locs readmodel.Batch
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
	apply(e.project(t, others...))
	return sum
}

// Ctx is the scenario's context.
func (e *Env) Ctx() context.Context { return e.ctx }

func (e *Env) String() string { return fmt.Sprintf("%s backend", e.h.Name) }
