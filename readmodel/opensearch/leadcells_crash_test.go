// Lead cells through crashes and the periods of a window, on the fake store of cells_test.go.

package opensearch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/permitd/permitd/readmodel"
	"github.com/stretchr/testify/require"
)

// leadCellCounts are the fake's lead cells without their tags, empty
// ones left out.
func (f *fakeDocs) leadCellCounts(t *testing.T) map[string]leadCellDoc {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]leadCellDoc{}
	for id, d := range f.docs["permitd-lead_cells"] {
		var c leadCellDoc
		require.NoError(t, json.Unmarshal(d.src, &c))
		require.Equal(t, id, leadCellID(c.Anchor, c.SignalKey, c.Level, c.Day))
		for _, n := range []int64{c.High, c.Medium, c.Low, c.Null} {
			require.GreaterOrEqual(t, n, int64(0), "cell %s", id)
		}
		c.Pending = cellPending{}
		if c.High+c.Medium+c.Low+c.Null == 0 {
			require.Empty(t, c.Tops, "an empty cell has no counters: %s", id)
			continue
		}
		out[id] = c
	}
	return out
}

// recountLeads builds the lead cells from the fake's live lead documents
// the plain way.
func (f *fakeDocs) recountLeads(t *testing.T) map[string]leadCellDoc {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]leadCellDoc{}
	for _, d := range f.docs["permitd-leads"] {
		var l leadDoc
		require.NoError(t, json.Unmarshal(d.src, &l))
		if l.Deleted {
			continue
		}
		st := leadStateOf(&l, d.version)
		for _, id := range st.side.Cells {
			c, ok := out[id]
			if !ok {
				c.Anchor, c.SignalKey, c.Level, c.Day = splitLeadCellID(id)
				c.Tops = []leadTop{}
			}
			c.add(&st.side, 1)
			out[id] = c
		}
	}
	return out
}

// randomLeadStream is a randomStream of leads over a few geographies,
// days, confidences and places.
func randomLeadStream(r *rand.Rand, n int) []readmodel.Batch {
	geos := []string{"gcity", "gzip1", "gzip2", "gstate"}
	days := []string{"", "2024-01-01", "2024-01-31", "2024-02-10", "2025-02-10"}
	confs := []*float64{nil, ptr(0.2), ptr(0.5), ptr(0.74), ptr(0.75), ptr(1.0)}
	return randomStream(r, n, readmodel.KindLead, "lead", func(id string, v int64) readmodel.Batch {
		l := readmodel.Lead{LeadID: id, Version: v, SignalKey: []string{"k1", "k2"}[r.IntN(2)], EventDateUsed: days[r.IntN(len(days))],
			Confidence: confs[r.IntN(len(confs))], PermitNumber: "N",
			Location: readmodel.LeadLocation{CityNorm: []string{"", "seattle", "bellevue"}[r.IntN(3)],
				ZipcodeNorm: []string{"", "98101"}[r.IntN(2)], CountyNorm: "king county"}}
		if r.IntN(12) == 0 {
			l.PermitNumber = "BAD"
		}
		for _, g := range geos {
			if r.IntN(2) == 0 {
				l.GeoIDs = append(l.GeoIDs, g)
			}
		}
		return readmodel.Batch{Leads: []readmodel.Lead{l}}
	})
}

// TestLeadCellsExactThroughCrashes is TestPermitCellsExactThroughCrashes
// for the lead stats cells (counts by class and top-list counters in
// day, month and year cells), with permits in the same batches.
func TestLeadCellsExactThroughCrashes(t *testing.T) {
	for seed := range uint64(100) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			s, f := newFakeDocs(t)
			leads, permits := randomLeadStream(r, 30), randomPermitStream(r, 10)
			msgs := append(leads, permits...)
			r.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
			replays := applyStream(t, r, s, f, msgs, crashStream{batch: 5, crash: 10, refusals: true})
			require.Equal(t, f.recountLeads(t), f.leadCellCounts(t), "lead cells after %d crashes, %d replays", f.crashes, replays)
			require.Equal(t, f.recount(t), f.cellCounts(t), "permit cells")
		})
	}
}

// TestLeadPeriodsCoverTheWindow: every day of a window is in exactly one
// planned period, no other day is, and the days from fresh on are read
// as day cells (the freshness buckets need them).
func TestLeadPeriodsCoverTheWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	start := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	day := func(i int) time.Time { return start.AddDate(0, 0, i) }
	const span = 6 * 366
	in := func(s, from, to string) bool { return (from == "" || s >= from) && (to == "" || s <= to) }
	for range 400 {
		lo, hi := "", ""
		if r.IntN(4) > 0 {
			lo = day(r.IntN(span)).Format(time.DateOnly)
		}
		if r.IntN(4) > 0 {
			hi = day(r.IntN(span)).Format(time.DateOnly)
		}
		fresh := day(r.IntN(span))
		ps := leadPeriods(lo, hi, fresh)
		require.Equal(t, lo == "" && hi == "", slices.ContainsFunc(ps, func(p leadPeriod) bool { return p.level == levelNone }))
		for i := range span {
			d := day(i)
			s := d.Format(time.DateOnly)
			var by []string
			for _, p := range ps {
				var key string
				switch p.level {
				case levelDay:
					key = s
				case levelMonth:
					key = s[:8] + "01"
				case levelYear:
					key = s[:5] + "01-01"
				default:
					continue
				}
				if in(key, p.from, p.to) {
					by = append(by, p.level)
				}
			}
			if !in(s, lo, hi) {
				require.Empty(t, by, "window [%s, %s] fresh %s: %s outside, read by %v (%v)", lo, hi, fresh.Format(time.DateOnly), s, by, ps)
				continue
			}
			require.Len(t, by, 1, "window [%s, %s] fresh %s: %s read by %v (%v)", lo, hi, fresh.Format(time.DateOnly), s, by, ps)
			if !d.Before(fresh) {
				require.Equal(t, levelDay, by[0], "%s is fresh", s)
			}
		}
	}
}
