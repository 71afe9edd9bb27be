package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// TestLeadLanesMatchOneByOne applies the same batches to one side
// through apply (its leads in two lanes: lead_lanes.go) and to another
// one lead at a time (putLead), and checks after every batch that every
// lead structure is the same: each (anchor, key)'s two trees, day cells
// with their records and sparse counts, roll-ups with their trees, the
// anchors' versions, the lead table and the records' slots. The batches revise leads (the
// same id more than once in a batch too), move them between anchors,
// keys, days and confidences, revise them in place (only the document
// changes), send stale versions, and delete; small roll-up and sparse
// thresholds make every batch cross them. A third side defers its trees
// (as a replay's does, lead_bulk.go), so takes the one-by-one path, and
// holds the same once they are built. These three build every key as
// it is made (leadIndex.eager). A fourth side leaves its keys unbuilt, as
// the product does (lead_bulk.go), takes the same batches through
// apply, and has random keys built between batches (as first reads
// would); once all are built it holds the same too.
func TestLeadLanesMatchOneByOne(t *testing.T) {
	oldRoll, oldSparse := rollMin, sparseMin
	rollMin, sparseMin = 6, 3
	t.Cleanup(func() { rollMin, sparseMin = oldRoll, oldSparse })
	rng := rand.New(rand.NewPCG(9, 10))
	lanes, one, deferred, lazy := newSide(nil), newSide(nil), newSide(nil), newSide(nil)
	for _, d := range []*side{lanes, one, deferred} {
		d.signals.leads.eager = true
	}
	deferred.signals.leads.deferLeadTrees() // as a replay's side: one by one, trees at the end
	// lazy's keys built between batches (as reads), and those left
	// unbuilt there that a later batch built (a remove)
	read, byWrite := 0, 0
	left := map[*keyLeads]bool{}
	versions := map[string]int64{}
	geos := []string{"us-wa", "zip-a", "zip-b", "city-x", "city-y", "county-k", "jur-1"}
	confs := []float64{0.3, 0.5, 0.75, 0.9}
	newLead := func(id string, version int64) readmodel.Lead {
		l := readmodel.Lead{LeadID: id, SignalKey: []string{"roof", "solar"}[rng.IntN(2)], Version: version,
			ReasonCodes: []string{fmt.Sprint("R", version)},
			Location: readmodel.LeadLocation{CityNorm: []string{"seattle", "tacoma", ""}[rng.IntN(3)],
				ZipcodeNorm: []string{"98101", "98402", ""}[rng.IntN(3)], CountyNorm: []string{"king", "pierce"}[rng.IntN(2)]}}
		if rng.IntN(8) > 0 {
			l.EventDateUsed = fmt.Sprintf("202%d-%02d-%02d", 3+rng.IntN(2), 1+rng.IntN(3), 1+rng.IntN(3)) // many ties on the day
		}
		if rng.IntN(6) > 0 {
			c := confs[rng.IntN(len(confs))] // many ties on the confidence
			l.Confidence = &c
		}
		for _, g := range geos {
			if rng.IntN(2) == 0 {
				l.GeoIDs = append(l.GeoIDs, g)
			}
		}
		return l
	}
	both := func(b *readmodel.Batch) {
		t.Helper()
		got := lanes.apply(b)
		want := oneByOne(one, b.Leads, b.Deletes, one.putLead)
		require.Equal(t, want, got)
		require.Equal(t, leadIndexDump(one), leadIndexDump(lanes))
		require.Equal(t, want, deferred.apply(b))
		require.Equal(t, want, lazy.apply(b))
		for _, a := range lazy.signals.leads.anchors {
			for _, k := range a.keys {
				switch {
				case k.built.Load():
					if left[k] {
						byWrite++
						delete(left, k)
					}
				case rng.IntN(4) == 0:
					k.ready()
					read++
					delete(left, k)
				default:
					left[k] = true
				}
			}
		}
	}
	ids := func(i int) string {
		if i%3 == 0 {
			return fmt.Sprintf("x%03d", i) // an id without events.LeadID's prefix
		}
		return fmt.Sprintf("lead_%03d", i)
	}
	for round := range 30 {
		var b readmodel.Batch
		n := laneMin + rng.IntN(150)
		if round == 0 {
			n = laneMin / 2 // the deferred side's first leads are pending when its lanes would start
		}
		for i := range n {
			id := ids(rng.IntN(300))
			if round == 0 {
				id = ids(i) // new leads only: the deferral lasts
			}
			switch v := versions[id]; {
			case v > 0 && rng.IntN(6) == 0: // stale or equal
				b.Leads = append(b.Leads, newLead(id, v-int64(rng.IntN(2))))
			case v > 0 && rng.IntN(4) == 0: // in place: the same positions, a new document
				row := one.leads.rows[id]
				if row == nil || row.doc == nil {
					versions[id]++
					b.Leads = append(b.Leads, newLead(id, versions[id]))
					continue
				}
				l := row.doc.lead
				versions[id]++
				l.Version, l.ReasonCodes = versions[id], []string{fmt.Sprint("R", versions[id])}
				b.Leads = append(b.Leads, l)
			default:
				versions[id]++
				b.Leads = append(b.Leads, newLead(id, versions[id]))
			}
		}
		for range rng.IntN(10) * min(round, 1) {
			id := ids(rng.IntN(300))
			versions[id]++
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: readmodel.KindLead, ID: id, Version: versions[id]})
		}
		both(&b)
		if round == 0 {
			require.True(t, deferred.signals.leads.deferTrees)
		}
	}
	deferred.signals.leads.buildTrees()
	require.Equal(t, leadIndexDump(one), leadIndexDump(deferred))
	require.Positive(t, read, "keys built as reads build them")
	require.Positive(t, byWrite, "and by a remove")
	lazy.signals.leads.buildTrees()
	require.Equal(t, leadIndexDump(one), leadIndexDump(lazy))
}

