package signals

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
)

var asOf = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)

func permitEnv(t *testing.T, num string, version int64, p events.Permit) events.Envelope {
	p.PermitNumber, p.Source = num, "test"
	if p.Address.State == "" {
		p.Address = events.PermitAddress{Line: "1 MAIN ST", City: "Seattle", State: "WA", Zipcode: "98101"}
	}
	env, err := events.New(events.PermitUpserted, events.PermitDocID("test", num), version, asOf, "test", p)
	require.NoError(t, err)
	return env
}

func run(t *testing.T, envs ...events.Envelope) ([]events.Envelope, Report) {
	var out []events.Envelope
	pl, err := New(Params{AsOf: asOf}, func(e events.Envelope) error { out = append(out, e); return nil })
	require.NoError(t, err)
	for _, e := range envs {
		require.NoError(t, pl.Add(e))
	}
	rep, err := pl.Finish(context.Background())
	require.NoError(t, err)
	return out, rep
}

func leadsOf(t *testing.T, out []events.Envelope) map[string]events.Lead {
	m := map[string]events.Lead{}
	for _, e := range out {
		if e.Type == events.LeadUpserted {
			var l events.Lead
			require.NoError(t, json.Unmarshal(e.Data, &l))
			m[l.SignalKey] = l
		}
	}
	return m
}

func TestDerive(t *testing.T) {
	v := 2_000_000.0
	cases := []struct {
		name string
		p    events.Permit
		keys []string
	}{
		{"new construction, old enough for every phase", events.Permit{WorkType: "New Construction", Status: "Issued", IssueDate: "2025-01-02", Valuation: &v},
			[]string{KeyNewConstructionIssued, KeyFramingEarly, KeyFramingLate, KeyRoughInEarly, KeyRoughInLate}},
		{"new construction issued last week: only the observed lead", events.Permit{WorkType: "New Construction", IssueDate: "2026-01-08"},
			[]string{KeyNewConstructionIssued}},
		{"demolition", events.Permit{ActionType: "DEMO", IssueDate: "2025-06-01"}, []string{KeySitePrepIssued}},
		{"grading by description", events.Permit{Description: "Grading and shoring for future building", IssueDate: "2025-06-01"}, []string{KeySitePrepIssued}},
		{"cancelled", events.Permit{WorkType: "New Construction", Status: "Cancelled", IssueDate: "2025-01-02"}, nil},
		{"not issued", events.Permit{WorkType: "New Construction"}, nil},
		{"small alteration", events.Permit{WorkType: "Addition/Alteration", IssueDate: "2025-01-02"}, nil},
		{"big alteration: rough-in only", events.Permit{WorkType: "Addition/Alteration", IssueDate: "2025-01-02", Valuation: &v}, []string{KeyRoughInEarly, KeyRoughInLate}},
		{"completed before framing late", events.Permit{WorkType: "New Construction", IssueDate: "2025-01-02", CompletionDate: "2025-02-10"},
			[]string{KeyNewConstructionIssued, KeyFramingEarly}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _ := run(t, permitEnv(t, "1", 1, c.p))
			got := leadsOf(t, out)
			var keys []string
			for _, k := range events.PermitSignalKeys {
				if l, ok := got[k]; ok {
					keys = append(keys, k)
					require.LessOrEqual(t, l.EventDateUsed, asOf.Format(time.DateOnly))
					require.NotNil(t, l.Confidence)
					require.True(t, *l.Confidence > 0 && *l.Confidence < 1)
					require.Equal(t, events.GeoID("zip", "98101"), l.AnchorGeoID)
				}
			}
			require.Equal(t, c.keys, keys)
		})
	}
	// Timing and basis of a $2M new build: size factor 1.5.
	out, _ := run(t, permitEnv(t, "1", 1, cases[0].p))
	got := leadsOf(t, out)
	require.Equal(t, "2025-01-02", got[KeyNewConstructionIssued].EventDateUsed)
	require.Equal(t, events.BasisObservedEvent, got[KeyNewConstructionIssued].SignalBasis)
	require.Equal(t, "2025-02-16", got[KeyFramingEarly].EventDateUsed) // +45 days
	require.Equal(t, events.BasisInferredTiming, got[KeyFramingEarly].SignalBasis)
	require.Contains(t, got[KeyFramingEarly].ReasonCodes, ReasonLargeProject)
}

func TestNewerSnapshotRetractsAndReplayIsStable(t *testing.T) {
	p := events.Permit{WorkType: "New Construction", IssueDate: "2025-01-02"}
	cancelled := p
	cancelled.Status = "Cancelled"
	out, rep := run(t, permitEnv(t, "1", 1, p), permitEnv(t, "1", 2, cancelled), permitEnv(t, "1", 1, p))
	require.Equal(t, 5, rep.Leads)
	require.Equal(t, 5, rep.LeadDeletes)
	for _, e := range out {
		if e.Type == events.LeadDeleted {
			require.Equal(t, int64(2001), e.EntityVersion)
		}
	}
	a, _ := run(t, permitEnv(t, "1", 1, p), permitEnv(t, "2", 1, p))
	b, _ := run(t, permitEnv(t, "1", 1, p), permitEnv(t, "2", 1, p))
	require.Equal(t, a, b, "deterministic")
}

