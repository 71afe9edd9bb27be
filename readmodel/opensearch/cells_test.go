package opensearch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permitd/permitd/internal/osgolden"
	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
	"github.com/stretchr/testify/require"
)

// fakeDocs is a stateful fake of the document APIs the Writer uses:
// _bulk (index under external versions or if_seq_no/if_primary_term,
// create) and _mget, with the engine's documented version and sequence
// rules: an index with version_type external takes when no document
// exists or its version is strictly greater than the stored _version
// (external_gte: greater or equal, the cells' debt-clearing rewrite),
// else 409; any other write (an unversioned index, an update or a
// delete) fails the test, as the Writer never sends one. It
// can crash: after crashAfter more item writes it stops in the middle of
// a bulk and answers 503 (the items before are written), as a node or
// the indexer dying mid-batch leaves a batch. A permit whose number is
// "BAD" is refused for good (400), as a mapping rejection is.
type fakeDocs struct {
	mu         sync.Mutex
	seq        int64
	docs       map[string]map[string]*fakeDoc // index (alias, "-write" dropped) -> id
	crashAfter int                            // 0: never
	crashes    int
	requests   []string
	t          testing.TB
}

type fakeDoc struct {
	src     json.RawMessage
	seq     int64
	version int64
}

func newFakeDocs(t testing.TB) (*Store, *fakeDocs) {
	t.Helper()
	f := &fakeDocs{docs: map[string]map[string]*fakeDoc{}, t: t}
	s := storeOn(t, http.HandlerFunc(f.serve))
	return s, f
}

