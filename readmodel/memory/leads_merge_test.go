package memory_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// randomLeads makes n leads of the state and city A over four keys, with
// null dates and confidences, ties on both, and a few years of dates.
func randomLeads(r *rand.Rand, n int) []readmodel.Lead {
	out := make([]readmodel.Lead, n)
	base := time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		l := readmodel.Lead{
			LeadID:    fmt.Sprintf("lead-%05d", i),
			SignalKey: fmt.Sprintf("k%d", r.IntN(4)),
			GeoIDs:    []string{lrState, lrCityA},
			Version:   1,
			Location: readmodel.LeadLocation{
				CityNorm: fmt.Sprintf("city %d", r.IntN(9)), ZipcodeNorm: fmt.Sprint(98000 + r.IntN(30)), CountyNorm: fmt.Sprintf("county %d", r.IntN(4)),
			},
		}
		if r.IntN(20) > 0 {
			l.EventDateUsed = base.AddDate(0, 0, r.IntN(15*365)).Format(time.DateOnly)
		}
		if r.IntN(10) > 0 {
			c := float64(r.IntN(41)) / 40 // ties
			if r.IntN(3) == 0 {
				c = r.Float64()
			}
			l.Confidence = &c
		}
		if r.IntN(30) == 0 {
			l.Location.CityNorm = "" // null values are not listed
		}
		out[i] = l
	}
	return out
}

func randomFilter(r *rand.Rand) readmodel.LeadFilter {
	f := readmodel.LeadFilter{Geo: readmodel.ParseGeoRef([]string{lrState, lrCityA}[r.IntN(2)])}
	day := func() string {
		return time.Date(2011+r.IntN(17), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	}
	switch r.IntN(5) {
	case 1:
		f.FromDate = day()
	case 2:
		f.ToDate = day()
	case 3:
		f.FromDate, f.ToDate = day(), day()
	case 4:
		f.FreshSince = day()
	}
	if r.IntN(2) == 0 {
		c := float64(r.IntN(45)) / 40
		if r.IntN(2) == 0 {
			c = r.Float64()
		}
		f.MinConfidence = &c
	}
	for k := range 5 {
		if r.IntN(3) == 0 {
			f.SignalKeys = append(f.SignalKeys, fmt.Sprintf("k%d", k))
		}
	}
	return f
}

// keep is the brute-force filter.
func keep(f readmodel.LeadFilter, l readmodel.Lead) bool {
	if !slices.Contains(l.GeoIDs, f.Geo.ID()) || len(f.SignalKeys) > 0 && !slices.Contains(f.SignalKeys, l.SignalKey) {
		return false
	}
	lo := max(f.FromDate, f.FreshSince)
	if lo != "" || f.ToDate != "" {
		if l.EventDateUsed == "" || lo != "" && l.EventDateUsed < lo || f.ToDate != "" && l.EventDateUsed > f.ToDate {
			return false
		}
	}
	return f.MinConfidence == nil || l.Confidence != nil && *l.Confidence >= *f.MinConfidence
}

// TestLeadPagesMatchBruteForce: a cursor walk of any filter in either
// order yields exactly the brute-force sort of the matching leads.
func TestLeadPagesMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	leadPagesMatchBruteForce(t, r, randomLeads(r, 3000), 150)
}

// TestLeadPagesMatchBruteForceOnTies is TestLeadPagesMatchBruteForce with
// leads that tie on everything but their ids: three days and three
// confidences, and ids sharing their first bytes (those the trees'
// items abbreviate), of events.LeadID's form and not, so that a cursor
// is sought among its ties (memory's seek keys).
func TestLeadPagesMatchBruteForceOnTies(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	leads := randomLeads(r, 3000)
	for i := range leads {
		l := &leads[i]
		switch i % 3 {
		case 0:
			l.LeadID = fmt.Sprintf("lead-%05d", i) // "lead-000" abbreviated
		case 1:
			l.LeadID = fmt.Sprintf("lead_%024x", i) // events.LeadID's form, "00000000" abbreviated
		default:
			l.LeadID = fmt.Sprintf("lead_%08x%016x", r.IntN(4), r.Uint64())
		}
		l.EventDateUsed = []string{"", "2020-03-01", "2020-03-02", "2020-03-03"}[r.IntN(4)]
		switch c := []float64{0.5, 0.75, -1}[r.IntN(3)]; c {
		case -1:
			l.Confidence = nil
		default:
			l.Confidence = &c
		}
	}
	leadPagesMatchBruteForce(t, r, leads, 60)
}

