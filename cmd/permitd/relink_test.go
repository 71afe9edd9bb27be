package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// relinkEvents writes an NDJSON file of n permits in ZIP 98101 with a
// derived ZIP of their own confidence (with the state's location, not
// the ZIP's), or, with zip, only the ZIP's location.
func relinkEvents(t *testing.T, n int, zip bool) string {
	t.Helper()
	f := &eventFile{t: t}
	add := f.add
	state := events.GeoID("state", "WA")
	if zip {
		add(events.LocationUpserted, events.GeoID("zip", "98101"), 1, events.Location{GeoType: "zip", Name: "98101", DisplayName: "98101 (Seattle, WA)",
			State: "WA", StateName: "Washington", City: "Seattle", County: "King County", Zipcode: "98101", StateGeoID: state,
			CityGeoID: events.GeoID("city", "seattle"), CountyGeoID: events.GeoID("county", "king"), Lat: 47.6, Lon: -122.3})
	} else {
		add(events.LocationUpserted, state, 1, events.Location{GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120})
		for i := 1; i <= n; i++ {
			num := fmt.Sprintf("R%05d", i)
			add(events.PermitUpserted, events.PermitDocID("test", num), 1, events.Permit{
				PermitNumber: num, PermitType: "Building", IssueDate: "2025-01-02", Source: "test",
				Address: events.PermitAddress{Line: fmt.Sprintf("%d PINE ST", i), City: "TUKWILA", State: "WA", Zipcode: "98101", ZipSource: "nearest_zip", ZipConfidence: 0.7},
			})
		}
	}
	return f.write()
}

// permitsOf is every permit of s, by id.
func permitsOf(t *testing.T, s *memory.Store) []readmodel.Permit {
	t.Helper()
	var all readmodel.Batch
	require.NoError(t, s.Export(t.Context(), 0, func(b readmodel.Batch) error { all.Append(b); return nil }))
	slices.SortFunc(all.Permits, func(a, b readmodel.Permit) int { return strings.Compare(a.PermitID, b.PermitID) })
	return all.Permits
}

// TestSnapshotRestartRelinks: permits written without their ZIP (the
// indexer settled before the ZIP was published) are in the snapshot
// unlinked; after a restart from it, the ZIP published meanwhile
// re-links them, and the read model equals a clean replay's, document
// for document. Without the re-link file beside the snapshot they would
// stay unlinked (and the refusal is logged).
func TestSnapshotRestartRelinks(t *testing.T) {
	brokers := defaultBroker(t)
	snap := filepath.Join(t.TempDir(), "memory.snapshot")

	publishFile(t, brokers, relinkEvents(t, 40, false))
	first, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, `msg="snapshot written"`)
	for _, p := range permitsOf(t, first) {
		require.False(t, p.Linked(), "%s: written before its ZIP", p.PermitID)
	}
	saved, err := os.ReadFile(snap)
	require.NoError(t, err)
	unlinked, err := indexer.ReadUnlinked(indexer.UnlinkedPath(snap))
	require.NoError(t, err)
	require.Len(t, unlinked, 40, "the re-link file holds the 40 permits' messages")

	publishFile(t, brokers, relinkEvents(t, 0, true))
	restarted, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, "snapshot loaded; replaying what came after it")
	require.Contains(t, logs, `msg="re-link file restored"`)
	clean, _ := indexOnce(t, brokers, "", time.Hour, nil)
	want := permitsOf(t, clean)
	require.Len(t, want, 40)
	require.True(t, want[0].Linked())
	require.Equal(t, want, permitsOf(t, restarted), "re-linked exactly as a clean replay links them")
	require.Equal(t, digest(t, clean), digest(t, restarted))
	zip, err := restarted.Location(t.Context(), readmodel.ParseGeoRef(events.GeoID("zip", "98101")))
	require.NoError(t, err)
	require.Equal(t, int64(40), zip.PermitCount)

	// The same restart without the re-link file: logged, and the
	// permits stay as the snapshot holds them.
	require.NoError(t, os.WriteFile(snap, saved, 0o600))
	require.NoError(t, os.Remove(indexer.UnlinkedPath(snap)))
	without, logs := indexOnce(t, brokers, snap, time.Hour, nil)
	require.Contains(t, logs, "re-link file refused")
	require.Contains(t, logs, "unlinked_documents=40")
	for _, p := range permitsOf(t, without) {
		require.False(t, p.Linked())
	}
}

