package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// relinkStream is a topic of permits and leads written first without
// their ZIP (permits: state link only; leads: anchored to the state
// only), then re-linked at the SAME version (the ZIP and city enter),
// some of them then versioned again (unlinked and re-linked, on another
// day) and one deleted. Per entity the events keep their order; lateLink
// puts each re-link before its unlinked copy (the copy is then stale).
func relinkStream(r *rand.Rand, lateLink bool) []readmodel.Batch {
	st := readmodel.GeoLink{GeoID: "gWA", GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}
	zip := readmodel.GeoLink{GeoID: "gZIP", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}
	city := readmodel.GeoLink{GeoID: "gCITY", GeoType: readmodel.GeoCity, Confidence: 1, Method: "source_city"}
	days := []string{"2026-11-20", "2026-11-02", "2026-08-15", "2025-12-31"}
	confs := []*float64{nil, ptr(0.3), ptr(0.6), ptr(0.9)}
	var perEntity [][]readmodel.Batch
	for i := range 4 {
		var evs []readmodel.Batch
		for v := int64(1); v <= int64(1+i%2); v++ {
			p := readmodel.Permit{PermitID: fmt.Sprint("src:", i), PermitNumber: "N", Version: v, IssueDate: days[r.IntN(len(days))],
				Address: readmodel.Address{FullAddress: "1 MAIN ST", State: "WA", Zipcode: "98101"}, GeoLinks: []readmodel.GeoLink{st}}
			linked := p.Clone()
			linked.GeoLinks = []readmodel.GeoLink{zip, city, st}
			pair := []readmodel.Batch{{Permits: []readmodel.Permit{p}}, {Permits: []readmodel.Permit{linked}}}
			if lateLink {
				pair[0], pair[1] = pair[1], pair[0]
			}
			evs = append(evs, pair...)
		}
		if i == 3 {
			evs = append(evs, readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "src:3", Version: 2}}})
		}
		perEntity = append(perEntity, evs)
	}
	for i := range 3 {
		var evs []readmodel.Batch
		for v := int64(1); v <= int64(1+i%2); v++ {
			l := readmodel.Lead{LeadID: fmt.Sprint("lead:", i), Version: v, SignalKey: []string{"k1", "k2"}[r.IntN(2)], SignalBasis: "observed_event",
				EventDateUsed: days[r.IntN(len(days))], Confidence: confs[r.IntN(len(confs))], ReasonCodes: []string{},
				Location: readmodel.LeadLocation{State: "WA", CountyNorm: "king county", CityNorm: "seattle", ZipcodeNorm: "98101"},
				GeoIDs:   []string{"gWA"}}
			linked := l.Clone()
			linked.GeoIDs = []string{"gZIP", "gCITY", "gWA"}
			pair := []readmodel.Batch{{Leads: []readmodel.Lead{l}}, {Leads: []readmodel.Lead{linked}}}
			if lateLink {
				pair[0], pair[1] = pair[1], pair[0]
			}
			evs = append(evs, pair...)
		}
		perEntity = append(perEntity, evs)
	}
	// Interleave the entities at random, each in its own order (a keyed
	// topic's partitions).
	var out []readmodel.Batch
	for {
		var open []int
		for i, evs := range perEntity {
			if len(evs) > 0 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return out
		}
		i := open[r.IntN(len(open))]
		out = append(out, perEntity[i][0])
		perEntity[i] = perEntity[i][1:]
	}
}

// crashStream is how applyStream drives the Writer: batches of 1 to
// batch messages, a crash after 1 to crash item writes in one batch of
// three, and whether refused items (dead-lettered) are expected.
type crashStream struct {
	batch, crash int
	refusals     bool
}

