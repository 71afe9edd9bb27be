package opensearch

import (
	"context"
	"strconv"
	"strings"

	"github.com/permitd/permitd/readmodel"
)

// Permit search filters (readmodel.PermitFilter) as OpenSearch clauses,
// each golden-tested (testdata/permits_filtered*.search.json):
//
//   - permit_type, work_type, status: keyword term queries with
//     case_insensitive, one per value, any of them (bool should);
//   - min/max_valuation: a range on valuation (a missing valuation never
//     matches a range);
//   - contractor: a term on contractor_key, the document's
//     readmodel.ContractorKey of contractor, written at index time;
//   - q: the permit number (a case-insensitive term on permit_number) or
//     the description: match_bool_prefix with operator and on
//     search_text, the english-analysed copy (copy_to) of
//     raw_description, every word of q, the last one as a prefix
//     (readmodel.IsPermitNumber and readmodel.TextQuery in Go).

// anyValue keeps documents whose keyword field equals one of vals,
// ignoring case.
func anyValue(field string, vals []string) obj {
	should := make([]obj, len(vals))
	for i, v := range vals {
		should[i] = obj{"term": obj{field: obj{"value": v, "case_insensitive": true}}}
	}
	if len(should) == 1 {
		return should[0]
	}
	return obj{"bool": obj{"should": should, "minimum_should_match": 1}}
}

// permitFilterClauses are the filter clauses of f (none for a zero f).
func permitFilterClauses(f *readmodel.PermitFilter) []obj {
	var out []obj
	if len(f.PermitTypes) > 0 {
		out = append(out, anyValue("permit_type", f.PermitTypes))
	}
	if len(f.WorkTypes) > 0 {
		out = append(out, anyValue("work_type", f.WorkTypes))
	}
	if len(f.Statuses) > 0 {
		out = append(out, anyValue("status", f.Statuses))
	}
	if f.MinValuation != nil || f.MaxValuation != nil {
		r := obj{}
		if f.MinValuation != nil {
			r["gte"] = *f.MinValuation
		}
		if f.MaxValuation != nil {
			r["lte"] = *f.MaxValuation
		}
		out = append(out, obj{"range": obj{"valuation": r}})
	}
	if f.Contractor != "" {
		out = append(out, term("contractor_key", f.Contractor))
	}
	if f.Near != nil {
		out = append(out, obj{"geo_distance": obj{
			"distance": strconv.FormatFloat(f.RadiusM, 'f', -1, 64) + "m", "distance_type": "arc",
			"point": obj{"lat": f.Near.Lat, "lon": f.Near.Lon},
		}})
	}
	if b := f.BBox; b != nil {
		out = append(out, obj{"geo_bounding_box": obj{"point": obj{
			"top_left":     obj{"lat": b.MaxLat, "lon": b.MinLon},
			"bottom_right": obj{"lat": b.MinLat, "lon": b.MaxLon},
		}}})
	}
	if f.Text != "" {
		out = append(out, obj{"bool": obj{"minimum_should_match": 1, "should": []obj{
			{"term": obj{"permit_number": obj{"value": strings.TrimSpace(f.Text), "case_insensitive": true}}},
			{"match_bool_prefix": obj{"search_text": obj{"query": f.Text, "operator": "and"}}},
		}}})
	}
	return out
}

// permitSearchBody is a permit page (permitPageBody) narrowed by q.Filter,
// in q.Sort: valuation_desc sorts on valuation_sort (the valuation, -1
// when unknown) descending, then doc_id (the permit id).
func permitSearchBody(field string, q *readmodel.PermitQuery) obj {
	b := permitPageBody(field, q.Geo.ID(), q.Desc, q.FromDate, q.ToDate, q.Limit, q.After)
	if q.Sort == readmodel.SortValuationDesc {
		b["sort"] = []obj{{"valuation_sort": "desc"}, {"doc_id": "asc"}}
		delete(b, "search_after")
		if a := q.After; a != nil {
			v := -1.0
			if a.HasValuation {
				v = a.Valuation
			}
			b["search_after"] = []any{v, a.PermitID}
		}
	}
	bl := b["query"].(obj)["bool"].(obj)
	if q.Geo.IsZero() { // a geometry alone: every geo; drop the anchor term
		f := bl["filter"].([]obj)
		bl["filter"] = append(f[:1:1], f[2:]...)
	}
	if extra := permitFilterClauses(&q.Filter); len(extra) > 0 {
		bl["filter"] = append(bl["filter"].([]obj), extra...)
	}
	if q.Sort == readmodel.SortDistance && q.Filter.Near != nil {
		b["sort"] = []obj{{"_geo_distance": obj{
			"point": []obj{{"lat": q.Filter.Near.Lat, "lon": q.Filter.Near.Lon}},
			"order": "asc", "unit": "m", "distance_type": "arc",
		}}, {"doc_id": "asc"}}
		delete(b, "search_after")
		if a := q.After; a != nil {
			b["search_after"] = []any{a.DistanceM, a.PermitID}
		}
	}
	return b
}

// permitSearchDocs runs a permit page: with the anchor's existence check
// (ErrNotFound) when q has a geo_id, alone for a geometry without one.
func (s *Store) permitSearchDocs(ctx context.Context, field string, q *readmodel.PermitQuery) ([]permitDoc, error) {
	body := permitSearchBody(field, q)
	if q.Geo.IsZero() {
		r, err := s.search(ctx, s.read(readmodel.KindPermit), body)
		if err != nil {
			return nil, err
		}
		return decodeHits[permitDoc](r)
	}
	rs, err := s.msearch(ctx, s.exists(q.Geo), msearchReq{index: s.read(readmodel.KindPermit), body: body})
	if err != nil {
		return nil, err
	}
	if !found(rs[0]) {
		return nil, readmodel.ErrNotFound
	}
	return decodeHits[permitDoc](rs[1])
}

// distanceOf is a hit's distance from q's near point; nil without one or
// without coordinates.
func distanceOf(q *readmodel.PermitQuery, lat, lon *float64) *float64 {
	if q.Filter.Near == nil || lat == nil || lon == nil {
		return nil
	}
	d := readmodel.DistanceM(*q.Filter.Near, readmodel.GeoPoint{Lat: *lat, Lon: *lon})
	return &d
}
