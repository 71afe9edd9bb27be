// Location and permit page reads: a location with its counts, the permit search and its anchors.

package opensearch

import (
	"context"
	"encoding/json"
	"math"

	"github.com/permitd/permitd/mappings"
	"github.com/permitd/permitd/readmodel"
)

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
