package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// bulkItem is one document or tombstone of a batch.
type bulkItem struct {
	kind    readmodel.Kind
	id      string
	version int64
	doc     any
	// rank orders the writes of one entity version; see externalVersion.
	rank versionRank
}

// versionRank is where a write stands among the writes of its entity
// version (readmodel.Writer): an unlinked permit, property or lead (its
// location was unknown at projection: Linked is false) below a linked
// document (every document of the other kinds), a tombstone above both.
// An int64, so that rankOf of any stored _version gives it back whole.
type versionRank int64

const (
	rankUnlinked versionRank = iota
	rankDocument
	rankTombstone
)

// docRank is the rank of a document, unlinked or not.
func docRank(unlinked bool) versionRank {
	if unlinked {
		return rankUnlinked
	}
	return rankDocument
}

// Re-links, deletes and external versions. The Writer contract orders
// the writes of one entity version (readmodel.Writer: an unlinked
// permit, property or lead below the linked one, a tombstone above
// both, in either order), and external versioning compares one long and
// takes a write only when it is strictly greater than the stored
// _version (version_type external; external_gte would also take an
// equal one, so a state-level copy replayed after the re-link would undo
// it, and a re-link would resurrect a tombstone of its version). So the
// external version encodes the pair: 3*version + rank, that is 3v for an
// unlinked document, 3v+1 for every other document and 3v+2 for a
// tombstone. Newer versions still win whatever their rank (3v+2 <
// 3(v+1)), equal pairs conflict (409, stale: replays stay idempotent),
// and the writes of one version that take are the re-link (3v+1 over
// 3v) and the delete (3v+2 over either), as on the memory backend. The
// _source keeps the entity version in "version"; the engine's limit on
// versions (a long below about 9.2e18) bounds entity versions to
// maxEntityVersion, and a larger one is refused as an item error. A
// reindex copies _version as is, so the encoding survives it. An index
// written by a build before this encoding (2v and 2v+1, or the entity
// version itself) must be rebuilt by a replay, not reindexed: its stored
// versions are not comparable (docs/operations.md).
const maxEntityVersion = (1<<63 - 1 - int64(rankTombstone)) / 3

// externalVersion is the _version of it under the encoding above.
func externalVersion(it bulkItem) int64 {
	return 3*it.version + int64(it.rank)
}

// rankOf is the rank of a stored write of entity version v found at
// external version ext.
func rankOf(v, ext int64) versionRank {
	return versionRank(ext - 3*v)
}

// items lists the batch in the order the memory backend applies it:
// kind by kind, deletes last, every document stamped with indexedAt (the
// Writer's clock, epoch milliseconds: what a reindex's catch-up selects).
// Items of one id keep their order within the bulk request, and the
// version rule makes the order irrelevant to the end state anyway.
func items(b readmodel.Batch, indexedAt int64) []bulkItem {
	out := make([]bulkItem, 0, b.Len())
	out = appendItems(out, readmodel.KindLocation, b.Locations, locationDocOf, indexedAt,
		func(l readmodel.Location) (string, int64, bool) { return l.GeoID, l.Version, false })
	out = appendItems(out, readmodel.KindPermit, b.Permits, permitDocOf, indexedAt,
		func(p readmodel.Permit) (string, int64, bool) { return p.PermitID, p.Version, !p.Linked() })
	out = appendItems(out, readmodel.KindProperty, b.Properties, propertyDocOf, indexedAt,
		func(p readmodel.Property) (string, int64, bool) { return p.PropertyID, p.Version, !p.Linked() })
	out = appendItems(out, readmodel.KindGeoSignal, b.GeoSignals, geoSignalDocOf, indexedAt,
		func(g readmodel.GeoSignal) (string, int64, bool) { return g.ID(), g.Version, false })
	out = appendItems(out, readmodel.KindLead, b.Leads, leadDocOf, indexedAt,
		func(l readmodel.Lead) (string, int64, bool) { return l.LeadID, l.Version, !l.Linked() })
	out = appendItems(out, readmodel.KindCatalog, b.Catalog, catalogDocOf, indexedAt,
		func(c readmodel.CatalogEntry) (string, int64, bool) { return c.ID(), c.Version, false })
	for _, d := range b.Deletes {
		out = append(out, bulkItem{d.Kind, d.ID, d.Version, meta{DocID: d.ID, Version: d.Version, Deleted: true, IndexedAt: indexedAt}, rankTombstone})
	}
	withAwaits(out, b.Awaiting) // unlinked.go
	return out
}

// appendItems appends one item of kind per entity of src: its document
// (docOf) stamped with indexedAt, under the id, version and linkage key
// gives.
func appendItems[E, D any, PD interface {
	*D
	docMeta() *meta
}](out []bulkItem, kind readmodel.Kind, src []E, docOf func(E) D, indexedAt int64, key func(E) (string, int64, bool)) []bulkItem {
	for _, e := range src {
		d := docOf(e)
		PD(&d).docMeta().IndexedAt = indexedAt
		id, version, unlinked := key(e)
		out = append(out, bulkItem{kind, id, version, d, docRank(unlinked)})
	}
	return out
}

