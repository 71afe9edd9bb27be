package opensearch

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/permitd/permitd/readmodel"
)

// Request bodies, one function per query shape, each golden-tested
// (testdata/*.search.json) and checked against the OpenSearch API
// specification. Bodies are maps: json.Marshal sorts their keys, so a
// rendering is deterministic.

type obj = map[string]any

// live keeps documents that are not tombstones.
func live() obj { return obj{"term": obj{"deleted": false}} }

func term(field string, v any) obj { return obj{"term": obj{field: v}} }

func terms(field string, vs []string) obj { return obj{"terms": obj{field: vs}} }

func filtered(clauses ...obj) obj {
	f := []obj{live()}
	f = append(f, clauses...)
	return obj{"bool": obj{"filter": f}}
}

// dateRange keeps documents whose date field is in [from, to]
// (YYYY-MM-DD, inclusive; "" leaves that side open).
func dateRange(field, from, to string) obj {
	r := obj{"format": "strict_date"}
	if from != "" {
		r["gte"] = from
	}
	if to != "" {
		r["lte"] = to
	}
	return obj{"range": obj{field: r}}
}

// byIDBody fetches one live document by id (the existence half of a read
// that must answer ErrNotFound).
func byIDBody(id string) obj {
	return obj{"size": 1, "query": filtered(obj{"ids": obj{"values": []string{id}}})}
}

// cellCountBody is a location's permit_count (the sum of its cells'
// counts) and latest_permit_date (the newest day of a cell that counts a
// permit: a cell that fell to zero stays, see cells.go) from the permit
// count cells of anchor (a geo_id or a property_id): at most one cell
// per issue day, whatever the number of permits.
func cellCountBody(anchor string) obj {
	return obj{
		"size": 0, "track_total_hits": false,
		"query": obj{"bool": obj{"filter": []obj{
			term("anchor", anchor),
			{"range": obj{"count": obj{"gt": 0}}},
		}}},
		"aggs": obj{
			"permits": obj{"sum": obj{"field": "count"}},
			"latest":  obj{"max": obj{"field": "day", "format": "strict_date"}},
		},
	}
}

// cellCount reads cellCountBody's sum.
func cellCount(r *searchResult) (int64, error) {
	var a struct {
		Value *float64 `json:"value"`
	}
	if err := json.Unmarshal(r.Aggregations["permits"], &a); err != nil || a.Value == nil {
		return 0, fmt.Errorf("opensearch: permit count cells: no sum in %s", r.Aggregations["permits"])
	}
	return int64(math.Round(*a.Value)), nil
}

// hierarchyBody fetches the live locations a property links to, by a terms
// lookup on the property's own geo_links, so it can go in the same
// _msearch as the property itself.
func hierarchyBody(propertiesIndex, propertyID string) obj {
	return obj{
		"size": 16,
		"query": filtered(obj{"terms": obj{"geo_id": obj{
			"index": propertiesIndex, "id": propertyID, "path": "geo_links.geo_id",
		}}}),
	}
}

// locationsByIDBody fetches live locations by geo_id.
func locationsByIDBody(ids []string) obj {
	return obj{"size": len(ids), "query": filtered(terms("geo_id", ids))}
}

// permitPageBody pages permits under field=id (geo_ids for a location,
// property_id for a property). Sort: one numeric key per order (issue_up
// ascending, issue_down descending; undated permits hold a sentinel past
// every day, so they come last in both orders), then doc_id (the permit
// id): every sort value is present, and the engine can skip on the
// first key.
func permitPageBody(field, id string, desc bool, from, to string, limit int, after *readmodel.PermitKey) obj {
	clauses := []obj{term(field, id)}
	if from != "" || to != "" {
		clauses = append(clauses, dateRange("issue_date", from, to))
	}
	key := obj{"issue_up": "asc"}
	if desc {
		key = obj{"issue_down": "desc"}
	}
	b := obj{
		"size":             limit + 1,
		"track_total_hits": false,
		"query":            filtered(clauses...),
		"sort":             []obj{key, {"doc_id": "asc"}},
	}
	if after != nil {
		up, down := issueKeys(after.IssueDate)
		k := up
		if desc {
			k = down
		}
		b["search_after"] = []any{k, after.PermitID}
	}
	return b
}