// applyStream writes msgs through the Writer as the indexer does: batches
// of random sizes from the last committed message, a crash at a random
// item write now and then (the batch is then replayed with other
// boundaries). It returns how many batches failed and were replayed.
func applyStream(t *testing.T, r *rand.Rand, s *Store, f *fakeDocs, msgs []readmodel.Batch, c crashStream) (replays int) {
	t.Helper()
	for committed, attempts := 0, 0; committed < len(msgs); attempts++ {
		require.Less(t, attempts, 500, "the stream makes progress")
		n := min(1+r.IntN(c.batch), len(msgs)-committed)
		var b readmodel.Batch
		for _, m := range msgs[committed : committed+n] {
			b.Append(m)
		}
		if r.IntN(3) == 0 {
			f.mu.Lock()
			f.crashAfter = 1 + r.IntN(c.crash)
			f.mu.Unlock()
		}
		_, err := s.Apply(context.Background(), b)
		f.mu.Lock()
		f.crashAfter = 0
		f.mu.Unlock()
		var ie *readmodel.ItemErrors
		switch {
		case err == nil, c.refusals && errors.As(err, &ie):
			committed += n // dead letters for the refused ones
		default:
			require.ErrorIs(t, err, readmodel.ErrUnavailable)
			replays++
		}
	}
	return replays
}

// cellGeo is a location the cell tests' permits and leads link to.
type cellGeo struct {
	id string
	t  readmodel.GeoType
}

// cellGeos are the cell tests' locations.
var cellGeos = []cellGeo{{"gZIP", readmodel.GeoZip}, {"gCITY", readmodel.GeoCity}, {"gWA", readmodel.GeoState}}

// memoryOf is a memory backend holding cellGeos and msgs, applied one by
// one in order.
func memoryOf(t *testing.T, msgs []readmodel.Batch) *memory.Store {
	t.Helper()
	mem := memory.New(memory.Params{})
	var locs []readmodel.Location
	for _, g := range cellGeos {
		locs = append(locs, readmodel.Location{GeoID: g.id, GeoType: g.t, Name: g.id, DisplayName: g.id, State: "WA", Version: 1})
	}
	_, err := mem.Apply(context.Background(), readmodel.Batch{Locations: locs})
	require.NoError(t, err)
	for _, m := range msgs {
		_, err := mem.Apply(context.Background(), m)
		require.NoError(t, err)
	}
	return mem
}

// requireCellsAnswer requires the permit and lead cells to equal a
// recount of the stored documents, and each of cellGeos' counts and
// latest days (Location reads the anchor's cells: their sum and newest
// day) and lead stats from the cells to equal mem's answers. It returns
// the ZIP's count and lead stats.
func (f *fakeDocs) requireCellsAnswer(t *testing.T, mem *memory.Store) (int64, readmodel.PermitStats) {
	t.Helper()
	require.Equal(t, f.recount(t), f.cellCounts(t), "permit cells")
	require.Equal(t, f.recountLeads(t), f.leadCellCounts(t), "lead cells")
	var zipCount int64
	var zipStats readmodel.PermitStats
	for _, g := range cellGeos {
		var n int64
		latest := ""
		for id, c := range f.cellCounts(t) {
			if anchor, day := splitCellID(id); anchor == g.id && c > 0 {
				n += c
				latest = max(latest, day)
			}
		}
		want, err := mem.Location(context.Background(), readmodel.ParseGeoRef(g.id))
		require.NoError(t, err)
		require.Equal(t, want.PermitCount, n, "permit count of %s", g.id)
		require.Equal(t, want.LatestPermitDate, latest, "latest permit date of %s", g.id)
		q := readmodel.StatsQuery{Today: "2026-11-22", TopN: -1, Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(g.id)}}
		stats := f.requireCellStats(t, mem, q, "stats of %s", g.id)
		if g.id == "gZIP" {
			zipCount, zipStats = n, stats
		}
	}
	return zipCount, zipStats
}

