package opensearch

import (
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
// when unknown) descending, then permit_id.
func permitSearchBody(field string, q *readmodel.PermitQuery) obj {
	b := permitPageBody(field, q.GeoID, q.Desc, q.FromDate, q.ToDate, q.Limit, q.After, false)
	if q.Sort == readmodel.SortValuationDesc {
		b["sort"] = []obj{{"valuation_sort": "desc"}, {"permit_id": "asc"}}
		delete(b, "search_after")
		if a := q.After; a != nil {
			v := -1.0
			if a.HasValuation {
				v = a.Valuation
			}
			b["search_after"] = []any{v, a.PermitID}
		}
	}
	if extra := permitFilterClauses(&q.Filter); len(extra) > 0 {
		query := b["query"].(obj)
		bl := query["bool"].(obj)
		bl["filter"] = append(bl["filter"].([]obj), extra...)
	}
	return b
}
