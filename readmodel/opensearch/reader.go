package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/internal/propmatch"
	"github.com/permitd/permitd/readmodel/resolve"
)

// searchResult is one _search answer (or one _msearch response).
type searchResult struct {
	Hits struct {
		Total *struct {
			Value int64 `json:"value"`
		} `json:"total"`
		Hits []struct {
			ID     string          `json:"_id"`
			Source json.RawMessage `json:"_source"`
			Sort   []any           `json:"sort"`
		} `json:"hits"`
	} `json:"hits"`
	Aggregations map[string]json.RawMessage `json:"aggregations"`
	PitID        string                     `json:"pit_id"`
	Status       int                        `json:"status"`
	Error        json.RawMessage            `json:"error"`
	TimedOut     bool                       `json:"timed_out"`
	Shards       *struct {
		Total    int               `json:"total"`
		Failed   int               `json:"failed"`
		Failures []json.RawMessage `json:"failures"`
	} `json:"_shards"`
}

// partial fails an answer that does not cover every shard: a shard
// failed (allow_partial_search_results=false makes the engine refuse
// most of these itself, but a failure in the fetch phase or an older
// node still answers 200) or the server-side timeout cut the search
// short (timed_out: the engine then returns what it had, whatever
// allow_partial_search_results says). Either is readmodel.ErrUnavailable:
// a retry may get the whole answer, and a partial one would turn an
// existing geography into a 404, count low or hand out a cursor that
// skips items for good.
func (r *searchResult) partial(what string) error {
	if r.TimedOut {
		return fmt.Errorf("%w: %s timed out after %s on the server", readmodel.ErrUnavailable, what, searchTimeout)
	}
	if r.Shards != nil && r.Shards.Failed > 0 {
		first := ""
		if len(r.Shards.Failures) > 0 {
			first = ", first: " + string(r.Shards.Failures[0])
		}
		return fmt.Errorf("%w: %s: %d of %d shards failed%s", readmodel.ErrUnavailable, what, r.Shards.Failed, r.Shards.Total, first)
	}
	return nil
}

// searchTimeout is the server-side timeout of every search (the "timeout"
// of the body): a shard that has not answered by then makes the search
// answer timed_out, which fails the read (partial). It is below the
// client's per-attempt timeout (30s by default) so the engine, not the
// connection, gives up first and frees the shard's search thread.
const searchTimeout = "10s"

// guarded is body as it is sent: with the server-side timeout. The map
// is copied, so a builder's golden rendering stays what it returns.
func guarded(body obj) obj {
	out := make(obj, len(body)+1)
	for k, v := range body {
		out[k] = v
	}
	out["timeout"] = searchTimeout
	return out
}

func (r *searchResult) total() int64 {
	if r.Hits.Total == nil {
		return 0
	}
	return r.Hits.Total.Value
}