// leadIndexDump describes every lead structure of s by value, in order.
func leadIndexDump(s *side) map[string][]string {
	out := map[string][]string{}
	items := func(name string, t interface {
		Scan(func(leadItem) bool)
	}) {
		t.Scan(func(it leadItem) bool {
			r := s.signals.leads.rec(it)
			if it != itemOf(r) {
				out[name] = append(out[name], fmt.Sprintf("stale item %+v", it))
			}
			out[name] = append(out[name], fmt.Sprint(r.lead.LeadID, " ", r.lead.Version, " ", r.date, " ", r.hasConf, " ", r.conf))
			return true
		})
	}
	cell := func(c *leadDayCell) string {
		sp := "none"
		if c.sp != nil {
			sp = fmt.Sprintf("%v", *c.sp)
		}
		return fmt.Sprintf("n %d conf %v recs %v/%d sp %s", c.n, c.conf, c.recs.r, c.recs.nc, sp)
	}
	roll := func(ru *rollup) string {
		fen := "none"
		if ru.fen != nil {
			fen = fmt.Sprintf("%v", *ru.fen)
		}
		return fmt.Sprintf("%v %d %d n %d fen %s", ru.all, ru.lo, ru.hi, ru.n, fen)
	}
	for g, a := range s.signals.leads.anchors {
		out["anchor "+g] = []string{fmt.Sprint("version ", a.version, " ids ", a.ids)}
		for _, k := range a.keys {
			name := g + " " + k.key
			if k.byDate != nil { // nil: not built, empty
				items("date "+name, k.byDate)
				items("conf "+name, k.byConf)
			}
			if len(k.pend) > 0 {
				out["pend "+name] = []string{fmt.Sprint(len(k.pend))}
			}
			d := &k.days
			l := []string{"null " + cell(&d.null), "all " + roll(&d.allRoll), fmt.Sprint("periods ", d.periods)}
			for i, day := range d.days {
				l = append(l, fmt.Sprint(day, " ", cell(d.cell(i))))
			}
			for _, ru := range slices.Concat(d.years, d.months) {
				l = append(l, roll(ru))
			}
			out["days "+name] = l
		}
	}
	for id, row := range s.leads.rows {
		st := fmt.Sprint("version ", row.version, " deleted ", row.deleted)
		if r := row.doc; r != nil {
			st += fmt.Sprintf(" %v %v %v %d %v %v %d %d %d", r.lead.Version, r.lead.ReasonCodes, r.lead.GeoIDs, r.date, r.hasConf, r.conf,
				r.city, r.zip, r.county)
		}
		out["row "+id] = []string{st}
		if r := row.doc; r != nil && (r.slot == 0 || s.signals.leads.recs[r.slot] != r) {
			out["slots"] = append(out["slots"], fmt.Sprintf("lead %s's record not in its slot %d", id, r.slot))
		}
	}
	// Every placed record is a row's: a replaced or deleted lead's slot
	// was freed (leadIndex.drop).
	live := 0
	for _, r := range s.signals.leads.recs {
		if r != nil {
			live++
		}
	}
	out["slots"] = append(out["slots"], fmt.Sprint("placed ", live, " free ", len(s.signals.leads.free)+live == len(s.signals.leads.recs)-1))
	return out
}
