// Documents waiting for a location (readmodel.UnlinkedLister): stored with what they wait for, listed by partition.

package opensearch

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// A permit, property or lead written without a location it names carries
// "awaits" (mapped in permits, properties and leads since TemplateVersion
// 4): the geo_id it waits for, the topic and partition of the message it
// was projected from (indexed: a member of a consumer group lists the
// documents of the partitions it owns), and the message itself (offset,
// key, value; stored, not indexed). The indexer hands it in
// readmodel.Batch.Awaiting; a later version of the document, linked or
// not, replaces it whole, so a re-linked or updated document no longer
// carries the old one (the unlinked document of a newer version carries
// its own). The cells' rewrites keep it (they write the stored document
// back as read).

var _ readmodel.UnlinkedLister = (*Store)(nil)

type awaitsDoc struct {
	GeoID     string        `json:"geo_id"`
	Topic     string        `json:"topic"`
	Partition int           `json:"partition"`
	Message   awaitsMessage `json:"message"`
}

// awaitsMessage is the message as sent, key and value base64 (JSON's
// []byte), so the indexer projects the same bytes again.
type awaitsMessage struct {
	Offset int64  `json:"offset"`
	Key    []byte `json:"key,omitempty"`
	Value  []byte `json:"value"`
}

func awaitsDocOf(a *readmodel.Awaiting) *awaitsDoc {
	return &awaitsDoc{GeoID: a.GeoID, Topic: a.Topic, Partition: a.Partition,
		Message: awaitsMessage{Offset: a.Offset, Key: a.Key, Value: a.Value}}
}

type awaitKey struct {
	kind    readmodel.Kind
	id      string
	version int64
}

// withAwaits stores each of aw with its item: the unlinked document of
// that kind, id and version.
func withAwaits(its []bulkItem, aw []readmodel.Awaiting) {
	if len(aw) == 0 {
		return
	}
	by := make(map[awaitKey]*readmodel.Awaiting, len(aw))
	for i := range aw {
		by[awaitKey{aw[i].Kind, aw[i].ID, aw[i].Version}] = &aw[i]
	}
	for i := range its {
		it := &its[i]
		a := by[awaitKey{it.kind, it.id, it.version}]
		if a == nil || it.rank != rankUnlinked {
			continue
		}
		switch d := it.doc.(type) {
		case permitDoc:
			d.Awaits = awaitsDocOf(a)
			it.doc = d
		case propertyDoc:
			d.Awaits = awaitsDocOf(a)
			it.doc = d
		case leadDoc:
			d.Awaits = awaitsDocOf(a)
			it.doc = d
		}
	}
}

// unlinkedKinds are the kinds whose documents may wait for a location.
var unlinkedKinds = []readmodel.Kind{readmodel.KindPermit, readmodel.KindProperty, readmodel.KindLead}

// defaultUnlinkedPage is UnlinkedScan's default page.
const defaultUnlinkedPage = 1000

// unlinkedHit is what a scan reads of a waiting document.
type unlinkedHit struct {
	DocID   string     `json:"doc_id"`
	Version int64      `json:"version"`
	Awaits  *awaitsDoc `json:"awaits"`
}