func TestCatalogAndGeo(t *testing.T) {
	var envs []events.Envelope
	for i := range 30 {
		envs = append(envs, permitEnv(t, string(rune('a'+i)), 1, events.Permit{WorkType: "New Construction", IssueDate: asOf.AddDate(0, 0, -10*i).Format(time.DateOnly)}))
	}
	out, rep := run(t, envs...)
	require.Equal(t, 9, rep.CatalogEntries) // WA
	require.Equal(t, 6, rep.GeoSignals)     // derived ZIP and state, 3 keys each
	for _, e := range out {
		switch e.Type {
		case events.CatalogUpserted:
			var c events.CatalogEntry
			require.NoError(t, json.Unmarshal(e.Data, &c))
			var spec map[string]any
			require.NoError(t, json.Unmarshal(c.Spec, &spec))
			require.NotEmpty(t, spec["reason_codes"])
			require.Equal(t, c.Family, spec["family"])
		case events.GeoSignalUpserted:
			var g events.GeoSignal
			require.NoError(t, json.Unmarshal(e.Data, &g))
			require.True(t, g.Score >= 0 && g.Score <= 1 && g.Confidence >= 0 && g.Confidence <= 1)
			require.NotEmpty(t, g.Reasons)
			require.Equal(t, asOf.Unix(), e.EntityVersion)
		}
	}
}

// Tee and FinishTo write what Add and Finish write, each event to the emit
// of the call that produced it: a permit's leads follow it into its own
// stream, the catalog and geo rows go to FinishTo's.
func TestTeeWritesEachStreamItsOwn(t *testing.T) {
	p := events.Permit{WorkType: "New Construction", IssueDate: "2025-01-02"}
	cancelled := p
	cancelled.Status = "Cancelled"
	envs := []events.Envelope{permitEnv(t, "1", 1, p), permitEnv(t, "2", 1, p), permitEnv(t, "1", 2, cancelled)}
	want, wantRep := run(t, envs...)

	pl, err := New(Params{AsOf: asOf}, nil)
	require.NoError(t, err)
	var first, second, last []events.Envelope
	teeFirst := pl.Tee(func(e events.Envelope) error { first = append(first, e); return nil })
	teeSecond := pl.Tee(func(e events.Envelope) error { second = append(second, e); return nil })
	require.NoError(t, teeFirst(envs[0]))
	require.NoError(t, teeSecond(envs[1]))
	require.NoError(t, teeSecond(envs[2]))
	rep, err := pl.FinishTo(context.Background(), func(e events.Envelope) error { last = append(last, e); return nil })
	require.NoError(t, err)
	require.Equal(t, wantRep, rep)

	require.Equal(t, envs[0], first[0], "the permit itself, then its leads")
	require.Equal(t, envs[1], second[0])
	var got []events.Envelope
	for _, s := range [][]events.Envelope{first, second, last} {
		for _, e := range s {
			if e.Source == Source {
				got = append(got, e)
			}
		}
	}
	require.Equal(t, want, got, "the same events as Add and Finish, in the same order")
	for _, e := range last {
		require.Contains(t, []events.Type{events.CatalogUpserted, events.GeoSignalUpserted}, e.Type)
	}

	// Without an emit of its own, Add and Finish fail rather than drop.
	require.ErrorIs(t, pl.Add(permitEnv(t, "3", 1, p)), errNoEmit)
	_, err = pl.Finish(context.Background())
	require.ErrorIs(t, err, errNoEmit)
}

// An as-of instant at or before the Unix epoch would version geo signal
// rows at 0 or less, which the indexer refuses: New refuses it.
func TestAsOfAfterTheEpoch(t *testing.T) {
	for _, at := range []time.Time{time.Unix(0, 0), time.Date(1900, 1, 5, 0, 0, 0, 0, time.UTC)} {
		_, err := New(Params{AsOf: at}, func(events.Envelope) error { return nil })
		require.ErrorContains(t, err, "is not after 1970-01-01T00:00:00Z")
	}
	_, err := New(Params{AsOf: time.Unix(1, 0)}, func(events.Envelope) error { return nil })
	require.NoError(t, err)
}

// A permit whose version has no lead version (over MaxLeadPermitVersion:
// version x 1000 + revision would overflow) gets no lead and no lead
// delete, and is counted; it still counts in the geo signals.
func TestPermitVersionTooLargeForLeads(t *testing.T) {
	p := events.Permit{WorkType: "New Construction", Status: "Issued", IssueDate: "2025-01-02"}
	ok := permitEnv(t, "1", MaxLeadPermitVersion, p)
	over := permitEnv(t, "2", MaxLeadPermitVersion+1, p)
	del, err := events.New(events.PermitDeleted, events.PermitDocID("test", "3"), 1<<62, asOf, "test", nil)
	require.NoError(t, err)
	out, rep := run(t, ok, over, del)
	require.Equal(t, 2, rep.VersionTooLarge)
	require.Equal(t, 2, rep.PermitsRead)
	for _, e := range out {
		switch e.Type {
		case events.LeadUpserted, events.LeadDeleted:
			require.Equal(t, events.LeadID(events.PermitDocID("test", "1"), mustKey(t, e)), e.EntityID)
			require.Positive(t, e.EntityVersion)
		}
	}
	require.Positive(t, rep.Leads)
	require.Zero(t, rep.LeadDeletes)
}

func mustKey(t *testing.T, e events.Envelope) string {
	t.Helper()
	var l events.Lead
	require.NoError(t, json.Unmarshal(e.Data, &l))
	return l.SignalKey
}
