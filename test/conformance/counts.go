package conformance

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// Issue 13 item 4: a location's permit_count and latest_permit_date, which
// a backend may keep as pre-aggregates (the OpenSearch permit count
// cells), follow permits that move between geographies and issue days,
// lose their property, are deleted, and are delivered again (late,
// redelivered, or the whole topic replayed in batches of several
// messages).

// countedGeos are the geographies and properties whose counts the
// scenario checks.
var countedGeos = []string{Zip98101, Zip98104, Zip98004, Seattle, Bellevue, King, WA, PropUniv, PropSecnd, PropBel}

func checkCounts(t *testing.T, e *Env, when string) {
	t.Helper()
	for _, id := range countedGeos {
		got, err := e.B.Location(e.Ctx(), readmodel.ParseGeoRef(id))
		require.NoError(t, err, id)
		n, latest := permitStats(e, id)
		require.Equal(t, n, got.PermitCount, "%s: permit_count of %s", when, id)
		require.Equal(t, latest, got.LatestPermitDate, "%s: latest_permit_date of %s", when, id)
	}
}

func locationCountsFollow(t *testing.T, e *Env) {
	var stream []events.Envelope
	stream = append(stream, LocationEvents(t)...)
	stream = append(stream, PropertyEvents(t)...)
	first := PermitEvents(t)
	e.Load(t, append(stream, first...)...)
	checkCounts(t, e, "loaded")

	// Moves: every fifth permit to Bellevue's ZIP on a new day, without a
	// property; every seventh re-dated only; two deleted; then late and
	// redelivered versions, which change nothing.
	var moves []events.Envelope
	for i := range 40 {
		num := fmt.Sprintf("P%03d", i)
		id := events.PermitDocID("conformance", num)
		d := events.Permit{PermitNumber: num, PermitType: "Building", WorkType: "New", Status: "Issued", Source: "conformance",
			Address: events.PermitAddress{Line: fmt.Sprintf("%d Main St", 100+i), City: "Seattle", State: "WA", Zipcode: "98101", ZipSource: "source"}}
		switch {
		case i%5 == 0:
			d.IssueDate = "2026-02-0" + fmt.Sprint(1+i%9)
			d.Address.City, d.Address.Zipcode = "Bellevue", "98004"
			moves = append(moves, mustEnv(t, events.PermitUpserted, id, 2, d))
		case i%7 == 0:
			d.IssueDate = "2023-12-24"
			moves = append(moves, mustEnv(t, events.PermitUpserted, id, 2, d))
		case i == 11 || i == 13:
			moves = append(moves, mustEnv(t, events.PermitDeleted, id, 3, nil))
		}
	}
	e.Apply(t, moves...)
	checkCounts(t, e, "after the moves")
	res := e.Apply(t, append(first[:5:5], moves...)...)
	require.Zero(t, res.Applied, "late and redelivered versions change nothing")
	checkCounts(t, e, "after late and redelivered versions")

	// The whole permit topic again, three messages per batch.
	e.replayStale(t, append(first[:len(first):len(first)], moves...), 3)
	checkCounts(t, e, "after a replay of the topic")

	// A move within one batch: v4 then v5 of one permit, and a delete of
	// another with its re-creation at a newer version.
	moved, gone := events.PermitDocID("conformance", "P001"), events.PermitDocID("conformance", "P013")
	d := events.Permit{PermitNumber: "P001", PermitType: "Building", Status: "Issued", Source: "conformance", IssueDate: "2026-03-03",
		Address: events.PermitAddress{Line: "101 Main St", City: "Seattle", State: "WA", Zipcode: "98104", ZipSource: "source"}}
	b := e.project(t,
		mustEnv(t, events.PermitUpserted, moved, 4, d),
		func() events.Envelope {
			d.Address.Zipcode, d.IssueDate = "98101", ""
			return mustEnv(t, events.PermitUpserted, moved, 5, d)
		}(),
		mustEnv(t, events.PermitUpserted, gone, 4, events.Permit{PermitNumber: "P013", PermitType: "Building", Status: "Issued", Source: "conformance", IssueDate: "2026-04-04",
			Address: events.PermitAddress{Line: "113 Main St", City: "Bellevue", State: "WA", Zipcode: "98004", ZipSource: "source"}}))
	_, err := e.B.Apply(e.Ctx(), b)
	require.NoError(t, err)
	e.refresh(t)
	e.record(b)
	checkCounts(t, e, "after a batch with two versions of one permit")
}

// leadStatsFollow: stats (which a backend may answer from pre-aggregated
// cells) after leads move to other days, confidences and anchors, are
// deleted and the topic is replayed in batches, for every kind of
// confidence floor (none, a class bound, zero, between bounds) and
// windows that cut months and years and reach into the freshness days.
func leadStatsFollow(t *testing.T, e *Env) {
	e.Require(t, CapStats)
	e.Load(t, AllEvents(t)...)
	leads := LeadEvents(t)
	anchors := []string{Zip98101, Zip98104, Zip98004}
	var moves []events.Envelope
	for i, env := range leads {
		switch {
		case i%4 == 0:
			var d events.Lead
			require.NoError(t, json.Unmarshal(env.Data, &d))
			d.AnchorGeoID = anchors[(i/4)%3]
			if i%8 == 0 {
				d.EventDateUsed = ""
			} else {
				d.EventDateUsed = t0.AddDate(-1, 0, -i).Format(time.DateOnly)
			}
			c := float64(i%10) / 10
			d.Confidence = &c
			moves = append(moves, mustEnv(t, events.LeadUpserted, env.EntityID, 2000, d))
		case i%9 == 1:
			moves = append(moves, mustEnv(t, events.LeadDeleted, env.EntityID, 2000, nil))
		}
	}
	e.Apply(t, moves...)
	e.replayStale(t, append(leads[:len(leads):len(leads)], moves...), 4)
	floors := []*float64{nil, ptrF(0.5), ptrF(0.75), ptrF(0), ptrF(0.6)}
	windows := [][2]string{{"", ""}, {t0.AddDate(-1, -2, 0).Format(time.DateOnly), ""}, {"", t0.AddDate(0, 0, -20).Format(time.DateOnly)},
		{t0.AddDate(-2, 0, 0).Format(time.DateOnly), t0.AddDate(0, 0, -3).Format(time.DateOnly)}}
	for _, g := range []string{Zip98101, Seattle, King, WA} {
		for _, f := range floors {
			for _, w := range windows {
				filter := readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(g), MinConfidence: f, FromDate: w[0], ToDate: w[1]}
				var match []readmodel.Lead
				for _, l := range e.Leads {
					if leadPasses(l, filter) {
						match = append(match, l)
					}
				}
				st, err := e.B.PermitStats(e.Ctx(), readmodel.StatsQuery{Filter: filter, Today: Today, TopN: 3})
				e.Check(t, CapStats, err)
				st.GeoType = ""
				want := expectStats(match, 3)
				if _, ok := e.h.Lacks[CapStatsNames]; !ok {
					want = e.spellStats(match, 3)
				}
				require.Equal(t, want, normStats(st), "%s floor %v window %v", g, f, w)
			}
		}
	}
}

func ptrF(v float64) *float64 { return &v }
