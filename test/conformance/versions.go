package conformance

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// deleteOutranksItsVersion: a delete and the documents of its own
// entity version end deleted in every order they are applied in
// (readmodel.Writer: a tombstone of v outranks both documents of v), as
// a replay of the log ends. The documents of a permit's version are the
// unlinked copy the indexer writes before its ZIP's location is known
// and the re-link that follows it; each of the six orders of the three
// writes gets a permit and a property of its own. A location, which has no link
// completeness, is deleted by a delete of its version either way too.
// Once every write is in, the permits are in no page, count or stat of
// the ZIP or the state, and applying every write again changes nothing.
func deleteOutranksItsVersion(t *testing.T, e *Env) {
	var others []events.Envelope
	var zip events.Envelope
	for _, env := range LocationEvents(t) {
		if env.EntityID == Zip98101 {
			zip = env
		} else {
			others = append(others, env)
		}
	}
	e.Load(t, others...)

	orders := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	const unlinked, linked, deleted = 0, 1, 2
	writes := make([][3]readmodel.Batch, len(orders)) // each permit's unlinked copy, re-link, delete
	permit := func(i int) events.Envelope {
		num := fmt.Sprintf("D%03d", i)
		return mustEnv(t, events.PermitUpserted, events.PermitDocID("conformance", num), 5, events.Permit{
			PermitNumber: num, PermitType: "Building", WorkType: "New", Status: "Issued", IssueDate: "2025-05-05",
			Description: "Permit " + num, Source: "conformance",
			Address: events.PermitAddress{Line: fmt.Sprintf("%d Pine St", 500+i), City: "Seattle", State: "WA", Zipcode: "98101", ZipSource: "source"}})
	}
	property := func(i int) events.Envelope {
		norm := fmt.Sprintf("%d PINE ST", 500+i)
		return mustEnv(t, events.PropertyUpserted, events.PropertyID("addr:"+norm+"|SEATTLE|WA"), 5, events.Property{
			CanonicalAddress: norm + ", SEATTLE, WA 98101", NormalizedAddress: norm, City: "SEATTLE", State: "WA", Zipcode: "98101"})
	}
	for i := range orders {
		writes[i][unlinked] = e.project(t, permit(i), property(i))
		require.False(t, writes[i][unlinked].Permits[0].Linked(), "projected before its ZIP is known")
		require.False(t, writes[i][unlinked].Properties[0].Linked())
	}
	e.Load(t, zip)
	for i := range orders {
		writes[i][linked] = e.project(t, permit(i), property(i))
		require.True(t, writes[i][linked].Permits[0].Linked())
		require.True(t, writes[i][linked].Properties[0].Linked())
		writes[i][deleted] = e.project(t, mustEnv(t, events.PermitDeleted, permit(i).EntityID, 5, nil),
			mustEnv(t, events.PropertyDeleted, property(i).EntityID, 5, nil))
	}
	apply := func(b readmodel.Batch) readmodel.ApplyResult {
		r, err := e.B.Apply(e.ctx, b)
		require.NoError(t, err)
		e.refresh(t)
		return r
	}
	for i, order := range orders {
		for _, w := range order {
			r := apply(writes[i][w])
			if w == deleted {
				require.Equal(t, readmodel.ApplyResult{Applied: 2}, r, "order %v: the deletes take over whatever their version left", order)
			}
		}
	}

	// A location: its document then its delete, and the other order.
	city := func(name string) string { return events.GeoID("city", name) }
	loc := func(name string) events.Envelope {
		return mustEnv(t, events.LocationUpserted, city(name), 3, events.Location{GeoType: "city", Name: name, DisplayName: name + ", WA",
			State: "WA", StateName: "Washington", Lat: 47.5, Lon: -122.2})
	}
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, apply(e.project(t, loc("Before"))))
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, apply(e.project(t, mustEnv(t, events.LocationDeleted, city("Before"), 3, nil))),
		"a delete of the location's version takes")
	require.Equal(t, readmodel.ApplyResult{Applied: 1}, apply(e.project(t, mustEnv(t, events.LocationDeleted, city("After"), 3, nil))))
	require.Equal(t, readmodel.ApplyResult{Stale: 1}, apply(e.project(t, loc("After"))), "a document of the tombstone's version is stale")

	check := func(when string) {
		for _, name := range []string{"Before", "After"} {
			_, err := e.B.Location(e.ctx, readmodel.ParseGeoRef(city(name)))
			require.ErrorIs(t, err, readmodel.ErrNotFound, "%s: location %s", when, name)
		}
		for _, geo := range []string{Zip98101, WA} {
			l, err := e.B.Location(e.ctx, readmodel.ParseGeoRef(geo))
			require.NoError(t, err)
			require.Zero(t, l.PermitCount, "%s: %s counts a deleted permit", when, geo)
			require.Empty(t, l.LatestPermitDate, "%s: %s", when, geo)
			page, err := e.B.SearchPermits(e.ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 100})
			require.NoError(t, err)
			require.Empty(t, page.Permits, "%s: %s lists a deleted permit", when, geo)
		}
		h, err := e.B.Health(e.ctx)
		require.NoError(t, err)
		require.Zero(t, h.Counts[readmodel.KindPermit], "%s: permits counted", when)
		require.Zero(t, h.Counts[readmodel.KindProperty], "%s: properties counted", when)
		for i := range orders {
			ms, err := e.B.SearchProperties(e.ctx, readmodel.PropertyQuery{Address: fmt.Sprintf("%d Pine St, Seattle, WA 98101", 500+i), Limit: 5})
			require.NoError(t, err)
			require.Empty(t, ms, "%s: a deleted property is found", when)
		}
	}
	check("after every order")

	// Every write again, in one batch each order and in reverse: stale.
	for i := range orders {
		var all readmodel.Batch
		for w := len(orders[i]) - 1; w >= 0; w-- {
			all.Append(writes[i][orders[i][w]])
		}
		require.Equal(t, readmodel.ApplyResult{Stale: 6}, apply(all), "order %v replayed", orders[i])
	}
	check("after a replay")
}
