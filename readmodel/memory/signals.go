package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/btree"

	"github.com/permitd/permitd/readmodel"
)

// signalIndexes are the secondary indexes of geo signals and leads,
// maintained by the side's writer alongside the tables.
type signalIndexes struct {
	leads *leadIndex
	// geoByState orders each state's geo signal rows by score descending,
	// signal_key ascending, geo_id ascending; the rows are immutable.
	geoByState map[string]*btree.BTreeG[*readmodel.GeoSignal]
	// geoByGeo lists each geography's rows by signal key.
	geoByGeo map[string]map[string]*readmodel.GeoSignal
}

func newSignalIndexes() signalIndexes {
	return signalIndexes{
		leads:      newLeadIndex(),
		geoByState: map[string]*btree.BTreeG[*readmodel.GeoSignal]{},
		geoByGeo:   map[string]map[string]*readmodel.GeoSignal{},
	}
}

func geoSignalLess(a, b *readmodel.GeoSignal) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.SignalKey != b.SignalKey {
		return a.SignalKey < b.SignalKey
	}
	return a.GeoID < b.GeoID
}

func (x *signalIndexes) addGeo(g *readmodel.GeoSignal) {
	t := x.geoByState[g.State]
	if t == nil {
		t = btree.NewBTreeGOptions(geoSignalLess, btree.Options{NoLocks: true})
		x.geoByState[g.State] = t
	}
	t.Set(g)
	m := x.geoByGeo[g.GeoID]
	if m == nil {
		m = map[string]*readmodel.GeoSignal{}
		x.geoByGeo[g.GeoID] = m
	}
	m[g.SignalKey] = g
}

func (x *signalIndexes) removeGeo(id string) {
	geoID, key, ok := strings.Cut(id, "|")
	if !ok {
		return
	}
	g := x.geoByGeo[geoID][key]
	if g == nil {
		return
	}
	delete(x.geoByGeo[geoID], key)
	if len(x.geoByGeo[geoID]) == 0 {
		delete(x.geoByGeo, geoID)
	}
	x.geoByState[g.State].Delete(g)
}

// putGeoSignal stores a geo signal row (the side's writer); true when it took.
func (s *side) putGeoSignal(g readmodel.GeoSignal) bool {
	_, hadPrev, ok := s.geoSignals.put(g.ID(), g.Version, g)
	if !ok {
		return false
	}
	if hadPrev {
		s.signals.removeGeo(g.ID())
	}
	s.signals.addGeo(&g)
	return true
}

func (s *side) delGeoSignal(id string, version int64) bool {
	_, hadPrev, ok := s.geoSignals.del(id, version)
	if ok && hadPrev {
		s.signals.removeGeo(id)
	}
	return ok
}

// putLead stores a lead (the side's writer); true when it took.
func (s *side) putLead(l readmodel.Lead) bool {
	_, hadPrev, ok := s.leads.put(l.LeadID, l.Version, l)
	if !ok {
		return false
	}
	if hadPrev {
		s.signals.leads.remove(l.LeadID)
	}
	s.signals.leads.add(l)
	return true
}

func (s *side) delLead(id string, version int64) bool {
	_, hadPrev, ok := s.leads.del(id, version)
	if ok && hadPrev {
		s.signals.leads.remove(id)
	}
	return ok
}

// putCatalog stores a catalog entry (the side's writer); true when it took.
func (s *side) putCatalog(c readmodel.CatalogEntry) bool {
	_, _, ok := s.catalog.put(c.ID(), c.Version, c)
	return ok
}

func (s *side) delCatalog(id string, version int64) bool {
	_, _, ok := s.catalog.del(id, version)
	return ok
}

// activeKey reports whether the catalog of state lists key as active.
func (s *side) activeKey(state, key string) bool {
	c, ok := s.catalog.get(readmodel.CatalogEntry{State: state, SignalKey: key}.ID())
	return ok && c.Status == readmodel.CatalogActive
}

// GeoSignalsForLocation implements readmodel.Reader.
func (s *side) GeoSignalsForLocation(ctx context.Context, geoID string, keys []string) (readmodel.LocationSignals, error) {
	loc, ok := s.locations.get(geoID)
	if !ok {
		return readmodel.LocationSignals{}, readmodel.ErrNotFound
	}
	rows := s.signals.geoByGeo[geoID]
	out := []readmodel.GeoSignal{}
	for k, g := range rows {
		if (len(keys) == 0 || slices.Contains(keys, k)) && s.activeKey(g.State, k) {
			out = append(out, g.Clone())
		}
	}
	slices.SortFunc(out, func(a, b readmodel.GeoSignal) int { return cmp.Compare(a.SignalKey, b.SignalKey) })
	return readmodel.LocationSignals{GeoType: loc.GeoType, State: loc.State, Signals: out}, nil
}

