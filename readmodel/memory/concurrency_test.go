package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
	"github.com/permitd/permitd/readmodel/resolve"
	"github.com/permitd/permitd/test/conformance"
)

// project turns envelopes into one batch through the indexer's projection,
// looking locations up in the store.
func project(t *testing.T, s *memory.Store, envs []events.Envelope) readmodel.Batch {
	t.Helper()
	b, err := projectBatch(s, envs)
	require.NoError(t, err)
	return b
}

// projectBatch is project for a goroutine other than the test's.
func projectBatch(s *memory.Store, envs []events.Envelope) (readmodel.Batch, error) {
	var b readmodel.Batch
	for _, env := range envs {
		raw, err := json.Marshal(env)
		if err != nil {
			return b, err
		}
		dec, err := events.Decode(raw)
		if err != nil {
			return b, err
		}
		p, err := indexer.Project(context.Background(), dec, s)
		if err != nil {
			return b, err
		}
		b.Append(p)
	}
	return b, nil
}

func loaded(t *testing.T) *memory.Store {
	t.Helper()
	s := memory.New(memory.Params{NewResolver: func() memory.Resolver { return resolve.New() }})
	_, err := s.Apply(context.Background(), project(t, s, conformance.LocationEvents(t)))
	require.NoError(t, err)
	rest := append(conformance.PropertyEvents(t), conformance.PermitEvents(t)...)
	rest = append(rest, conformance.LeadEvents(t)...)
	rest = append(rest, conformance.GeoSignalEvents(t)...)
	rest = append(rest, conformance.CatalogEvents(t)...)
	_, err = s.Apply(context.Background(), project(t, s, rest))
	require.NoError(t, err)
	return s
}

// TestConcurrentReadsDuringWrites runs every read while batches rewrite
// permits and leads (new versions) and add permits; each read sees a
// consistent state: page walks in order without repeats (search_after
// semantics for items whose sort key does not change) and stats whose
// distributions sum to the total. Run it with -race (make test does).
func TestConcurrentReadsDuringWrites(t *testing.T) {
	s := loaded(t)
	ctx := context.Background()
	permits := conformance.PermitEvents(t)
	leads := conformance.LeadEvents(t)

	// The goroutines report with assert (require may not stop a test
	// from another goroutine) and return at the first failure.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rounds atomic.Int64
	var writerDone atomic.Bool
	wg.Go(func() {
		defer writerDone.Store(true)
		for v := int64(2); ; v++ {
			select {
			case <-stop:
				return
			default:
			}
			var envs []events.Envelope
			for i, env := range permits {
				var d events.Permit
				if !assert.NoError(t, json.Unmarshal(env.Data, &d)) {
					return
				}
				d.Description = fmt.Sprintf("%s, revision %d", d.Description, v)
				e, err := events.New(env.Type, env.EntityID, v, env.OccurredAt, env.Source, d)
				if !assert.NoError(t, err) {
					return
				}
				envs = append(envs, e)
				// A new permit in the same ZIP each round: it may or may
				// not show up in a walk under way, but never twice.
				d.PermitNumber = fmt.Sprintf("N%d-%d", v, i)
				d.IssueDate = time.Date(2024, 1, 1+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
				e, err = events.New(env.Type, events.PermitDocID("conformance", d.PermitNumber), 1, env.OccurredAt, env.Source, d)
				if !assert.NoError(t, err) {
					return
				}
				envs = append(envs, e)
			}
			for i, env := range leads {
				// Every other lead moves to another day each round: its
				// keys on the written side are built (lead_bulk.go) while
				// readers build theirs on the other side.
				if i%2 == 0 {
					var d events.Lead
					if !assert.NoError(t, json.Unmarshal(env.Data, &d)) {
						return
					}
					d.EventDateUsed = time.Date(2024, 3, 1+int(v%20), 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
					e, err := events.New(env.Type, env.EntityID, 1000+v, env.OccurredAt, env.Source, d)
					if !assert.NoError(t, err) {
						return
					}
					envs = append(envs, e)
					continue
				}
				env.EntityVersion = 1000 + v
				envs = append(envs, env)
			}
			b, err := projectBatch(s, envs)
			if !assert.NoError(t, err) {
				return
			}
			if _, err := s.Apply(ctx, b); !assert.NoError(t, err) {
				return
			}
			rounds.Add(1)
		}
	})
	// read runs every read once; false after the first failed check.
	read := func() bool {
		seen := map[string]bool{}
		var after *readmodel.PermitKey
		for {
			page, err := s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(conformance.Zip98101), Desc: true, Limit: 7, After: after})
			if !assert.NoError(t, err) {
				return false
			}
			for i, h := range page.Permits {
				if !assert.False(t, seen[h.Permit.PermitID], "permit %s seen twice in one page walk", h.Permit.PermitID) {
					return false
				}
				seen[h.Permit.PermitID] = true
				if i > 0 && h.Permit.IssueDate != "" && !assert.GreaterOrEqual(t, page.Permits[i-1].Permit.IssueDate, h.Permit.IssueDate) {
					return false
				}
			}
			if page.Next == nil {
				break
			}
			after = page.Next
		}
		if !assert.NotEmpty(t, seen, "the walk saw permits") {
			return false
		}
		st, err := s.PermitStats(ctx, readmodel.StatsQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(conformance.WA)}, Today: conformance.Today, TopN: 10})
		if !assert.NoError(t, err) ||
			!assert.Positive(t, st.Total) ||
			!assert.Equal(t, st.Total, st.ConfidenceHigh+st.ConfidenceMedium+st.ConfidenceLow) ||
			!assert.Equal(t, st.Total, st.Fresh0to7+st.Fresh8to14+st.Fresh15to30+st.Fresh31Plus) {
			return false
		}
		_, err = s.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "Seattle", Limit: 5})
		if !assert.NoError(t, err) {
			return false
		}
		_, err = s.Location(ctx, readmodel.ParseGeoRef(conformance.Seattle))
		if !assert.NoError(t, err) {
			return false
		}
		for _, geo := range []string{conformance.WA, conformance.Seattle, conformance.Zip98101} {
			for _, sort := range []readmodel.LeadSort{readmodel.SortConfidenceDesc, readmodel.SortEventDateDesc} {
				page, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(geo)}, Sort: sort, Limit: 10})
				if !assert.NoError(t, err) || (geo == conformance.WA && !assert.NotEmpty(t, page.Leads)) {
					return false
				}
			}
		}
		return true
	}
	// Each reader runs until the writer has written a few rounds (how
	// long that takes depends on the machine's load, not on a clock).
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for i := 0; i < 5 || (rounds.Load() < 3 && !writerDone.Load()); i++ {
				if !read() {
					return
				}
			}
		})
	}
	readers.Wait()
	close(stop)
	wg.Wait()
	require.GreaterOrEqual(t, rounds.Load(), int64(3), "the reads ran while batches were written")
}