func (f *fakeDocs) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI()+"\n"+string(body))
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/_bulk":
		out, crashed := f.bulk(body)
		if crashed {
			// 500 ends the Apply (the indexer replays the batch); 503 is
			// retried by the client first, which then sees 409 for what
			// the first attempt wrote.
			f.crashes++
			status := http.StatusInternalServerError
			if f.crashes%2 == 0 {
				status = http.StatusServiceUnavailable
			}
			w.WriteHeader(status)
			_, _ = fmt.Fprintf(w, `{"error":{"type":"node_closed_exception","reason":"crashed mid-bulk"},"status":%d}`, status)
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	case strings.HasSuffix(r.URL.Path, "/_mget"):
		index := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/_mget"), "/"), "-write")
		var q struct {
			IDs []string `json:"ids"`
		}
		_ = json.Unmarshal(body, &q)
		docs := []any{}
		for _, id := range q.IDs {
			d := f.docs[index][id]
			if d == nil {
				docs = append(docs, map[string]any{"_index": index, "_id": id, "found": false})
				continue
			}
			docs = append(docs, map[string]any{"_index": index, "_id": id, "found": true, "_version": d.version,
				"_seq_no": d.seq, "_primary_term": 1, "_source": d.src})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"docs": docs})
	case strings.HasSuffix(r.URL.Path, "/_refresh"):
		_, _ = io.WriteString(w, `{"_shards":{"total":1,"successful":1,"failed":0}}`)
	case strings.HasSuffix(r.URL.Path, "/_search/point_in_time"):
		if r.Method == http.MethodDelete {
			_, _ = io.WriteString(w, `{"pits":[]}`)
			return
		}
		_, _ = fmt.Fprintf(w, `{"pit_id":"pit:%s"}`, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/_search/point_in_time"))
	case strings.HasSuffix(r.URL.Path, "/_search"):
		_ = json.NewEncoder(w).Encode(f.search(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/_search"), body))
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"type":"not_found","reason":"fake"},"status":404}`)
	}
}

// bulk applies a _bulk body; crashed when it stopped midway.
func (f *fakeDocs) bulk(body []byte) (map[string]any, bool) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	var items []any
	for sc.Scan() {
		var action map[string]struct {
			Index       string `json:"_index"`
			ID          string `json:"_id"`
			Version     *int64 `json:"version"`
			VersionType string `json:"version_type"`
			IfSeqNo     *int64 `json:"if_seq_no"`
			IfTerm      *int64 `json:"if_primary_term"`
		}
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil {
			panic(err)
		}
		sc.Scan()
		src := json.RawMessage(slices.Clone(sc.Bytes()))
		if f.crashAfter > 0 {
			f.crashAfter--
			if f.crashAfter == 0 {
				return nil, true
			}
		}
		for op, a := range action {
			index := strings.TrimSuffix(a.Index, "-write")
			if f.docs[index] == nil {
				f.docs[index] = map[string]*fakeDoc{}
			}
			cur := f.docs[index][a.ID]
			status := http.StatusOK
			switch {
			case op != "index" && op != "create":
				f.t.Errorf("bulk: %s of %s/%s: the Writer only indexes and creates", op, index, a.ID)
				status = http.StatusBadRequest
			case op == "index" && a.VersionType == "" && a.IfSeqNo == nil:
				// The Writer orders every document write by an external
				// version, and every cell write by its sequence number.
				f.t.Errorf("bulk: index of %s/%s without version_type or if_seq_no", index, a.ID)
				status = http.StatusBadRequest
			case a.VersionType != "" && a.VersionType != "external" && a.VersionType != "external_gte":
				f.t.Errorf("bulk: version_type %q for %s/%s", a.VersionType, index, a.ID)
				status = http.StatusBadRequest
			case strings.Contains(string(src), `"permit_number":"BAD"`):
				status = http.StatusBadRequest
			case op == "create" && cur != nil:
				status = http.StatusConflict
			case a.IfSeqNo != nil && (cur == nil || cur.seq != *a.IfSeqNo || *a.IfTerm != 1):
				status = http.StatusConflict
			case a.VersionType == "external" && cur != nil && cur.version >= *a.Version:
				status = http.StatusConflict
			case a.VersionType == "external_gte" && cur != nil && cur.version > *a.Version:
				status = http.StatusConflict
			}
			item := map[string]any{"_index": index, "_id": a.ID, "status": status}
			if status == http.StatusOK {
				f.seq++
				v := int64(1)
				if a.Version != nil {
					v = *a.Version
				} else if cur != nil {
					v = cur.version + 1
				}
				f.docs[index][a.ID] = &fakeDoc{src: src, seq: f.seq, version: v}
				item["_seq_no"], item["_primary_term"] = f.seq, 1
			} else {
				item["error"] = map[string]any{"type": fmt.Sprintf("fake_%d", status), "reason": "fake"}
			}
			items = append(items, map[string]any{op: item})
		}
	}
	return map[string]any{"errors": true, "items": items}, false
}

// rawDocs is a copy of the fake's documents of kind k, by id.
func (f *fakeDocs) rawDocs(k readmodel.Kind) map[string]fakeDoc {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]fakeDoc{}
	for id, d := range f.docs[mappings.DefaultPrefix+"-"+mappings.Base(k)] {
		out[id] = *d
	}
	return out
}

// cellCounts are the counts of the fake's cells, zero counts left out.
func (f *fakeDocs) cellCounts(t *testing.T) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int64{}
	for id, d := range f.docs["permitd-permit_cells"] {
		var c cellDoc
		require.NoError(t, json.Unmarshal(d.src, &c))
		require.Equal(t, id, cellID(c.Anchor, c.Day))
		require.GreaterOrEqual(t, c.Count, int64(0), "cell %s", id)
		if c.Count != 0 {
			out[id] = c.Count
		}
	}
	return out
}

// recount counts the fake's live permit documents per (anchor, day) the
// plain way: what Location counted with terms on geo_ids and property_id.
func (f *fakeDocs) recount(t *testing.T) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int64{}
	for _, d := range f.docs["permitd-permits"] {
		var p permitDoc
		require.NoError(t, json.Unmarshal(d.src, &p))
		if p.Deleted {
			continue
		}
		seen := map[string]bool{}
		for _, g := range p.GeoIDs {
			if !readmodel.IsPropertyID(g) && !seen[g] {
				seen[g] = true
				out[cellID(g, p.IssueDate)]++
			}
		}
		if p.PropertyID != "" {
			out[cellID(p.PropertyID, p.IssueDate)]++
		}
	}
	return out
}

const cellProp = "prop_00000000000000000000000000000001"

// randomPermitStream is a randomStream of permits over a few
// geographies and days.
func randomPermitStream(r *rand.Rand, n int) []readmodel.Batch {
	geos := []string{"gcity", "gzip1", "gzip2", "gstate", cellProp}
	days := []string{"", "2024-01-01", "2024-01-02", "2024-02-10"}
	return randomStream(r, n, readmodel.KindPermit, "src", func(id string, v int64) readmodel.Batch {
		p := readmodel.Permit{PermitID: id, Version: v, IssueDate: days[r.IntN(len(days))], PermitNumber: "N"}
		if r.IntN(12) == 0 {
			p.PermitNumber = "BAD"
		}
		for _, g := range geos {
			if r.IntN(2) == 0 {
				if g == cellProp {
					p.PropertyID = g
					p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{GeoID: g, GeoType: readmodel.GeoProperty, Confidence: 1, Method: "property_id"})
				} else {
					p.GeoLinks = append(p.GeoLinks, readmodel.GeoLink{GeoID: g, GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"})
				}
			}
		}
		return readmodel.Batch{Permits: []readmodel.Permit{p}}
	})
}

// randomStream is a topic of upserts and deletes of kind over six
// entities ("<prefix>:0" to "<prefix>:5"), versions mostly rising with
// some redelivered or late; upsert builds one version's upsert (a few of
// them documents the cluster refuses). One version of an entity is one
// event: a redelivery repeats it.
func randomStream(r *rand.Rand, n int, kind readmodel.Kind, prefix string, upsert func(id string, v int64) readmodel.Batch) []readmodel.Batch {
	version := map[string]int64{}
	events := map[string]readmodel.Batch{}
	var out []readmodel.Batch
	for range n {
		id := fmt.Sprintf("%s:%d", prefix, r.IntN(6))
		v := version[id] + 1 + int64(r.IntN(2))
		if r.IntN(6) == 0 && version[id] > 1 {
			v = version[id] - 1 // late or redelivered: stale
		}
		version[id] = max(version[id], v)
		key := fmt.Sprintf("%s@%d", id, v)
		if e, ok := events[key]; !ok {
			if r.IntN(7) == 0 {
				e = readmodel.Batch{Deletes: []readmodel.Delete{{Kind: kind, ID: id, Version: v}}}
			} else {
				e = upsert(id, v)
			}
			events[key] = e
		}
		out = append(out, events[key])
	}
	return out
}

// TestPermitCellsExactThroughCrashes drives the Writer as the indexer
// does: batches of random sizes from the last committed message, a crash
// at a random item write (the batch is then replayed from the committed
// message, with other boundaries), refused documents dead-lettered. The
// cells must count exactly the permits the documents hold.
func TestPermitCellsExactThroughCrashes(t *testing.T) {
	for seed := range uint64(150) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			s, f := newFakeDocs(t)
			msgs := randomPermitStream(r, 30)
			crashes := applyStream(t, r, s, f, msgs, crashStream{batch: 5, crash: 8, refusals: true})
			require.Equal(t, f.recount(t), f.cellCounts(t), "cells after %d crashes, %d replays", f.crashes, crashes)
		})
	}
}

// TestPermitCellsMove: a permit moving to another day and geography
// leaves its old cells and enters the new ones; a delete leaves them;
// a rewrite with only other fields changed writes no cell.
func TestPermitCellsMove(t *testing.T) {
	s, f := newFakeDocs(t)
	link := func(g string) []readmodel.GeoLink {
		return []readmodel.GeoLink{{GeoID: g, GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"}, {GeoID: "gstate", GeoType: readmodel.GeoState, Confidence: 1, Method: "state"}}
	}
	apply := func(b readmodel.Batch) {
		t.Helper()
		_, err := s.Apply(context.Background(), b)
		require.NoError(t, err)
	}
	apply(readmodel.Batch{Permits: []readmodel.Permit{
		{PermitID: "a", Version: 1, IssueDate: "2024-01-01", GeoLinks: link("gzip1")},
		{PermitID: "b", Version: 1, IssueDate: "2024-01-01", GeoLinks: link("gzip1")},
	}})
	require.Equal(t, map[string]int64{"gzip1|2024-01-01": 2, "gstate|2024-01-01": 2}, f.cellCounts(t))
	apply(readmodel.Batch{Permits: []readmodel.Permit{{PermitID: "a", Version: 2, IssueDate: "2024-01-02", GeoLinks: link("gzip2")}}})
	require.Equal(t, map[string]int64{"gzip1|2024-01-01": 1, "gstate|2024-01-01": 1, "gzip2|2024-01-02": 1, "gstate|2024-01-02": 1}, f.cellCounts(t))
	f.mu.Lock()
	before := len(f.requests)
	f.mu.Unlock()
	apply(readmodel.Batch{Permits: []readmodel.Permit{{PermitID: "a", Version: 3, IssueDate: "2024-01-02", GeoLinks: link("gzip2"), Status: "final"}}})
	f.mu.Lock()
	require.Len(t, f.requests[before:], 3, "the permits' _mget, the documents' bulk, the stored permits' _mget: no cell changes")
	f.mu.Unlock()
	apply(readmodel.Batch{Deletes: []readmodel.Delete{{Kind: readmodel.KindPermit, ID: "b", Version: 2}}})
	require.Equal(t, map[string]int64{"gzip2|2024-01-02": 1, "gstate|2024-01-02": 1}, f.cellCounts(t))
	for id, d := range f.docs["permitd-permit_cells"] {
		var c cellDoc
		require.NoError(t, json.Unmarshal(d.src, &c))
		require.Empty(t, c.Pending.Tags, "cell %s: every tag cleared once the documents are written", id)
	}
	for id, d := range f.docs["permitd-permits"] {
		require.NotContains(t, string(d.src), "cells_pending", "permit %s: the pending dropped once counted", id)
	}
}

// TestPermitCellsGolden renders the requests of one batch's cells: the
// permits' _mget, the documents' bulk (the new version carries what it
// owes the cells), the stored permits' _mget, the cells' _mget and bulk
// (create for a new cell, index under its sequence number for an
// existing one), the permit rewritten without its pending, the cells'
// tags cleared.
func TestPermitCellsGolden(t *testing.T) {
	s, f := newFakeDocs(t)
	s.now = func() time.Time { return time.UnixMilli(1719705600000) }
	_, err := s.Apply(context.Background(), readmodel.Batch{Permits: []readmodel.Permit{{PermitID: "src:1", Version: 1, IssueDate: "2024-06-30",
		PropertyID: prop, GeoLinks: []readmodel.GeoLink{{GeoID: geo, GeoType: readmodel.GeoCity, Confidence: 1, Method: "source_city"}}}}})
	require.NoError(t, err)
	f.mu.Lock()
	first := len(f.requests)
	f.mu.Unlock()
	_, err = s.Apply(context.Background(), readmodel.Batch{Permits: []readmodel.Permit{{PermitID: "src:2", Version: 3, IssueDate: "2024-06-30",
		GeoLinks: []readmodel.GeoLink{{GeoID: geo, GeoType: readmodel.GeoCity, Confidence: 1, Method: "source_city"}}}}})
	require.NoError(t, err)
	f.mu.Lock()
	reqs := slices.Clone(f.requests)
	f.mu.Unlock()
	var heads []string
	for _, r := range reqs[first:] {
		heads = append(heads, strings.SplitN(r, "\n", 2)[0])
	}
	require.Equal(t, []string{
		"POST /permitd-permits-write/_mget?_source_includes=" + permitSourceFields, // plan
		"POST /_bulk?require_alias=true",                                           // the documents
		"POST /permitd-permits-write/_mget",                                        // what is stored
		"POST /permitd-permit_cells-write/_mget",                                   // count: read the cells
		"POST /_bulk?require_alias=true",                                           // count: write them
		"POST /_bulk?require_alias=true",                                           // the permit without its pending
		"POST /permitd-permit_cells-write/_mget",                                   // clear: read the cells
		"POST /_bulk?require_alias=true",                                           // clear: write them
	}, heads)
	body := func(i int) []byte { return []byte(strings.SplitN(reqs[i], "\n", 2)[1]) }
	osgolden.Compare(t, "cells_create.bulk.ndjson", body(4))
	osgolden.Compare(t, "cells_permit_pending.bulk.ndjson", body(first+1))
	osgolden.Compare(t, "cells_update.bulk.ndjson", body(first+4))
	osgolden.Compare(t, "cells_permit_rewrite.bulk.ndjson", body(first+5))
	osgolden.Compare(t, "cells_clear.bulk.ndjson", body(first+7))
	var mget map[string]any
	require.NoError(t, json.Unmarshal(body(first+3), &mget))
	require.Equal(t, map[string]any{"ids": []any{geo + "|2024-06-30"}}, mget)
}

// BenchmarkApplyCells writes new permits and leads (10 geographies, 60
// days, 3 keys) in batches of 500 through the Writer into the stateful
// fake and reports what the cells cost on the write path: requests per
// batch, and the bytes sent per event in all and for cell documents.
//
//	go test -run '^$' -bench ApplyCells -benchtime 1x ./readmodel/opensearch/
func BenchmarkApplyCells(b *testing.B) {
	const events, batch = 4000, 500
	r := rand.New(rand.NewPCG(1, 1))
	var batches []readmodel.Batch
	for lo := 0; lo < events; lo += batch {
		var bt readmodel.Batch
		for i := lo; i < lo+batch; i++ {
			day := time.Date(2026, 1, 1+r.IntN(60), 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
			geos := []string{"gstate", fmt.Sprint("gcounty", r.IntN(3)), fmt.Sprint("gzip", r.IntN(10))}
			if i%2 == 0 {
				var links []readmodel.GeoLink
				for _, g := range geos {
					links = append(links, readmodel.GeoLink{GeoID: g, GeoType: readmodel.GeoZip, Confidence: 1, Method: "source_zip"})
				}
				bt.Permits = append(bt.Permits, readmodel.Permit{PermitID: fmt.Sprint("p", i), Version: 1, IssueDate: day, PermitNumber: "N", GeoLinks: links})
				continue
			}
			c := r.Float64()
			bt.Leads = append(bt.Leads, readmodel.Lead{LeadID: fmt.Sprint("l", i), Version: 1, SignalKey: fmt.Sprint("k", r.IntN(3)), EventDateUsed: day,
				Confidence: &c, GeoIDs: geos, Location: readmodel.LeadLocation{CityNorm: fmt.Sprint("city", r.IntN(20)), ZipcodeNorm: fmt.Sprint("98", r.IntN(50)), CountyNorm: "king county"}})
		}
		batches = append(batches, bt)
	}
	var reqs, bytesAll, bytesCells int
	for range b.N {
		s, f := newFakeDocs(b)
		for _, bt := range batches {
			_, err := s.Apply(context.Background(), bt)
			require.NoError(b, err)
		}
		f.mu.Lock()
		reqs += len(f.requests)
		for _, q := range f.requests {
			bytesAll += len(q)
			if strings.Contains(q, "_cells-write") {
				bytesCells += len(q)
			}
		}
		f.mu.Unlock()
	}
	n := float64(b.N)
	b.ReportMetric(float64(reqs)/n/float64(len(batches)), "requests/batch")
	b.ReportMetric(float64(bytesAll)/n/events, "bytes-sent/event")
	b.ReportMetric(float64(bytesCells)/n/events, "cell-bytes-sent/event")
	b.ReportMetric(0, "ns/op")
}
