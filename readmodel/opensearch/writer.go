package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/permitd/permitd/readmodel"
)

// bulkItem is one document or tombstone of a batch.
type bulkItem struct {
	kind    readmodel.Kind
	id      string
	version int64
	doc     any
}

// items lists the batch in the order the memory backend applies it:
// kind by kind, deletes last. Items of one id keep their order within the
// bulk request, and the version rule makes the order irrelevant to the
// end state anyway.
func items(b readmodel.Batch) []bulkItem {
	out := make([]bulkItem, 0, b.Len())
	for _, l := range b.Locations {
		out = append(out, bulkItem{readmodel.KindLocation, l.GeoID, l.Version, locationDocOf(l)})
	}
	for _, p := range b.Permits {
		out = append(out, bulkItem{readmodel.KindPermit, p.PermitID, p.Version, permitDocOf(p)})
	}
	for _, p := range b.Properties {
		out = append(out, bulkItem{readmodel.KindProperty, p.PropertyID, p.Version, propertyDocOf(p)})
	}
	for _, g := range b.GeoSignals {
		out = append(out, bulkItem{readmodel.KindGeoSignal, g.ID(), g.Version, geoSignalDocOf(g)})
	}
	for _, l := range b.Leads {
		out = append(out, bulkItem{readmodel.KindLead, l.LeadID, l.Version, leadDocOf(l)})
	}
	for _, c := range b.Catalog {
		out = append(out, bulkItem{readmodel.KindCatalog, c.ID(), c.Version, catalogDocOf(c)})
	}
	for _, d := range b.Deletes {
		out = append(out, bulkItem{d.Kind, d.ID, d.Version, meta{DocID: d.ID, Version: d.Version, Deleted: true}})
	}
	return out
}

// bulkBody renders a batch as _bulk NDJSON: one index action per item
// with the entity version as external version, into the write alias.
func (s *Store) bulkBody(b readmodel.Batch) ([]byte, []bulkItem, error) {
	its := items(b)
	var buf bytes.Buffer
	for _, it := range its {
		if _, ok := kindKnown[it.kind]; !ok {
			return nil, nil, fmt.Errorf("opensearch: unknown kind %q", it.kind)
		}
		if it.version < 1 {
			return nil, nil, fmt.Errorf("opensearch: %s %q: version %d, want >= 1 (external versioning)", it.kind, it.id, it.version)
		}
		action := map[string]any{"index": map[string]any{
			"_index": s.write(it.kind), "_id": it.id, "version": it.version, "version_type": "external",
		}}
		for _, v := range []any{action, it.doc} {
			line, err := json.Marshal(v)
			if err != nil {
				return nil, nil, err
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes(), its, nil
}

var kindKnown = map[readmodel.Kind]struct{}{
	readmodel.KindLocation: {}, readmodel.KindPermit: {}, readmodel.KindProperty: {},
	readmodel.KindGeoSignal: {}, readmodel.KindLead: {}, readmodel.KindCatalog: {},
}

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

// Apply implements readmodel.Writer with one _bulk request
// (refresh=wait_for). Each item's answer is checked: 200/201 applied, 409
// (an equal or newer version is stored) stale, anything else an error
// naming the first failed items; the batch may then be partly applied and
// is safe to retry whole.
func (s *Store) Apply(ctx context.Context, b readmodel.Batch) (readmodel.ApplyResult, error) {
	var res readmodel.ApplyResult
	if b.Len() == 0 {
		return res, ctx.Err()
	}
	body, its, err := s.bulkBody(b)
	if err != nil {
		return res, err
	}
	var out bulkResponse
	if err := s.do(ctx, http.MethodPost, "/_bulk?refresh=wait_for", body, "application/x-ndjson", &out); err != nil {
		return res, err
	}
	if len(out.Items) != len(its) {
		return res, fmt.Errorf("%w: bulk answered %d items for %d", readmodel.ErrUnavailable, len(out.Items), len(its))
	}
	var errs []error
	for i, item := range out.Items {
		r, ok := item["index"]
		if !ok {
			errs = append(errs, fmt.Errorf("item %d: no index result", i))
			continue
		}
		switch {
		case r.Status == http.StatusOK || r.Status == http.StatusCreated:
			res.Applied++
		case r.Status == http.StatusConflict:
			res.Stale++
		default:
			reason := ""
			if r.Error != nil {
				reason = r.Error.Type + ": " + r.Error.Reason
			}
			if len(errs) < 5 {
				errs = append(errs, fmt.Errorf("%s %q: %d %s", its[i].kind, its[i].id, r.Status, reason))
			} else if len(errs) == 5 {
				errs = append(errs, errors.New("..."))
			}
		}
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("opensearch: bulk: %w", errors.Join(errs...))
	}
	return res, nil
}
