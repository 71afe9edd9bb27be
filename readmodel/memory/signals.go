package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/tidwall/btree"

	"github.com/permitd/permitd/readmodel"
)

// signalIndexes are the secondary indexes of geo signals and leads,
// maintained by the side's writer alongside the tables.
type signalIndexes struct {
	leads *leadIndex
	// geoRows orders the geo signal rows of each (state, signal key, geo
	// type) by score descending, signal_key ascending, geo_id ascending;
	// the rows are immutable. A page merges the trees of the keys and
	// types it asks for.
	geoRows map[geoRowsKey]*btree.BTreeG[*readmodel.GeoSignal]
	// geoByGeo lists each geography's rows by signal key.
	geoByGeo map[string]map[string]*readmodel.GeoSignal
}

func newSignalIndexes() signalIndexes {
	return signalIndexes{
		leads:    newLeadIndex(),
		geoRows:  map[geoRowsKey]*btree.BTreeG[*readmodel.GeoSignal]{},
		geoByGeo: map[string]map[string]*readmodel.GeoSignal{},
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

type geoRowsKey struct {
	state, key string
	typ        readmodel.GeoType
}

func rowsKey(g *readmodel.GeoSignal) geoRowsKey {
	return geoRowsKey{state: g.State, key: g.SignalKey, typ: g.GeoType}
}

func (x *signalIndexes) addGeo(g *readmodel.GeoSignal) {
	t := x.geoRows[rowsKey(g)]
	if t == nil {
		t = btree.NewBTreeGOptions(geoSignalLess, btree.Options{NoLocks: true})
		x.geoRows[rowsKey(g)] = t
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
	if t := x.geoRows[rowsKey(g)]; t != nil {
		t.Delete(g)
		if t.Len() == 0 {
			delete(x.geoRows, rowsKey(g))
		}
	}
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
	prev, index, took := s.storeLead(l)
	if index {
		var rec *leadRec
		if prev != nil {
			rec = s.signals.leads.remove(prev) // reused: a move makes no garbage
		}
		s.leads.rows[l.LeadID].doc = s.signals.leads.add(l, rec)
	}
	return took
}

// storeLead stores l in the side's lead table (the side's writer) and
// reports whether it took. When it did, either its stored record kept
// its place and now holds l (replace), or index is true: l is still to
// be indexed, after prev, the record it replaced (nil for a new lead),
// leaves the lead structures; the table's row is then the caller's to
// fill.
func (s *side) storeLead(l readmodel.Lead) (prev *leadRec, index, took bool) {
	prev, hadPrev, ok := s.leads.put(l.LeadID, l.Version, nil)
	if !ok && l.Linked() {
		prev, ok = s.leads.replace(l.LeadID, l.Version, nil, leadLinked) // equal version: a re-link (relink.go)
		hadPrev = ok
	}
	if !ok {
		return nil, false, false
	}
	if !hadPrev {
		return nil, true, true
	}
	if s.signals.leads.replace(prev, l) {
		s.leads.rows[l.LeadID].doc = prev // the same record, with the new document
		return nil, false, true
	}
	return prev, true, true
}

func (s *side) delLead(id string, version int64) bool {
	prev, hadPrev, ok := s.leads.del(id, version)
	if ok && hadPrev {
		s.signals.leads.drop(s.signals.leads.remove(prev))
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
func (s *side) GeoSignalsForLocation(ctx context.Context, geo readmodel.GeoRef, keys []string) (readmodel.LocationSignals, error) {
	geoID := geo.ID() // a property is no location: not found
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

// SearchGeoSignals implements readmodel.Reader: a k-way merge of the
// score-ordered trees of the state's active keys (among q.SignalKeys) and
// the asked geo type, each from the cursor, stopping after limit+1 rows.
func (s *side) SearchGeoSignals(ctx context.Context, q readmodel.GeoSignalQuery) (readmodel.GeoSignalPage, error) {
	if err := q.Validate(); err != nil {
		return readmodel.GeoSignalPage{}, err
	}
	page := readmodel.GeoSignalPage{Signals: []readmodel.GeoSignal{}}
	var after *readmodel.GeoSignal
	if q.After != nil {
		after = &readmodel.GeoSignal{Score: q.After.Score, SignalKey: q.After.SignalKey, GeoID: q.After.GeoID}
	}
	// The state's active keys (among q.SignalKeys when given): the
	// catalog is small, rows are many.
	var streams []geoStream
	s.catalog.each(func(_ string, _ int64, c readmodel.CatalogEntry) {
		if c.State != q.State || c.Status != readmodel.CatalogActive || len(q.SignalKeys) > 0 && !slices.Contains(q.SignalKeys, c.SignalKey) {
			return
		}
		for _, typ := range readmodel.GeoTypes {
			if q.GeoType != "" && typ != q.GeoType {
				continue
			}
			if t := s.signals.geoRows[geoRowsKey{state: q.State, key: c.SignalKey, typ: typ}]; t != nil {
				streams = append(streams, geoStream{iter: t.Iter()})
			}
		}
	})
	accept := func(g *readmodel.GeoSignal) (take, more bool) {
		if after != nil && !geoSignalLess(after, g) {
			return false, true
		}
		if q.MinScore != nil && g.Score < *q.MinScore {
			return false, false // scores only fall from here
		}
		return q.Decision == "" || g.Decision == q.Decision, true
	}
	m := mergeHeap[*geoStream]{less: geoStreamLess}
	for i := range streams {
		st := &streams[i]
		ok := st.iter.First()
		if after != nil {
			ok = st.iter.Seek(after)
		}
		if st.next(ok, accept) {
			m.push(st)
		}
	}
	hits := make([]*readmodel.GeoSignal, 0, q.Limit+1)
	for len(m.h) > 0 && len(hits) <= q.Limit {
		st := m.h[0]
		hits = append(hits, st.cur)
		if st.next(st.iter.Next(), accept) {
			m.fix()
		} else {
			m.pop()
		}
	}
	for i := range streams {
		streams[i].iter.Release()
	}
	if len(hits) > q.Limit {
		hits = hits[:q.Limit]
		last := hits[len(hits)-1]
		page.Next = &readmodel.GeoSignalKey{Score: last.Score, SignalKey: last.SignalKey, GeoID: last.GeoID}
	}
	page.Signals = cloneGeoSignals(hits)
	return page, nil
}

// geoStreamLess orders geo streams by their current rows (geoSignalLess).
func geoStreamLess(a, b *geoStream) bool { return geoSignalLess(a.cur, b.cur) }

// geoStream is one tree's rows of a geo signal page.
type geoStream struct {
	iter btree.IterG[*readmodel.GeoSignal]
	cur  *readmodel.GeoSignal
}

// next moves to the first accepted row from the iterator's position (ok:
// it has one); false at the stream's end.
func (st *geoStream) next(ok bool, accept func(*readmodel.GeoSignal) (bool, bool)) bool {
	for ; ok; ok = st.iter.Next() {
		take, more := accept(st.iter.Item())
		if take {
			st.cur = st.iter.Item()
			return true
		}
		if !more {
			return false
		}
	}
	return false
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

// anchorOf is the location a leads read is anchored at: invalid (the
// query's Validate, checked first) or ErrNotFound when geo is unknown.
func (s *side) anchorOf(invalid error, geo readmodel.GeoRef) (readmodel.Location, error) {
	if invalid != nil {
		return readmodel.Location{}, invalid
	}
	anchor, ok := s.locations.get(geo.ID())
	if !ok {
		return readmodel.Location{}, readmodel.ErrNotFound
	}
	return anchor, nil
}

// PermitLeads implements readmodel.Reader.
func (s *side) PermitLeads(ctx context.Context, q readmodel.LeadQuery) (readmodel.LeadPage, error) {
	anchor, err := s.anchorOf(q.Validate(), q.Filter.Geo)
	if err != nil {
		return readmodel.LeadPage{}, err
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
	page.Leads = cloneLeadRecs(recs)
	return page, nil
}

// PermitStats implements readmodel.Reader.
func (s *side) PermitStats(ctx context.Context, q readmodel.StatsQuery) (readmodel.PermitStats, error) {
	anchor, err := s.anchorOf(q.Validate(), q.Filter.Geo)
	if err != nil {
		return readmodel.PermitStats{}, err
	}
	st, err := s.signals.leads.stats(q, s.names)
	st.GeoType = anchor.GeoType
	return st, err
}
