// Geo signal reads: signals for a location, the signal search and the catalog of active signals.

package opensearch

import (
	"context"
	"fmt"
	"slices"

	"github.com/permitd/permitd/readmodel"
)

// GeoSignalsForLocation implements readmodel.Reader with one _msearch:
// the location's existence, the active catalog entries of every state
// (restricted to keys when given) and the geography's rows; only rows
// whose (state, signal_key) is in that active set are served (keepActive).
// More than maxActiveEntries active entries or maxRowsPerGeo rows fail the
// read rather than answer a partial set.
func (s *Store) GeoSignalsForLocation(ctx context.Context, geo readmodel.GeoRef, keys []string) (readmodel.LocationSignals, error) {
	geoID := geo.ID() // a property is no location: not found
	rs, err := s.msearch(ctx,
		msearchReq{index: s.read(readmodel.KindLocation), body: byIDBody(geoID)},
		msearchReq{index: s.read(readmodel.KindCatalog), body: activeCatalogBody("", keys, maxActiveEntries)},
		msearchReq{index: s.read(readmodel.KindGeoSignal), body: geoSignalsOfBody(geoID, keys)})
	if err != nil {
		return readmodel.LocationSignals{}, err
	}
	loc, err := anchor(rs[0])
	if err != nil {
		return readmodel.LocationSignals{}, err
	}
	if err := complete(rs[1], "active catalog entries", "maxActiveEntries", maxActiveEntries); err != nil {
		return readmodel.LocationSignals{}, err
	}
	if err := complete(rs[2], "geo signal rows of "+geoID, "maxRowsPerGeo", maxRowsPerGeo); err != nil {
		return readmodel.LocationSignals{}, err
	}
	entries, err := decodeHits[catalogDoc](rs[1])
	if err != nil {
		return readmodel.LocationSignals{}, err
	}
	rows, err := decodeHits[geoSignalDoc](rs[2])
	if err != nil {
		return readmodel.LocationSignals{}, err
	}
	return readmodel.LocationSignals{GeoType: loc.GeoType, State: loc.State, Signals: keepActive(rows, activeSet(entries))}, nil
}

// catalogKey is a catalog entry's identity: a state and a signal key.
type catalogKey struct{ state, signalKey string }

// activeSet is the (state, signal_key) of every entry whose status is
// exactly "active"; the queries already ask for those only, this makes
// the rule hold whatever the answer holds.
func activeSet(entries []catalogDoc) map[catalogKey]bool {
	out := make(map[catalogKey]bool, len(entries))
	for _, e := range entries {
		if e.Status == readmodel.CatalogActive {
			out[catalogKey{e.State, e.SignalKey}] = true
		}
	}
	return out
}

// keepActive keeps, in their order, the rows whose own state and
// signal_key have an active catalog entry: a row of an inactive key, of a
// key active only in another state, or of a key without entry is dropped.
func keepActive(rows []geoSignalDoc, active map[catalogKey]bool) []readmodel.GeoSignal {
	out := make([]readmodel.GeoSignal, 0, len(rows))
	for _, d := range rows {
		if active[catalogKey{d.State, d.SignalKey}] {
			out = append(out, d.geoSignal())
		}
	}
	return out
}

// complete fails a read bounded by size (the constant named bound) when
// the matching documents are more than the hits returned, saying what
// overflowed; the body must track total hits. Such a read is an error,
// never a silently truncated answer.
func complete(r *searchResult, what, bound string, size int) error {
	if r.Hits.Total == nil {
		return fmt.Errorf("opensearch: %s: the answer has no hits.total, so it may be truncated at %s=%d", what, bound, size)
	}
	if n := int64(len(r.Hits.Hits)); r.Hits.Total.Value > n {
		return fmt.Errorf("opensearch: %s overflow %s: %d match, %d returned", what, bound, r.Hits.Total.Value, n)
	}
	return nil
}

// SearchGeoSignals implements readmodel.Reader with two _search requests:
// the active catalog keys of q.State (intersected with q.SignalKeys when
// given), then the page restricted to those keys. No active key: an empty
// page with Next nil, without the second search. The two reads are not
// one snapshot: a catalog change between them shows on the next page.
func (s *Store) SearchGeoSignals(ctx context.Context, q readmodel.GeoSignalQuery) (readmodel.GeoSignalPage, error) {
	if err := q.Validate(); err != nil {
		return readmodel.GeoSignalPage{}, err
	}
	active, err := s.activeKeys(ctx, q.State, q.SignalKeys)
	if err != nil {
		return readmodel.GeoSignalPage{}, err
	}
	if len(active) == 0 {
		return readmodel.GeoSignalPage{Signals: []readmodel.GeoSignal{}}, nil
	}
	r, err := s.search(ctx, s.read(readmodel.KindGeoSignal), geoSignalPageBody(q, active))
	if err != nil {
		return readmodel.GeoSignalPage{}, err
	}
	docs, err := decodeHits[geoSignalDoc](r)
	if err != nil {
		return readmodel.GeoSignalPage{}, err
	}
	page := readmodel.GeoSignalPage{Signals: make([]readmodel.GeoSignal, 0, min(len(docs), q.Limit))}
	for i, d := range docs {
		if i == q.Limit {
			last := docs[i-1]
			page.Next = &readmodel.GeoSignalKey{Score: last.Score, SignalKey: last.SignalKey, GeoID: last.GeoID}
			break
		}
		page.Signals = append(page.Signals, d.geoSignal())
	}
	return page, nil
}

// activeKeys are the signal keys of state's active catalog entries,
// restricted to keys when non-empty, ascending; more than maxCatalog fail.
func (s *Store) activeKeys(ctx context.Context, state string, keys []string) ([]string, error) {
	if state == "" {
		return nil, nil // no stored row has an empty state (omitempty), and "" would mean every state
	}
	r, err := s.search(ctx, s.read(readmodel.KindCatalog), activeCatalogBody(state, keys, maxCatalog))
	if err != nil {
		return nil, err
	}
	if err := complete(r, "active catalog entries of "+state, "maxCatalog", maxCatalog); err != nil {
		return nil, err
	}
	entries, err := decodeHits[catalogDoc](r)
	if err != nil {
		return nil, err
	}
	var out []string
	for k := range activeSet(entries) {
		if k.state == state {
			out = append(out, k.signalKey)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Catalog implements readmodel.Reader (one _search). A state with more
// than maxCatalog matching entries is an error, not a truncated list.
func (s *Store) Catalog(ctx context.Context, q readmodel.CatalogQuery) ([]readmodel.CatalogEntry, error) {
	r, err := s.search(ctx, s.read(readmodel.KindCatalog), catalogBody(q))
	if err != nil {
		return nil, err
	}
	if err := complete(r, "catalog entries of "+q.State, "maxCatalog", maxCatalog); err != nil {
		return nil, err
	}
	docs, err := decodeHits[catalogDoc](r)
	if err != nil {
		return nil, err
	}
	out := make([]readmodel.CatalogEntry, len(docs))
	for i, d := range docs {
		out[i] = d.entry()
	}
	return out, nil
}