// indexedAt is the stamp of a batch written now.
func (s *Store) indexedAt() int64 {
	if s.now != nil {
		return s.now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// bulkBody renders a batch as _bulk NDJSON: one index action per item
// with the entity version as external version, into the write alias.
func (s *Store) bulkBody(b readmodel.Batch) ([]byte, []bulkItem, error) {
	its, lines, err := s.bulkLines(b, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	return bytes.Join(lines, nil), its, nil
}

// bulkLines renders each item's action and document lines once, so a
// retry of some items resends their bytes without encoding again. An
// item whose version is above maxEntityVersion gets no lines (nil): Apply
// refuses it as an item error. A permit or lead version with a pending
// move of its cells carries it (cells.go, leadcells.go).
func (s *Store) bulkLines(b readmodel.Batch, pc *permitCells, lc *leadCells) ([]bulkItem, [][]byte, error) {
	its := items(b, s.indexedAt())
	lines := make([][]byte, len(its))
	for i, it := range its {
		if p := lc.pendingOf(it); p != nil {
			switch d := it.doc.(type) {
			case leadDoc:
				it.doc = struct {
					leadDoc
					CellsPending *leadPending `json:"cells_pending"`
				}{d, p}
			case meta:
				it.doc = leadTombstone{meta: d, CellsPending: p}
			}
		}
		if p := pc.pendingOf(it); p != nil {
			switch d := it.doc.(type) {
			case permitDoc:
				it.doc = struct {
					permitDoc
					CellsPending *cellsPending `json:"cells_pending"`
				}{d, p}
			case meta:
				it.doc = permitTombstone{meta: d, CellsPending: p}
			}
		}
		if _, ok := kindKnown[it.kind]; !ok {
			return nil, nil, fmt.Errorf("opensearch: unknown kind %q", it.kind)
		}
		if it.version < 1 {
			return nil, nil, fmt.Errorf("opensearch: %s %q: version %d, want >= 1 (external versioning)", it.kind, it.id, it.version)
		}
		if it.version > maxEntityVersion {
			continue
		}
		action := map[string]any{"index": map[string]any{
			"_index": s.write(it.kind), "_id": it.id, "version": externalVersion(it), "version_type": "external",
		}}
		var buf bytes.Buffer
		if err := appendNDJSON(&buf, action, it.doc); err != nil {
			return nil, nil, err
		}
		lines[i] = buf.Bytes()
	}
	return its, lines, nil
}

var kindKnown = map[readmodel.Kind]struct{}{
	readmodel.KindLocation: {}, readmodel.KindPermit: {}, readmodel.KindProperty: {},
	readmodel.KindGeoSignal: {}, readmodel.KindLead: {}, readmodel.KindCatalog: {},
}

// bulkResponse is a _bulk answer (of documents or of cells).
type bulkResponse struct {
	Errors bool `json:"errors"`
	Items  []map[string]struct {
		ID     string `json:"_id"`
		Status int    `json:"status"`
		Error  *struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
	} `json:"items"`
}

// bulkPath is every bulk request: require_alias=true, so a missing write
// alias fails the items (404) instead of auto-creating a real index with
// dynamic mappings; no refresh parameter, so a batch never waits for a
// refresh (see the package documentation, Consistency).
const bulkPath = "/_bulk?require_alias=true"

// Back-off of the items a bulk answer asks to retry (429, 5xx), for at
// most itemRetryBudget: then Apply fails as unavailable and the caller
// retries the batch, stamped anew (a reindex's catch-up relies on
// indexed_at being at most that old when the item lands).
const (
	itemBackoffMin  = 100 * time.Millisecond
	itemBackoffMax  = 5 * time.Second
	itemRetryBudget = time.Minute
)

// itemClass sorts one bulk item answer.
type itemClass int

const (
	itemApplied   itemClass = iota // 200, 201
	itemStale                      // 409: an equal or newer version is stored
	itemRetry                      // 429, 5xx: the cluster may take it later
	itemPermanent                  // 400-class about the document: never
	itemCluster                    // 401, 403, 404, 408: about the cluster (a block, a missing alias), not the document
)

func classify(status int) itemClass {
	switch {
	case status == http.StatusOK || status == http.StatusCreated:
		return itemApplied
	case status == http.StatusConflict:
		return itemStale
	case retryable(status):
		return itemRetry
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		status == http.StatusNotFound || status == http.StatusRequestTimeout:
		return itemCluster
	case status >= 400 && status < 500:
		return itemPermanent
	default:
		return itemCluster
	}
}

// Apply implements readmodel.Writer with _bulk requests into the write
// aliases (require_alias=true, external versions). Each item's answer is
// classified: 200/201 applied, 409 stale (an equal or newer version is
// stored); 429 and 5xx are resent alone with exponential back-off until
// they pass, ctx ends or itemRetryBudget is spent (then a
// readmodel.ErrUnavailable error: the batch is partly applied and safe
// to retry whole); a 400-class answer about
// the document (a mapping rejection, a value over a limit) is permanent:
// Apply goes on with the rest and returns *readmodel.ItemErrors listing
// every such item with its reason. An answer about the cluster rather
// than the document (403 block, 404 missing alias) fails the batch with
// ErrUnavailable, so no document is dead-lettered for the cluster's state.
func (s *Store) Apply(ctx context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	var res readmodel.ApplyResult
	if b.Len() == 0 {
		return res, ctx.Err()
	}
	// The permit count and lead stats cells (cells.go, leadcells.go):
	// what each permit or lead version owes them goes into its document,
	// and is counted once it is stored.
	pc, err := s.planPermitCells(ctx, b)
	if err != nil {
		return res, err
	}
	if pc != nil && len(pc.recover) > 0 {
		if err := s.finishPermitCells(ctx, pc.recover); err != nil {
			return res, err
		}
	}
	lc, err := s.planLeadCells(ctx, b)
	if err != nil {
		return res, err
	}
	if lc != nil && len(lc.recover) > 0 {
		if err := s.finishLeadCells(ctx, lc.recover); err != nil {
			return res, err
		}
	}
	its, lines, err := s.bulkLines(b, pc, lc)
	if err != nil {
		return res, err
	}
	permanent, err := s.bulkItems(ctx, its, lines, &res)
	if err != nil {
		return res, err
	}
	if pc != nil {
		if err := s.finishPermitCells(ctx, pc.ids); err != nil {
			return res, err
		}
	}
	if lc != nil {
		if err := s.finishLeadCells(ctx, lc.ids); err != nil {
			return res, err
		}
	}
	if len(permanent) > 0 {
		return res, &readmodel.ItemErrors{Items: permanent}
	}
	return res, nil
}

// bulkItems writes the items (see Apply), counting them in res; it
// returns the items refused for good.
func (s *Store) bulkItems(ctx context.Context, its []bulkItem, lines [][]byte, res *readmodel.ApplyResult) ([]readmodel.ItemError, error) {
	pending := make([]int, 0, len(its))
	var permanent []readmodel.ItemError
	for i := range its {
		if lines[i] == nil {
			permanent = append(permanent, readmodel.ItemError{Kind: its[i].kind, ID: its[i].id, Version: its[i].version,
				Reason: fmt.Sprintf("version above %d, the largest the external version encoding takes", int64(maxEntityVersion))})
			continue
		}
		pending = append(pending, i)
	}
	delay := itemBackoffMin
	giveUp := time.Now().Add(itemRetryBudget)
	for len(pending) > 0 {
		var body bytes.Buffer
		for _, i := range pending {
			body.Write(lines[i])
		}
		var out bulkResponse
		if err := s.do(ctx, http.MethodPost, bulkPath, body.Bytes(), "application/x-ndjson", &out); err != nil {
			return nil, err
		}
		if len(out.Items) != len(pending) {
			return nil, fmt.Errorf("%w: bulk answered %d items for %d", readmodel.ErrUnavailable, len(out.Items), len(pending))
		}
		var retry []int
		var cluster []error
		for n, item := range out.Items {
			i := pending[n]
			r, ok := item["index"]
			if !ok {
				return nil, fmt.Errorf("%w: bulk item %d: no index result", readmodel.ErrUnavailable, n)
			}
			reason := strconv.Itoa(r.Status)
			if r.Error != nil {
				reason += " " + r.Error.Type + ": " + r.Error.Reason
			}
			switch classify(r.Status) {
			case itemApplied:
				res.Applied++
			case itemStale:
				res.Stale++
			case itemRetry:
				retry = append(retry, i)
			case itemPermanent:
				permanent = append(permanent, readmodel.ItemError{Kind: its[i].kind, ID: its[i].id, Version: its[i].version, Reason: reason})
			default:
				if len(cluster) < 3 {
					cluster = append(cluster, fmt.Errorf("%s %q: %s", its[i].kind, its[i].id, reason))
				}
			}
		}
		if len(cluster) > 0 {
			return nil, fmt.Errorf("%w: bulk: %w", readmodel.ErrUnavailable, errors.Join(cluster...))
		}
		if len(retry) == 0 {
			break
		}
		first := its[retry[0]]
		if time.Now().Add(delay).After(giveUp) {
			return nil, fmt.Errorf("%w: bulk: %d items still rejected after %s (first %s %q)",
				readmodel.ErrUnavailable, len(retry), itemRetryBudget, first.kind, first.id)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: bulk: %d items still rejected (first %s %q) when the context ended: %w",
				readmodel.ErrUnavailable, len(retry), first.kind, first.id, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, itemBackoffMax)
		pending = retry
	}
	return permanent, nil
}

// appendNDJSON appends each value to buf as one JSON line (a _bulk or
// _msearch body is such lines).
func appendNDJSON(buf *bytes.Buffer, vs ...any) error {
	for _, v := range vs {
		line, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return nil
}