// TestReadsHandOutCopies: mutating what a read returned never changes
// the read model.
func TestReadsHandOutCopies(t *testing.T) {
	s := loaded(t)
	ctx := context.Background()

	loc, err := s.Location(ctx, readmodel.ParseGeoRef(conformance.Zip98101))
	require.NoError(t, err)
	before := loc.Clone()
	require.NotEmpty(t, loc.CountyGeoIDs, "a ZIP with counties to mutate")
	for i := range loc.CountyGeoIDs {
		loc.CountyGeoIDs[i] = "mutated"
	}
	loc.Aliases = append(loc.Aliases, "mutated")
	again, err := s.Location(ctx, readmodel.ParseGeoRef(conformance.Zip98101))
	require.NoError(t, err)
	require.Equal(t, before, again)

	page, err := s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(conformance.Zip98101), Desc: true, Limit: 5})
	require.NoError(t, err)
	require.NotEmpty(t, page.Permits)
	want := page.Permits[0].Permit.Clone()
	p := &page.Permits[0].Permit
	require.NotEmpty(t, p.GeoLinks, "a permit with geo links to mutate")
	require.NotNil(t, p.Valuation, "a permit with a valuation to mutate")
	for i := range p.GeoLinks {
		p.GeoLinks[i].GeoID = "mutated"
	}
	*p.Valuation = -1
	page2, err := s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(conformance.Zip98101), Desc: true, Limit: 5})
	require.NoError(t, err)
	require.Equal(t, want, page2.Permits[0].Permit)

	leads, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(conformance.WA)}, Sort: readmodel.SortEventDateDesc, Limit: 5})
	require.NoError(t, err)
	require.NotEmpty(t, leads.Leads)
	wantLead := leads.Leads[0].Clone()
	require.NotEmpty(t, leads.Leads[0].ReasonCodes, "a lead with reason codes to mutate")
	require.NotNil(t, leads.Leads[0].Confidence, "a lead with a confidence to mutate")
	for i := range leads.Leads[0].ReasonCodes {
		leads.Leads[0].ReasonCodes[i] = "MUTATED"
	}
	*leads.Leads[0].Confidence = -1
	leads2, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(conformance.WA)}, Sort: readmodel.SortEventDateDesc, Limit: 5})
	require.NoError(t, err)
	require.Equal(t, wantLead, leads2.Leads[0])

	got, err := s.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef(conformance.Seattle), nil)
	require.NoError(t, err)
	sig := got.Signals
	require.NotEmpty(t, sig, "Seattle has signals to mutate")
	require.NotEmpty(t, sig[0].Value)
	wantSig := sig[0].Clone()
	sig[0].Value[0] = 'X'
	sig[0].Reasons = append(sig[0].Reasons[:0], "mutated")
	got2, err := s.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef(conformance.Seattle), nil)
	require.NoError(t, err)
	require.Equal(t, wantSig, got2.Signals[0])
}