// geoSignalsOfBody lists one geography's rows, signal_key ascending,
// with their total so a geography with more than maxRowsPerGeo rows fails
// the read (see complete) instead of losing its last keys.
func geoSignalsOfBody(geoID string, keys []string) obj {
	clauses := []obj{term("geo_id", geoID)}
	if len(keys) > 0 {
		clauses = append(clauses, terms("signal_key", keys))
	}
	return bySignalKey(maxRowsPerGeo, clauses)
}

// bySignalKey is a search for up to size documents matching every one
// of clauses, signal_key ascending, with their exact total (so a caller
// can tell a capped answer from a whole one).
func bySignalKey(size int, clauses []obj) obj {
	return obj{
		"size":             size,
		"track_total_hits": true,
		"query":            filtered(clauses...),
		"sort":             []obj{{"signal_key": "asc"}},
	}
}

// maxRowsPerGeo bounds the signal rows GeoSignalsForLocation reads for
// one geography: one row per signal key, so it is the number of distinct
// geo signal keys. More rows than that is an error, not a shorter answer.
const maxRowsPerGeo = 1000

// activeCatalogBody finds the active catalog entries (status "active")
// of state, or of every state when state is "", restricted to keys when
// keys is non-empty. Only state, signal_key and status are read: the
// answer is the set of (state, signal_key) pairs whose geo signal rows
// are served (see activeSet). size bounds it; the total is tracked so an
// answer that does not hold every entry fails the read (see complete).
func activeCatalogBody(state string, keys []string, size int) obj {
	clauses := []obj{term("status", readmodel.CatalogActive)}
	if state != "" {
		clauses = append(clauses, term("state", state))
	}
	if len(keys) > 0 {
		clauses = append(clauses, terms("signal_key", keys))
	}
	return obj{
		"size":             size,
		"track_total_hits": true,
		"_source":          []string{"state", "signal_key", "status"},
		"query":            filtered(clauses...),
		"sort":             []obj{{"state": "asc"}, {"signal_key": "asc"}},
	}
}

// maxActiveEntries bounds the active catalog entries of every state that
// GeoSignalsForLocation reads with its rows (states x signal keys). It is
// the default index.max_result_window, the most one search returns; more
// active entries than that is an error, not a partial active set.
const maxActiveEntries = 10000

// geoSignalPageBody pages a state's rows whose signal_key is one of
// active (the state's active keys, already intersected with q.SignalKeys;
// never empty: SearchGeoSignals answers an empty page without a search):
// score desc, signal_key asc, geo_id asc.
func geoSignalPageBody(q readmodel.GeoSignalQuery, active []string) obj {
	clauses := []obj{term("state", q.State), terms("signal_key", active)}
	if q.GeoType != "" {
		clauses = append(clauses, term("geo_type", string(q.GeoType)))
	}
	if q.Decision != "" {
		clauses = append(clauses, term("decision", q.Decision))
	}
	if q.MinScore != nil {
		clauses = append(clauses, obj{"range": obj{"score": obj{"gte": *q.MinScore}}})
	}
	b := obj{
		"size":             q.Limit + 1,
		"track_total_hits": false,
		"query":            filtered(clauses...),
		"sort":             []obj{{"score": "desc"}, {"signal_key": "asc"}, {"geo_id": "asc"}},
	}
	if q.After != nil {
		b["search_after"] = []any{q.After.Score, q.After.SignalKey, q.After.GeoID}
	}
	return b
}

// catalogBody lists a state's catalog entries, signal_key ascending (the
// state is fixed, so this is the memory backend's order), with their
// total so a state with more than maxCatalog entries fails the read.
func catalogBody(q readmodel.CatalogQuery) obj {
	clauses := []obj{term("state", q.State)}
	if !q.IncludeInactive {
		clauses = append(clauses, term("status", readmodel.CatalogActive))
	}
	if len(q.SignalKeys) > 0 {
		clauses = append(clauses, terms("signal_key", q.SignalKeys))
	}
	return bySignalKey(maxCatalog, clauses)
}