// TestRelinksMoveCells: a permit and a lead written without their ZIP
// and re-linked at the same version enter the ZIP's and city's cells
// (their (version, linked) order is what the cells call newer), whether
// the re-link comes after the unlinked copy or before it (the copy is
// then stale and moves nothing), through crashes and a replay of the
// whole topic with other boundaries. The cells equal a recount of the
// stored documents; the ZIP's Location count and latest day and its
// stats (from the cells) answer what the memory backend answers; every
// stored document ends without its debt, at its own external version
// (3v unlinked, 3v+1 linked, 3v+2 a tombstone).
func TestRelinksMoveCells(t *testing.T) {
	for _, lateLink := range []bool{false, true} {
		for seed := range uint64(40) {
			t.Run(fmt.Sprintf("lateLink=%v/%d", lateLink, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 13))
				s, f := newFakeDocs(t)
				msgs := relinkStream(r, lateLink)
				mem := memoryOf(t, msgs)
				applyStream(t, r, s, f, msgs, crashStream{batch: 4, crash: 8})
				applyStream(t, r, s, f, msgs, crashStream{batch: 4, crash: 8}) // the topic replayed from the start

				zipCount, zipStats := f.requireCellsAnswer(t, mem)
				require.Positive(t, zipCount, "the re-linked permits are counted under their ZIP")
				require.NotEmpty(t, zipStats.BySignal, "the re-linked leads are in their ZIP's stats")

				// Every stored permit and lead: no debt left, its external
				// version the (version, linked) pair it holds.
				f.mu.Lock()
				defer f.mu.Unlock()
				for _, index := range []string{"permitd-permits", "permitd-leads"} {
					for id, d := range f.docs[index] {
						var src struct {
							Version      int64           `json:"version"`
							Deleted      bool            `json:"deleted"`
							GeoIDs       []string        `json:"geo_ids"`
							CellsPending json.RawMessage `json:"cells_pending"`
						}
						require.NoError(t, json.Unmarshal(d.src, &src))
						require.Empty(t, src.CellsPending, "%s %s keeps a debt", index, id)
						linked := src.Deleted || strings.Contains(strings.Join(src.GeoIDs, ","), "gZIP")
						want := 3 * src.Version
						switch {
						case src.Deleted:
							want += 2
						case linked:
							want++
						}
						require.Equal(t, want, d.version, "%s %s: external version of version %d, linked %v", index, id, src.Version, linked)
						if !src.Deleted {
							require.True(t, linked, "%s %s: the re-link is stored", index, id)
						}
					}
				}
			})
		}
	}
}

// TestRelinkAfterDebtCleared: the debt-clearing rewrite of an unlinked
// permit keeps its external version 3v, so the re-link of v (3v+1),
// arriving in a later batch, still takes and moves the permit into its
// ZIP's cell; a replay of the unlinked copy then moves nothing.
func TestRelinkAfterDebtCleared(t *testing.T) {
	s, f := newFakeDocs(t)
	ctx := context.Background()
	st := readmodel.GeoLink{GeoID: "gWA", GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}
	zip := readmodel.GeoLink{GeoID: "gZIP", GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}
	p := readmodel.Permit{PermitID: "src:1", Version: 4, IssueDate: "2026-11-20",
		Address: readmodel.Address{State: "WA", Zipcode: "98101"}, GeoLinks: []readmodel.GeoLink{st}}
	linked := p.Clone()
	linked.GeoLinks = []readmodel.GeoLink{zip, st}
	res, err := s.Apply(ctx, readmodel.Batch{Permits: []readmodel.Permit{p}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Applied)
	require.Equal(t, map[string]int64{"gWA|2026-11-20": 1}, f.cellCounts(t))
	f.mu.Lock()
	require.Equal(t, int64(12), f.docs["permitd-permits"]["src:1"].version, "the rewrite without the debt stays at 3v")
	require.NotContains(t, string(f.docs["permitd-permits"]["src:1"].src), "cells_pending")
	f.mu.Unlock()

	res, err = s.Apply(ctx, readmodel.Batch{Permits: []readmodel.Permit{linked}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Applied, "the re-link takes over the rewritten unlinked copy")
	require.Equal(t, map[string]int64{"gWA|2026-11-20": 1, "gZIP|2026-11-20": 1}, f.cellCounts(t))
	f.mu.Lock()
	require.Equal(t, int64(13), f.docs["permitd-permits"]["src:1"].version, "the rewrite of the re-link stays at 3v+1")
	f.mu.Unlock()

	res, err = s.Apply(ctx, readmodel.Batch{Permits: []readmodel.Permit{p, linked}})
	require.NoError(t, err)
	require.Equal(t, readmodel.ApplyResult{Stale: 2}, res, "a replay of both copies is stale")
	require.Equal(t, map[string]int64{"gWA|2026-11-20": 1, "gZIP|2026-11-20": 1}, f.cellCounts(t))
	require.Equal(t, f.recount(t), f.cellCounts(t))
}