// TestRelinkAfterARestartSettles: a restart from a snapshot holding
// permits written without their ZIP, which is still unpublished when the
// restarted server is ready. The re-link file's messages wait for it
// during the restart's replay and are written without it when the server
// has read every location (it settles); the ZIP published while it runs
// then re-links them all, as a clean replay links them. (They stayed at
// state level: the write at Settle was not remembered for a re-link.)
func TestRelinkAfterARestartSettles(t *testing.T) {
	brokers := defaultBroker(t)
	snap := filepath.Join(t.TempDir(), "memory.snapshot")
	publishFile(t, brokers, relinkEvents(t, 40, false))
	indexOnce(t, brokers, snap, time.Hour, nil)
	var linked int
	_, logs := indexOnce(t, brokers, snap, time.Hour, func(s *memory.Store) {
		for _, p := range permitsOf(t, s) {
			require.False(t, p.Linked(), "%s: its ZIP is not published yet", p.PermitID)
		}
		publishFile(t, brokers, relinkEvents(t, 0, true))
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			linked = 0
			for _, p := range permitsOf(t, s) {
				if p.Linked() {
					linked++
				}
			}
			if linked == 40 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	require.Contains(t, logs, `msg="re-link file restored"`)
	require.Equal(t, 40, linked, "re-linked when their ZIP came")
}

// TestDeleteOfTheUnlinkedVersion: permits written without their ZIP (the
// indexer settled before the ZIP was published), then a delete of each
// at the SAME version, then the ZIP. The deletes take (a tombstone
// outranks the documents of its version), nothing waits for the ZIP any
// more, and neither the state nor the ZIP counts them; a restart from
// the snapshot, and a clean replay of the whole log, end the same. (The
// permits stayed at state level before: the delete was not newer.)
func TestDeleteOfTheUnlinkedVersion(t *testing.T) {
	brokers := defaultBroker(t)
	snap := filepath.Join(t.TempDir(), "memory.snapshot")
	publishFile(t, brokers, relinkEvents(t, 40, false))
	deletes := &eventFile{t: t}
	for i := 1; i <= 40; i++ {
		deletes.add(events.PermitDeleted, events.PermitDocID("test", fmt.Sprintf("R%05d", i)), 1, nil)
	}
	counts := func(s *memory.Store) (state, zip int64) {
		st, err := s.Location(t.Context(), readmodel.ParseGeoRef(events.GeoID("state", "WA")))
		require.NoError(t, err)
		z, err := s.Location(t.Context(), readmodel.ParseGeoRef(events.GeoID("zip", "98101")))
		if err == nil {
			zip = z.PermitCount
		}
		return st.PermitCount, zip
	}
	var left int
	live, _ := indexOnce(t, brokers, snap, time.Hour, func(s *memory.Store) {
		require.Len(t, permitsOf(t, s), 40, "written at state level")
		publishFile(t, brokers, deletes.write())
		publishFile(t, brokers, relinkEvents(t, 0, true))
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			_, err := s.Location(t.Context(), readmodel.ParseGeoRef(events.GeoID("zip", "98101")))
			if left = len(permitsOf(t, s)); left == 0 && err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	require.Zero(t, left, "every permit deleted")
	state, zip := counts(live)
	require.Zero(t, state)
	require.Zero(t, zip)

	restarted, _ := indexOnce(t, brokers, snap, time.Hour, nil)
	clean, _ := indexOnce(t, brokers, "", time.Hour, nil)
	for name, s := range map[string]*memory.Store{"restarted from the snapshot": restarted, "a clean replay": clean} {
		require.Empty(t, permitsOf(t, s), name)
		state, zip := counts(s)
		require.Zero(t, state, name)
		require.Zero(t, zip, name)
	}
	require.Equal(t, digest(t, clean), digest(t, restarted))
	require.Equal(t, digest(t, clean), digest(t, live))
}