// maxCatalog bounds the catalog entries of one state that Catalog, and the
// active-key lookup of SearchGeoSignals, read: one entry per signal key,
// so it is the number of distinct keys a state may have. More entries
// than that is an error, not a shorter list.
const maxCatalog = 1000

// leadWindow is a LeadFilter's effective date bounds: the later of
// FromDate and FreshSince, and ToDate. Any bound excludes null dates (a
// range query never matches a missing field).
func leadWindow(f readmodel.LeadFilter) (lo, hi string, err error) {
	for _, s := range []string{f.FromDate, f.FreshSince, f.ToDate} {
		if s != "" {
			if _, ok := dayOf(s); !ok {
				return "", "", fmt.Errorf("%w: date %q is not YYYY-MM-DD", readmodel.ErrInvalidQuery, s)
			}
		}
	}
	lo = f.FromDate
	if f.FreshSince > lo {
		lo = f.FreshSince
	}
	return lo, f.ToDate, nil
}

// leadQuery is the filter PermitLeads and PermitStats share.
func leadQuery(f readmodel.LeadFilter) (obj, error) {
	lo, hi, err := leadWindow(f)
	if err != nil {
		return nil, err
	}
	clauses := []obj{term("geo_ids", f.Geo.ID())}
	if len(f.SignalKeys) > 0 {
		clauses = append(clauses, terms("signal_key", f.SignalKeys))
	}
	if lo != "" || hi != "" {
		clauses = append(clauses, dateRange("event_date_used", lo, hi))
	}
	if f.MinConfidence != nil {
		clauses = append(clauses, obj{"range": obj{"confidence": obj{"gte": *f.MinConfidence}}})
	}
	return filtered(clauses...), nil
}

// leadPageBody pages leads in the query's order: two descending numeric
// keys without missing values (event_key, conf_key: nulls hold a sentinel
// below every value, so they come last; see leadDoc), then doc_id (the
// lead id). The date order is the leads index's own sort (index.sort),
// so the engine can stop early in every segment.
func leadPageBody(q readmodel.LeadQuery) (obj, error) {
	query, err := leadQuery(q.Filter)
	if err != nil {
		return nil, err
	}
	var sort []obj
	switch q.Sort {
	case readmodel.SortEventDateDesc:
		sort = []obj{{"event_key": "desc"}, {"conf_key": "desc"}, {"doc_id": "asc"}}
	case readmodel.SortConfidenceDesc:
		sort = []obj{{"conf_key": "desc"}, {"event_key": "desc"}, {"doc_id": "asc"}}
	default:
		return nil, fmt.Errorf("%w: lead sort %q", readmodel.ErrInvalidQuery, q.Sort)
	}
	b := obj{"size": q.Limit + 1, "track_total_hits": false, "query": query, "sort": sort}
	if a := q.After; a != nil {
		if a.EventDate != "" {
			if _, ok := dayOf(a.EventDate); !ok {
				return nil, fmt.Errorf("%w: cursor date %q", readmodel.ErrInvalidQuery, a.EventDate)
			}
		}
		day := eventKey(a.EventDate)
		conf := noConfKey
		if a.HasConfidence {
			conf = a.Confidence
		}
		if q.Sort == readmodel.SortEventDateDesc {
			b["search_after"] = []any{day, conf, a.LeadID}
		} else {
			b["search_after"] = []any{conf, day, a.LeadID}
		}
	}
	return b, nil
}

// maxTerms bounds the buckets of one stats terms aggregation. Terms counts
// are exact when a shard holds fewer distinct values than its shard_size
// (size*1.5+10); sum_other_doc_count reports what did not fit.
const maxTerms = 10000