// leadPagesMatchBruteForce walks 150 random filters' pages in either
// order over leads, at least minFound of the walks yielding leads.
func leadPagesMatchBruteForce(t *testing.T, r *rand.Rand, leads []readmodel.Lead, minFound int) {
	ctx := context.Background()
	s := memory.New(memory.Params{})
	_, err := s.Apply(ctx, readmodel.Batch{Locations: lrLocations(), Leads: leads})
	require.NoError(t, err)
	// Rewrite a third: in place (a new permit number only) or with a new
	// date or confidence; pages list the new documents.
	var rw readmodel.Batch
	for i := range leads {
		if r.IntN(3) > 0 {
			continue
		}
		l := leads[i].Clone()
		l.Version, l.PermitNumber = 2, fmt.Sprintf("P-%d", i)
		switch r.IntN(4) {
		case 0:
			l.EventDateUsed = randomLeads(r, 1)[0].EventDateUsed
		case 1:
			l.Confidence = randomLeads(r, 1)[0].Confidence
		}
		leads[i] = l
		rw.Leads = append(rw.Leads, l)
	}
	_, err = s.Apply(ctx, rw)
	require.NoError(t, err)
	found := 0 // walks that yield leads: not every filter may match nothing
	for i := range 150 {
		f := randomFilter(r)
		for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
			var want []string
			var sel []readmodel.Lead
			for _, l := range leads {
				if keep(f, l) {
					sel = append(sel, l)
				}
			}
			if sort == readmodel.SortEventDateDesc {
				slices.SortFunc(sel, leadByDate)
			} else {
				slices.SortFunc(sel, leadByConf)
			}
			for _, l := range sel {
				want = append(want, l.LeadID+"/"+l.PermitNumber)
			}
			var got []string
			var after *readmodel.LeadKey
			limit := 1 + r.IntN(100)
			for {
				page, err := s.PermitLeads(ctx, readmodel.LeadQuery{Filter: f, Sort: sort, Limit: limit, After: after})
				require.NoError(t, err)
				for _, l := range page.Leads {
					got = append(got, l.LeadID+"/"+l.PermitNumber)
				}
				if page.Next == nil {
					break
				}
				after = page.Next
			}
			require.Equal(t, want, got, "case %d %s %+v", i, sort, f)
			if len(got) > 0 {
				found++
			}
		}
	}
	require.Greater(t, found, minFound, "walks that yield leads (the seed is fixed)")
}

// leadConf is a lead's confidence, and whether it has one.
func leadConf(l readmodel.Lead) (bool, float64) {
	if l.Confidence == nil {
		return false, 0
	}
	return true, *l.Confidence
}

// leadDateDesc orders leads by event date, newest first, null last.
func leadDateDesc(a, b readmodel.Lead) int {
	switch {
	case a.EventDateUsed == b.EventDateUsed:
		return 0
	case a.EventDateUsed == "":
		return 1
	case b.EventDateUsed == "":
		return -1
	}
	return cmp.Compare(b.EventDateUsed, a.EventDateUsed)
}

// leadByDate is the event-date order's meaning: date, then confidence
// (null last), then lead_id.
func leadByDate(a, b readmodel.Lead) int {
	if c := leadDateDesc(a, b); c != 0 {
		return c
	}
	return leadConfThenID(a, b, false)
}

// leadByConf is the confidence order's meaning: confidence (null
// last), then date, then lead_id.
func leadByConf(a, b readmodel.Lead) int {
	return leadConfThenID(a, b, true)
}

func leadConfThenID(a, b readmodel.Lead, date bool) int {
	ha, ca := leadConf(a)
	hb, cb := leadConf(b)
	if ha != hb {
		if ha {
			return -1
		}
		return 1
	}
	if ca != cb {
		return cmp.Compare(cb, ca)
	}
	if date {
		if c := leadDateDesc(a, b); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.LeadID, b.LeadID)
}