// SearchGeoSignals implements readmodel.Reader: one walk of the state's
// score-ordered tree from the cursor, filtering as it goes.
func (s *side) SearchGeoSignals(ctx context.Context, q readmodel.GeoSignalQuery) (readmodel.GeoSignalPage, error) {
	if q.Limit < 1 || q.Limit > 100 {
		return readmodel.GeoSignalPage{}, fmt.Errorf("%w: geo signal limit %d", readmodel.ErrInvalidQuery, q.Limit)
	}
	page := readmodel.GeoSignalPage{Signals: []readmodel.GeoSignal{}}
	t := s.signals.geoByState[q.State]
	if t == nil {
		return page, nil
	}
	var after *readmodel.GeoSignal
	if q.After != nil {
		after = &readmodel.GeoSignal{Score: q.After.Score, SignalKey: q.After.SignalKey, GeoID: q.After.GeoID}
	}
	// The state's active keys (among q.SignalKeys when given): the
	// catalog is small, rows are many.
	active := map[string]bool{}
	s.catalog.each(func(_ string, _ int64, c readmodel.CatalogEntry) {
		if c.State == q.State && c.Status == readmodel.CatalogActive && (len(q.SignalKeys) == 0 || slices.Contains(q.SignalKeys, c.SignalKey)) {
			active[c.SignalKey] = true
		}
	})
	if len(active) == 0 {
		return page, nil
	}
	var hits []*readmodel.GeoSignal
	iter := func(g *readmodel.GeoSignal) bool {
		if after != nil && !geoSignalLess(after, g) {
			return true
		}
		if !active[g.SignalKey] ||
			q.GeoType != "" && g.GeoType != q.GeoType ||
			q.Decision != "" && g.Decision != q.Decision {
			return true
		}
		if q.MinScore != nil && g.Score < *q.MinScore {
			return false // scores only fall from here
		}
		hits = append(hits, g)
		return len(hits) <= q.Limit
	}
	if after == nil {
		t.Scan(iter)
	} else {
		t.Ascend(after, iter)
	}
	if len(hits) > q.Limit {
		hits = hits[:q.Limit]
		last := hits[len(hits)-1]
		page.Next = &readmodel.GeoSignalKey{Score: last.Score, SignalKey: last.SignalKey, GeoID: last.GeoID}
	}
	for _, g := range hits {
		page.Signals = append(page.Signals, g.Clone())
	}
	return page, nil
}

// Catalog implements readmodel.Reader: signal_key ascending.
func (s *side) Catalog(ctx context.Context, q readmodel.CatalogQuery) ([]readmodel.CatalogEntry, error) {
	out := []readmodel.CatalogEntry{}
	s.catalog.each(func(_ string, _ int64, c readmodel.CatalogEntry) {
		if c.State != q.State || !q.IncludeInactive && c.Status != readmodel.CatalogActive {
			return
		}
		if len(q.SignalKeys) > 0 && !slices.Contains(q.SignalKeys, c.SignalKey) {
			return
		}
		out = append(out, c.Clone())
	})
	slices.SortFunc(out, func(a, b readmodel.CatalogEntry) int { return cmp.Compare(a.SignalKey, b.SignalKey) })
	return out, nil
}

// PermitLeads implements readmodel.Reader.
func (s *side) PermitLeads(ctx context.Context, q readmodel.LeadQuery) (readmodel.LeadPage, error) {
	if q.Limit < 1 || q.Limit > 100 {
		return readmodel.LeadPage{}, fmt.Errorf("%w: lead limit %d", readmodel.ErrInvalidQuery, q.Limit)
	}
	if q.Sort != readmodel.SortEventDateDesc && q.Sort != readmodel.SortConfidenceDesc {
		return readmodel.LeadPage{}, fmt.Errorf("%w: lead sort %q", readmodel.ErrInvalidQuery, q.Sort)
	}
	anchor, ok := s.locations.get(q.Filter.GeoID)
	if !ok {
		return readmodel.LeadPage{}, readmodel.ErrNotFound
	}
	page := readmodel.LeadPage{GeoType: anchor.GeoType, Leads: []readmodel.Lead{}}
	recs, err := s.signals.leads.page(q)
	if err != nil {
		return page, err
	}
	if len(recs) > q.Limit {
		recs = recs[:q.Limit]
		last := recs[len(recs)-1]
		page.Next = &readmodel.LeadKey{EventDate: formatDay(last.date), HasConfidence: last.hasConf, Confidence: last.conf, LeadID: last.lead.LeadID}
	}
	for _, r := range recs {
		page.Leads = append(page.Leads, r.lead.Clone())
	}
	return page, nil
}

// PermitStats implements readmodel.Reader.
func (s *side) PermitStats(ctx context.Context, q readmodel.StatsQuery) (readmodel.PermitStats, error) {
	anchor, ok := s.locations.get(q.Filter.GeoID)
	if !ok {
		return readmodel.PermitStats{}, readmodel.ErrNotFound
	}
	st, err := s.signals.leads.stats(q, s.names)
	st.GeoType = anchor.GeoType
	return st, err
}