// decode unmarshals every hit's _source into a T.
func decodeHits[T any](r *searchResult) ([]T, error) {
	out := make([]T, 0, len(r.Hits.Hits))
	for _, h := range r.Hits.Hits {
		var d T
		if err := json.Unmarshal(h.Source, &d); err != nil {
			return nil, fmt.Errorf("opensearch: hit %s: %w", h.ID, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// search is one _search on index, failing closed: partial results are
// refused (allow_partial_search_results=false), the body carries the
// server-side timeout, and an answer that still misses shards or timed
// out is readmodel.ErrUnavailable (see partial).
func (s *Store) search(ctx context.Context, index string, body obj) (*searchResult, error) {
	return s.searchPath(ctx, "/"+index+"/_search", body)
}

// searchPath is search on a path ("/_search" for a point in time, which
// names its indices itself).
func (s *Store) searchPath(ctx context.Context, path string, body obj) (*searchResult, error) {
	raw, err := json.Marshal(guarded(body))
	if err != nil {
		return nil, err
	}
	var out searchResult
	if err := s.do(ctx, http.MethodPost, path+"?allow_partial_search_results=false", raw, "", &out); err != nil {
		return nil, err
	}
	if err := out.partial("search " + path); err != nil {
		return nil, err
	}
	return &out, nil
}

// msearchReq is one search of an _msearch.
type msearchReq struct {
	index string
	body  obj
	// dfs: score with the index's term statistics (search_type
	// dfs_query_then_fetch), not each shard's, where relevance picks a
	// pool (resolve). The engine skips the extra phase on a one-shard
	// index.
	dfs bool
}

// msearch sends the searches in one _msearch request, each failing closed
// as search does (allow_partial_search_results=false in its header, the
// server-side timeout in its body); a failed, partial or timed-out search
// fails the read.
func (s *Store) msearch(ctx context.Context, reqs ...msearchReq) ([]*searchResult, error) {
	var buf bytes.Buffer
	for _, r := range reqs {
		head := msearchHeader(r.index)
		if r.dfs {
			head["search_type"] = "dfs_query_then_fetch"
		}
		for _, v := range []any{head, guarded(r.body)} {
			line, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
	}
	var out struct {
		Responses []*searchResult `json:"responses"`
	}
	if err := s.do(ctx, http.MethodPost, "/_msearch", buf.Bytes(), "application/x-ndjson", &out); err != nil {
		return nil, err
	}
	if len(out.Responses) != len(reqs) {
		return nil, fmt.Errorf("%w: msearch answered %d of %d searches", readmodel.ErrUnavailable, len(out.Responses), len(reqs))
	}
	for i, r := range out.Responses {
		if r == nil {
			return nil, fmt.Errorf("%w: msearch %s: no response", readmodel.ErrUnavailable, reqs[i].index)
		}
		if len(r.Error) > 0 && string(r.Error) != "null" {
			err := fmt.Errorf("opensearch: msearch %s: %d %s", reqs[i].index, r.Status, r.Error)
			if retryable(r.Status) || r.Status == 0 {
				err = fmt.Errorf("%w: %v", readmodel.ErrUnavailable, err)
			}
			return nil, err
		}
		if err := r.partial("msearch " + reqs[i].index); err != nil {
			return nil, err
		}
	}
	return out.Responses, nil
}

// msearchHeader is the header line of one search of an _msearch; index
// "" for a search of a point in time (its body names the indices).
func msearchHeader(index string) obj {
	if index == "" {
		return obj{"allow_partial_search_results": false}
	}
	return obj{"index": index, "allow_partial_search_results": false}
}

// maxDate reads a max aggregation of epoch milliseconds; "" when null.
func maxDate(r *searchResult, name string) string {
	var a struct {
		Value *float64 `json:"value"`
	}
	if raw, ok := r.Aggregations[name]; !ok || json.Unmarshal(raw, &a) != nil || a.Value == nil {
		return ""
	}
	return epochDay(*a.Value)
}

// Location implements readmodel.Reader with one _msearch: the document and
// its permits' count and latest issue date, read from the permit count
// cells (cells.go: one small document per issue day of the anchor, not
// every permit). A property_id is a location
// of the property scope (as in the memory backend): the property, its
// permits and, by a terms lookup on its links, its hierarchy.
func (s *Store) Location(ctx context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	geoID := geo.ID()
	if geo.IsProperty() {
		rs, err := s.msearch(ctx,
			msearchReq{index: s.read(readmodel.KindProperty), body: byIDBody(geoID)},
			msearchReq{index: s.read(mappings.KindPermitCell), body: cellCountBody(geoID)},
			msearchReq{index: s.read(readmodel.KindLocation), body: hierarchyBody(s.read(readmodel.KindProperty), geoID)},
		)
		if err != nil {
			return readmodel.Location{}, err
		}
		props, err := decodeHits[propertyDoc](rs[0])
		if err != nil || len(props) == 0 {
			return readmodel.Location{}, errOr(err, readmodel.ErrNotFound)
		}
		locs, err := decodeHits[locationDoc](rs[2])
		if err != nil {
			return readmodel.Location{}, err
		}
		n, err := cellCount(rs[1])
		if err != nil {
			return readmodel.Location{}, err
		}
		return readmodel.PropertyLocation(props[0].property(), locationLookup(locs), n, maxDate(rs[1], "latest")), nil
	}
	rs, err := s.msearch(ctx,
		msearchReq{index: s.read(readmodel.KindLocation), body: byIDBody(geoID)},
		msearchReq{index: s.read(mappings.KindPermitCell), body: cellCountBody(geoID)},
	)
	if err != nil {
		return readmodel.Location{}, err
	}
	docs, err := decodeHits[locationDoc](rs[0])
	if err != nil || len(docs) == 0 {
		return readmodel.Location{}, errOr(err, readmodel.ErrNotFound)
	}
	l := docs[0].location()
	if l.PermitCount, err = cellCount(rs[1]); err != nil {
		return readmodel.Location{}, err
	}
	l.LatestPermitDate = maxDate(rs[1], "latest")
	return l, nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// locationLookup indexes the locations fetched with one or more
// properties by geo_id, for readmodel.PropertyLocation.
func locationLookup(locs []locationDoc) func(geoID string) (readmodel.Location, bool) {
	byID := make(map[string]readmodel.Location, len(locs))
	for _, d := range locs {
		byID[d.GeoID] = d.location()
	}
	return func(id string) (readmodel.Location, bool) {
		l, ok := byID[id]
		return l, ok
	}
}

// exists is the existence half of a geo-scoped read: the location, or for
// a property the property.
func (s *Store) exists(geo readmodel.GeoRef) msearchReq {
	if geo.IsProperty() {
		return msearchReq{index: s.read(readmodel.KindProperty), body: byIDBody(geo.ID())}
	}
	return msearchReq{index: s.read(readmodel.KindLocation), body: byIDBody(geo.ID())}
}

// permitField is the permit field a geo-scoped permit read filters on:
// property_id for a property, geo_ids (every link) for a location.
func permitField(geo readmodel.GeoRef) string {
	if geo.IsProperty() {
		return "property_id"
	}
	return "geo_ids"
}

func found(r *searchResult) bool { return len(r.Hits.Hits) > 0 }

// anchor decodes the location a byIDBody search found: ErrNotFound when
// it found none.
func anchor(r *searchResult) (readmodel.Location, error) {
	docs, err := decodeHits[locationDoc](r)
	if err != nil || len(docs) == 0 {
		return readmodel.Location{}, errOr(err, readmodel.ErrNotFound)
	}
	return docs[0].location(), nil
}

// SearchPermits implements readmodel.Reader: one _msearch of the
// geography's existence and the page (limit+1 hits tell whether more
// follow).
func (s *Store) SearchPermits(ctx context.Context, q readmodel.PermitQuery) (readmodel.PermitPage, error) {
	if err := q.Validate(); err != nil {
		return readmodel.PermitPage{}, err
	}
	field := permitField(q.Geo)
	docs, err := s.permitSearchDocs(ctx, field, &q) // permit_search.go
	if err != nil {
		return readmodel.PermitPage{}, err
	}
	return permitPage(&q, field, docs), nil
}

// permitPage is the page of q read as docs (at most q.Limit+1: one more
// tells that a page follows).
func permitPage(q *readmodel.PermitQuery, field string, docs []permitDoc) readmodel.PermitPage {
	out := readmodel.PermitPage{Permits: make([]readmodel.PermitHit, 0, min(len(docs), q.Limit))}
	for i, d := range docs {
		if i == q.Limit {
			last := docs[i-1]
			out.Next = &readmodel.PermitKey{IssueDate: last.IssueDate, PermitID: last.DocID}
			if q.Sort == readmodel.SortValuationDesc && last.Valuation != nil {
				out.Next.HasValuation, out.Next.Valuation = true, *last.Valuation
			}
			if d := distanceOf(q, last.Lat, last.Lon); d != nil {
				out.Next.DistanceM = *d
			}
			break
		}
		p := d.permit()
		var m readmodel.GeoLink
		if !q.Geo.IsZero() {
			var ok bool
			if m, ok = matchLink(p, q.Geo); !ok {
				m = readmodel.GeoLink{GeoID: q.Geo.ID(), GeoType: readmodel.GeoProperty, Confidence: 1, Method: "property_id"}
			}
		}
		hit := readmodel.PermitHit{Permit: p, Match: m}
		if d := distanceOf(q, p.Lat, p.Lon); d != nil {
			r := math.Round(*d*10) / 10
			hit.DistanceM = &r
		}
		out.Permits = append(out.Permits, hit)
	}
	return out
}

// matchLink is the permit's link to the queried geography; for a property
// its own property link.
func matchLink(p readmodel.Permit, geo readmodel.GeoRef) (readmodel.GeoLink, bool) {
	for _, l := range p.GeoLinks {
		self := p.PropertyID != "" && l.GeoType == readmodel.GeoProperty && l.GeoID == p.PropertyID
		if l.GeoID == geo.ID() && self == geo.IsProperty() {
			return l, true
		}
	}
	return readmodel.GeoLink{}, false
}

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

// PermitLeads implements readmodel.Reader (one _msearch: the anchor
// location's existence and the page).
func (s *Store) PermitLeads(ctx context.Context, q readmodel.LeadQuery) (readmodel.LeadPage, error) {
	if err := q.Validate(); err != nil {
		return readmodel.LeadPage{}, err
	}
	body, err := leadPageBody(q)
	if err != nil {
		return readmodel.LeadPage{}, err
	}
	rs, err := s.msearch(ctx,
		msearchReq{index: s.read(readmodel.KindLocation), body: byIDBody(q.Filter.Geo.ID())},
		msearchReq{index: s.read(readmodel.KindLead), body: body})
	if err != nil {
		return readmodel.LeadPage{}, err
	}
	loc, err := anchor(rs[0])
	if err != nil {
		return readmodel.LeadPage{}, err
	}
	docs, err := decodeHits[leadDoc](rs[1])
	if err != nil {
		return readmodel.LeadPage{}, err
	}
	page := readmodel.LeadPage{GeoType: loc.GeoType, Leads: make([]readmodel.Lead, 0, min(len(docs), q.Limit))}
	for i, d := range docs {
		if i == q.Limit {
			last := docs[i-1]
			page.Next = &readmodel.LeadKey{EventDate: last.EventDateUsed, LeadID: last.DocID}
			if last.Confidence != nil {
				page.Next.HasConfidence, page.Next.Confidence = true, *last.Confidence
			}
			break
		}
		page.Leads = append(page.Leads, d.lead())
	}
	return page, nil
}

// PermitStats implements readmodel.Reader (one _msearch: the anchor
// location's existence and the aggregations). Without a confidence floor,
// or with one at a class bound (0.5, 0.75, or 0 and below), it reads the
// lead stats cells (leadcells.go: a few roll-ups and edge days per key,
// not the leads); another floor needs each lead's confidence and
// aggregates the leads (statsAggs).
func (s *Store) PermitStats(ctx context.Context, q readmodel.StatsQuery) (readmodel.PermitStats, error) {
	if err := q.Validate(); err != nil {
		return readmodel.PermitStats{}, err
	}
	classes, fromCells := cellClasses(q.Filter.MinConfidence)
	var body obj
	var err error
	index := s.read(readmodel.KindLead)
	if fromCells {
		body, err = leadCellStatsBody(q, classes)
		index = s.read(mappings.KindLeadCell)
	} else {
		body, err = statsBody(q)
	}
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	rs, err := s.msearch(ctx,
		msearchReq{index: s.read(readmodel.KindLocation), body: byIDBody(q.Filter.Geo.ID())},
		msearchReq{index: index, body: body})
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	loc, err := anchor(rs[0])
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	var st readmodel.PermitStats
	if fromCells {
		st, err = statsFromCells(rs[1], classes)
	} else {
		st, err = statsFrom(rs[1], -1)
	}
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	st.GeoType = loc.GeoType
	st.TopZips = cut(st.TopZips, q.TopN)
	if st.TopCounties, st.TopCities, err = s.spellTops(ctx, st.TopCounties, st.TopCities, q.TopN); err != nil {
		return readmodel.PermitStats{}, err
	}
	return st, nil
}

func cut(l []readmodel.ValueCount, n int) []readmodel.ValueCount {
	if n >= 0 && len(l) > n {
		return l[:n]
	}
	return l
}

// spellTops names the county and city top lists as location detail
// spells them, as the memory backend does: a *_norm key becomes the Name
// of the live county (city) location whose normalised name (name_key) it
// is, the most recently indexed one when several are; a key no location
// spells stays as it is. Lists arrive whole (count descending, key
// ascending) and leave ordered by count descending then name ascending,
// cut to n; only the entries that can make the cut (a count at least the
// n-th) are looked up, in one _msearch.
func (s *Store) spellTops(ctx context.Context, counties, cities []readmodel.ValueCount, n int) ([]readmodel.ValueCount, []readmodel.ValueCount, error) {
	counties, cities = contenders(counties, n), contenders(cities, n)
	var reqs []msearchReq
	var types []readmodel.GeoType
	for _, l := range []struct {
		t    readmodel.GeoType
		list []readmodel.ValueCount
	}{{readmodel.GeoCounty, counties}, {readmodel.GeoCity, cities}} {
		if len(l.list) == 0 {
			continue
		}
		keys := make([]string, len(l.list))
		for i, v := range l.list {
			keys[i] = v.Value
		}
		reqs = append(reqs, msearchReq{index: s.read(readmodel.KindLocation), body: spellingBody(l.t, keys)})
		types = append(types, l.t)
	}
	if len(reqs) == 0 {
		return cut(counties, n), cut(cities, n), nil
	}
	rs, err := s.msearch(ctx, reqs...)
	if err != nil {
		return nil, nil, err
	}
	for i, t := range types {
		docs, err := decodeHits[locationDoc](rs[i])
		if err != nil {
			return nil, nil, err
		}
		names := make(map[string]string, len(docs))
		for _, d := range docs {
			if _, ok := names[d.NameKey]; !ok && d.Name != "" {
				names[d.NameKey] = d.Name
			}
		}
		list := &cities
		if t == readmodel.GeoCounty {
			list = &counties
		}
		*list = spelled(*list, names, n)
	}
	return cut(counties, n), cut(cities, n), nil
}

// contenders are the entries of a whole top list (count descending) that
// can be among the first n once renamed: those whose count is at least
// the n-th count.
func contenders(l []readmodel.ValueCount, n int) []readmodel.ValueCount {
	if n < 0 || len(l) <= n {
		return l
	}
	if n == 0 {
		return l[:0]
	}
	last := l[n-1].Count
	end := n
	for end < len(l) && l[end].Count == last {
		end++
	}
	return l[:end]
}

// spelled renames the keys names spells and orders the list by count
// descending then name ascending.
func spelled(l []readmodel.ValueCount, names map[string]string, n int) []readmodel.ValueCount {
	out := make([]readmodel.ValueCount, len(l))
	for i, v := range l {
		if name, ok := names[v.Value]; ok {
			v.Value = name
		}
		out[i] = v
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out
}

type termsAgg struct {
	// SumOtherDocCount counts the documents of the values that did not
	// fit in the buckets: any makes the distribution inexact.
	SumOtherDocCount int64 `json:"sum_other_doc_count"`
	Buckets          []struct {
		Key      string `json:"key"`
		DocCount int64  `json:"doc_count"`
	} `json:"buckets"`
}

type keyedRange struct {
	Buckets map[string]struct {
		DocCount int64 `json:"doc_count"`
	} `json:"buckets"`
}

func statsFrom(r *searchResult, topN int) (readmodel.PermitStats, error) {
	st := readmodel.PermitStats{Total: r.total()}
	top := func(name string, n int) ([]readmodel.ValueCount, error) {
		var a termsAgg
		if err := json.Unmarshal(r.Aggregations[name], &a); err != nil {
			return nil, fmt.Errorf("opensearch: stats %s: %w", name, err)
		}
		if a.SumOtherDocCount > 0 {
			// Counted exactly or not at all: a top list or distribution
			// missing values could rank the wrong ones first.
			return nil, fmt.Errorf("opensearch: stats %s overflow maxTerms: %d leads hold values beyond the first %d", name, a.SumOtherDocCount, maxTerms)
		}
		out := make([]readmodel.ValueCount, 0, len(a.Buckets))
		for _, b := range a.Buckets {
			if b.DocCount > 0 && b.Key != "" {
				out = append(out, readmodel.ValueCount{Value: b.Key, Count: b.DocCount})
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			if out[i].Count != out[j].Count {
				return out[i].Count > out[j].Count
			}
			return out[i].Value < out[j].Value
		})
		if n >= 0 && len(out) > n {
			out = out[:n]
		}
		return out, nil
	}
	var err error
	if st.BySignal, err = top("by_signal", -1); err != nil {
		return st, err
	}
	if st.TopCounties, err = top("top_counties", topN); err != nil {
		return st, err
	}
	if st.TopCities, err = top("top_cities", topN); err != nil {
		return st, err
	}
	if st.TopZips, err = top("top_zips", topN); err != nil {
		return st, err
	}
	var conf, fresh keyedRange
	if err := json.Unmarshal(r.Aggregations["confidence"], &conf); err != nil {
		return st, fmt.Errorf("opensearch: stats confidence: %w", err)
	}
	if err := json.Unmarshal(r.Aggregations["freshness"], &fresh); err != nil {
		return st, fmt.Errorf("opensearch: stats freshness: %w", err)
	}
	st.ConfidenceHigh = conf.Buckets["high"].DocCount
	st.ConfidenceMedium = conf.Buckets["medium"].DocCount
	st.ConfidenceLow = st.Total - st.ConfidenceHigh - st.ConfidenceMedium
	st.Fresh0to7 = fresh.Buckets["d0_7"].DocCount
	st.Fresh8to14 = fresh.Buckets["d8_14"].DocCount
	st.Fresh15to30 = fresh.Buckets["d15_30"].DocCount
	st.Fresh31Plus = st.Total - st.Fresh0to7 - st.Fresh8to14 - st.Fresh15to30
	return st, nil
}

// ResolveCandidates implements readmodel.Reader. One _msearch fetches the
// fuzzy location pool (resolveBody) and, for address-like text, the
// property candidates; resolve.Score and resolve.Rank order the pool as
// the memory backend's resolver does. Property candidates need a second
// _msearch for their hierarchy and permit counts (propertyCandidates).
func (s *Store) ResolveCandidates(ctx context.Context, q readmodel.ResolveQuery) ([]readmodel.Candidate, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	pq := resolve.ParseQuery(q)
	withProps := (q.GeoType == "" || q.GeoType == readmodel.GeoProperty) && propmatch.LooksLikeAddress(q.Text)
	withLocs := q.GeoType != readmodel.GeoProperty
	var reqs []msearchReq
	if withLocs {
		reqs = append(reqs, msearchReq{index: s.read(readmodel.KindLocation), body: resolveBody(pq), dfs: true})
	}
	var propQ propmatch.Query
	var psOK bool
	if withProps {
		propQ, psOK = propmatch.Parse(readmodel.PropertyQuery{Address: q.Text, State: q.State, Limit: q.Limit})
		if psOK {
			reqs = append(reqs, msearchReq{index: s.read(readmodel.KindProperty), body: propertyBody(&propQ)})
		}
	}
	if len(reqs) == 0 {
		return []readmodel.Candidate{}, nil
	}
	rs, err := s.msearch(ctx, reqs...)
	if err != nil {
		return nil, err
	}
	var ranked []readmodel.Candidate
	if withLocs {
		docs, err := decodeHits[locationDoc](rs[0])
		if err != nil {
			return nil, err
		}
		var matches []resolve.Match
		for _, d := range docs {
			if m, ok := resolve.Score(pq, d.location()); ok {
				matches = append(matches, m)
			}
		}
		ranked = resolve.Rank(matches, q.Limit)
		rs = rs[1:]
	}
	var props []readmodel.Candidate
	if psOK {
		// A pool that may have been cut fails rather than answering
		// without the property that should rank first (as
		// SearchProperties does).
		if err := propertyPoolComplete(rs[0]); err != nil {
			return nil, err
		}
		docs, err := decodeHits[propertyDoc](rs[0])
		if err != nil {
			return nil, err
		}
		matches := matchProperties(&propQ, q.Limit, docs)
		if props, err = s.propertyCandidates(ctx, matches); err != nil {
			return nil, err
		}
	}
	if q.GeoType == readmodel.GeoProperty {
		if props == nil {
			props = []readmodel.Candidate{}
		}
		return props, nil
	}
	if len(props) == 0 {
		return ranked, nil
	}
	return propmatch.MergeCandidates(props, ranked, q.Limit), nil
}

// propertyCandidates presents property matches as resolve candidates
// (propmatch.ResolveCandidate), with one _msearch for their linked
// locations and permit counts.
func (s *Store) propertyCandidates(ctx context.Context, matches []readmodel.PropertyMatch) ([]readmodel.Candidate, error) {
	if len(matches) == 0 {
		return nil, nil
	}
	var geoIDs, propIDs []string
	for _, m := range matches {
		propIDs = append(propIDs, m.Property.PropertyID)
		for _, g := range m.Property.GeoLinks {
			geoIDs = append(geoIDs, g.GeoID)
		}
	}
	slices.Sort(geoIDs) // matches of one street share their city, county and state
	geoIDs = slices.Compact(geoIDs)
	reqs := []msearchReq{{index: s.read(readmodel.KindPermit), body: propertyPermitStatsBody(propIDs)}}
	if len(geoIDs) > 0 {
		reqs = append(reqs, msearchReq{index: s.read(readmodel.KindLocation), body: locationsByIDBody(geoIDs)})
	}
	rs, err := s.msearch(ctx, reqs...)
	if err != nil {
		return nil, err
	}
	var locs []locationDoc
	if len(rs) > 1 {
		if locs, err = decodeHits[locationDoc](rs[1]); err != nil {
			return nil, err
		}
	}
	var agg struct {
		Buckets []struct {
			Key      string          `json:"key"`
			DocCount int64           `json:"doc_count"`
			Latest   json.RawMessage `json:"latest"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal(rs[0].Aggregations["by_property"], &agg); err != nil {
		return nil, fmt.Errorf("opensearch: property permit counts: %w", err)
	}
	type pc struct {
		n      int64
		latest string
	}
	counts := map[string]pc{}
	for _, b := range agg.Buckets {
		var l struct {
			Value *float64 `json:"value"`
		}
		_ = json.Unmarshal(b.Latest, &l)
		c := pc{n: b.DocCount}
		if l.Value != nil {
			c.latest = epochDay(*l.Value)
		}
		counts[b.Key] = c
	}
	look := locationLookup(locs)
	out := make([]readmodel.Candidate, 0, len(matches))
	for _, m := range matches {
		c := counts[m.Property.PropertyID]
		out = append(out, propmatch.ResolveCandidate(m, readmodel.PropertyLocation(m.Property, look, c.n, c.latest)))
	}
	return out, nil
}