// statsAggs are the aggregations of PermitStats (golden: stats.aggs.json):
// terms for signal keys and the top lists (count desc, value asc: the
// memory order; top lists are cut to TopN after the exact counts), a
// range over confidence and a date_range over event_date_used relative to
// Today. The low-confidence and 31+ day buckets are what the others leave
// of the total, because they hold the null values too.
func statsAggs(today string) (obj, error) {
	t, err := time.Parse(time.DateOnly, today)
	if err != nil {
		return nil, fmt.Errorf("%w: stats need Today, got %q", readmodel.ErrInvalidQuery, today)
	}
	ago := func(days int) string { return t.AddDate(0, 0, -days).Format(time.DateOnly) }
	top := func(field string) obj {
		return obj{"terms": obj{"field": field, "size": maxTerms, "order": []obj{{"_count": "desc"}, {"_key": "asc"}}}}
	}
	return obj{
		"by_signal":    top("signal_key"),
		"top_counties": top("location.county_norm"),
		"top_cities":   top("location.city_norm"),
		"top_zips":     top("location.zipcode_norm"),
		"confidence": obj{"range": obj{"field": "confidence", "keyed": true, "ranges": []obj{
			{"key": "high", "from": 0.75},
			{"key": "medium", "from": 0.5, "to": 0.75},
		}}},
		"freshness": obj{"date_range": obj{"field": "event_date_used", "format": "strict_date", "keyed": true, "ranges": []obj{
			{"key": "d0_7", "from": ago(7)},
			{"key": "d8_14", "from": ago(14), "to": ago(7)},
			{"key": "d15_30", "from": ago(30), "to": ago(14)},
		}}},
	}, nil
}

func statsBody(q readmodel.StatsQuery) (obj, error) {
	query, err := leadQuery(q.Filter)
	if err != nil {
		return nil, err
	}
	aggs, err := statsAggs(q.Today)
	if err != nil {
		return nil, err
	}
	return obj{"size": 0, "track_total_hits": true, "query": query, "aggs": aggs}, nil
}

// spellingBody finds the live locations of geo type t whose normalised
// name (name_key) is one of keys, one per key (collapse), the most
// recently indexed first: the spellings of a stats top list.
func spellingBody(t readmodel.GeoType, keys []string) obj {
	return obj{
		"size":             len(keys),
		"track_total_hits": false,
		"_source":          []string{"name", "name_key"},
		"query":            filtered(term("geo_type", string(t)), terms("name_key", keys)),
		"collapse":         obj{"field": "name_key"},
		"sort":             []obj{{"indexed_at": "desc"}, {"doc_id": "asc"}},
	}
}

// propertyPermitStatsBody counts the permits of several properties and
// their latest issue date, one terms bucket per property.
func propertyPermitStatsBody(ids []string) obj {
	return obj{
		"size":  0,
		"query": filtered(terms("property_id", ids)),
		"aggs": obj{"by_property": obj{
			"terms": obj{"field": "property_id", "size": len(ids)},
			"aggs":  obj{"latest": obj{"max": obj{"field": "issue_date", "format": "strict_date"}}},
		}},
	}
}

// countBody counts the documents of an index, tombstones included, with
// match_all: the engine answers it from each segment's live-document
// count without visiting a posting, so a readiness check over 500M
// documents costs what one over 5 does. countDeletedBody counts the
// tombstones (a few per entity ever deleted, iterated); Counts reports
// the difference.
func countBody() obj {
	return obj{"size": 0, "track_total_hits": true, "query": obj{"match_all": obj{}}}
}

// countDeletedBody counts the tombstones of an index.
func countDeletedBody() obj {
	return obj{"size": 0, "track_total_hits": true, "query": term("deleted", true)}
}

// scanPageSize is the page of a full scan (Digest).
const scanPageSize = 5000

// scanBody pages every live document by doc_id, returning only id and
// version; pit is "" without a point in time.
func scanBody(pit string, after string) obj {
	b := obj{
		"size":             scanPageSize,
		"track_total_hits": false,
		"query":            filtered(),
		"_source":          []string{"doc_id", "version"},
		"sort":             []obj{{"doc_id": "asc"}},
	}
	return pageAt(b, pit, after)
}

const pitKeepAlive = "2m"

// epochDay converts a max aggregation value (epoch milliseconds) to a date.
func epochDay(ms float64) string {
	if math.IsNaN(ms) || math.IsInf(ms, 0) {
		return ""
	}
	return time.UnixMilli(int64(ms)).UTC().Format(time.DateOnly)
}