// ScanUnlinked implements readmodel.UnlinkedLister: a refresh of the
// permits, properties and leads read aliases, then for each in turn a
// point in time on the read alias and search_after pages by doc_id of
// the live documents carrying awaits of the selected partitions
// (unlinkedScanBody), so each is listed once and memory is one page.
func (s *Store) ScanUnlinked(ctx context.Context, q readmodel.UnlinkedScan, fn func([]readmodel.Awaiting) error) error {
	size := q.PageSize
	if size <= 0 {
		size = defaultUnlinkedPage
	}
	if q.Partitions != nil && !slices.ContainsFunc(mapsValues(q.Partitions), func(ps []int) bool { return len(ps) > 0 }) {
		return nil
	}
	// Every acknowledged write listed, not only the refreshed ones: a
	// rebalance hands a partition over within the refresh interval of
	// its previous owner's last batch. Best effort (a role without the
	// refresh privilege): without it, what the last interval wrote may
	// be missed.
	aliases := make([]string, len(unlinkedKinds))
	for i, k := range unlinkedKinds {
		aliases[i] = s.read(k)
	}
	if err := s.do(ctx, http.MethodPost, "/"+strings.Join(aliases, ",")+"/_refresh", nil, "", nil); err != nil && ctx.Err() != nil {
		return err
	}
	page := make([]readmodel.Awaiting, 0, size)
	for _, k := range unlinkedKinds {
		err := scanPages(ctx, s, k, size, func(pit, after string) obj { return unlinkedScanBody(q.Partitions, size, pit, after) },
			func(h *unlinkedHit) string { return h.DocID }, func(hits []unlinkedHit) error {
				page = page[:0]
				for _, h := range hits {
					if h.Awaits == nil {
						return fmt.Errorf("%w: %s %q listed as waiting without awaits", readmodel.ErrUnavailable, k, h.DocID)
					}
					a := h.Awaits
					page = append(page, readmodel.Awaiting{Kind: k, ID: h.DocID, Version: h.Version, GeoID: a.GeoID,
						Topic: a.Topic, Partition: a.Partition, Offset: a.Message.Offset, Key: a.Message.Key, Value: a.Message.Value})
				}
				return fn(page)
			})
		if err != nil {
			return err
		}
	}
	return nil
}

func mapsValues(m map[string][]int) [][]int {
	out := make([][]int, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// unlinkedScanBody is one page of ScanUnlinked (golden:
// unlinked_scan*.search.json): live documents with awaits.geo_id, of
// one of the selected (topic, partitions) when parts is not nil, by
// doc_id.
func unlinkedScanBody(parts map[string][]int, size int, pit, after string) obj {
	clauses := []obj{{"exists": obj{"field": "awaits.geo_id"}}}
	if parts != nil {
		topics := make([]string, 0, len(parts))
		for t, ps := range parts {
			if len(ps) > 0 {
				topics = append(topics, t)
			}
		}
		sort.Strings(topics)
		should := make([]obj, 0, len(topics))
		for _, t := range topics {
			ps := slices.Sorted(slices.Values(parts[t]))
			should = append(should, obj{"bool": obj{"filter": []obj{
				{"term": obj{"awaits.topic": t}}, {"terms": obj{"awaits.partition": ps}}}}})
		}
		clauses = append(clauses, obj{"bool": obj{"should": should, "minimum_should_match": 1}})
	}
	b := obj{
		"size":             size,
		"track_total_hits": false,
		"query":            filtered(clauses...),
		"_source":          []string{"doc_id", "version", "awaits"},
		"sort":             []obj{{"doc_id": "asc"}},
	}
	return pageAt(b, pit, after)
}

// pageAt places a doc_id scan page b in the point in time pit and after
// the doc_id after ("": none).
func pageAt(b obj, pit, after string) obj {
	if pit != "" {
		b["pit"] = obj{"id": pit, "keep_alive": pitKeepAlive}
	}
	if after != "" {
		b["search_after"] = []any{after}
	}
	return b
}

// scanPages hands fn every page of a full scan of kind k's live
// documents by doc_id: body(pit, after) is one page of size hits, id a
// hit's doc_id. The pages are read inside a point in time, so the scan
// is one snapshot; when the point in time cannot be opened or has
// expired, the scan continues from the last doc_id without one (doc_id
// is unique: nothing is listed twice, and a document written since may
// be listed or not).
func scanPages[T any](ctx context.Context, s *Store, k readmodel.Kind, size int, body func(pit, after string) obj, id func(*T) string, fn func([]T) error) error {
	pit := s.openPIT(ctx, k)
	defer func() { s.closePIT(context.WithoutCancel(ctx), pit) }()
	after := ""
	for {
		var r *searchResult
		var err error
		if pit != "" {
			r, err = s.searchPath(ctx, "/_search", body(pit, after))
			if err != nil && isExpired(err) {
				pit = "" // continue from after without a snapshot
				continue
			}
		} else {
			r, err = s.search(ctx, s.read(k), body("", after))
		}
		if err != nil {
			return err
		}
		if r.PitID != "" && pit != "" {
			pit = r.PitID
		}
		docs, err := decodeHits[T](r)
		if err != nil {
			return err
		}
		if len(docs) > 0 {
			if err := fn(docs); err != nil {
				return err
			}
		}
		if len(docs) < size {
			return nil
		}
		after = id(&docs[len(docs)-1])
	}
}
