package memory

import (
	"fmt"
	"math"
	"slices"

	"github.com/permitd/permitd/readmodel"
	"github.com/tidwall/btree"
)

// Lead indexes. Every lead is anchored to a handful of geographies
// (jurisdiction, city, zip, county, state). For each anchor and signal key
// the store keeps
//
//   - two B-trees of the (immutable) lead records, one in event-date order
//     and one in confidence order, so a page is a descent plus a short walk
//     from the cursor, merged across the requested keys;
//   - exact per-day aggregates (count, confidence buckets, and from
//     sparseMin leads a cell's sparseCounts counts per county, city and
//     zip), kept in step with every upsert and delete,
//     so stats over a date leadWindow add up a few hundred cells instead of
//     visiting every lead;
//   - in each day cell, the cell's leads as inline stats fields (cellRecs:
//     confidence, interned city, zip and county, no pointers) in confidence
//     order, so a confidence floor keeps a prefix of every cell. Stats
//     (lead_stats.go) read only cells, never the trees.
//
// A lead record's position never changes once indexed: an upsert that
// moves the lead removes the old record from every structure (its fields
// still name its position) and inserts a new one; an upsert that leaves
// every position as it was (same anchors, key, date, confidence, city,
// zip and county) only swaps the record's document (replace).
//
// The side's lead table keeps each lead's record, so a document is held
// once per side.

// leadRec is one indexed lead.
type leadRec struct {
	lead    readmodel.Lead
	date    int32 // days since 1970-01-01; noDate for null
	hasConf bool
	conf    float64
	// Interned *_norm values; 0 when empty.
	city, zip, county uint32
}

// dateLess orders by event date descending (null last), confidence
// descending (null last), lead id ascending.
func dateLess(a, b *leadRec) bool {
	if a.date != b.date {
		return a.date > b.date
	}
	if a.hasConf != b.hasConf {
		return a.hasConf
	}
	if a.conf != b.conf {
		return a.conf > b.conf
	}
	return a.lead.LeadID < b.lead.LeadID
}

// confLess orders by confidence descending (null last), event date
// descending (null last), lead id ascending.
func confLess(a, b *leadRec) bool {
	if a.hasConf != b.hasConf {
		return a.hasConf
	}
	if a.conf != b.conf {
		return a.conf > b.conf
	}
	if a.date != b.date {
		return a.date > b.date
	}
	return a.lead.LeadID < b.lead.LeadID
}

// keyLeads is one anchor's leads of one signal key.
type keyLeads struct {
	key    string
	byDate *btree.BTreeG[*leadRec]
	byConf *btree.BTreeG[*leadRec]
	days   leadDayAggs
	// The trees' write hints (the writer's only): leads tend to arrive
	// near the last one written.
	dateHint, confHint btree.PathHint
	// pend holds the records added while the index defers its trees
	// (leadIndex.deferTrees), in the order added; buildTrees sorts them
	// into the trees.
	pend []*leadRec
}

func newKeyLeads(key string) *keyLeads {
	opts := btree.Options{NoLocks: true, Degree: 32}
	return &keyLeads{
		key:    key,
		byDate: btree.NewBTreeGOptions(dateLess, opts),
		byConf: btree.NewBTreeGOptions(confLess, opts),
	}
}

// anchorLeads is every lead of one anchor geography, by signal key.
type anchorLeads struct {
	keys []*keyLeads // sorted by key
	// ids are the keys' interned strings (leadIndex.names), aligned with
	// keys: the writer finds a lead's key among an anchor's few dozen by
	// a scan of integers (put) instead of a search comparing strings,
	// once per anchor of every lead written.
	ids []uint32
	// version counts the lead writes that touched this anchor; the stats
	// cache keys on it (statscache.go).
	version uint64
}

// search returns the position of key in keys and whether it is there.
func (a *anchorLeads) search(key string) (int, bool) {
	i, j := 0, len(a.keys)
	for i < j {
		h := int(uint(i+j) >> 1)
		if a.keys[h].key < key {
			i = h + 1
		} else {
			j = h
		}
	}
	return i, i < len(a.keys) && a.keys[i].key == key
}

// get returns the anchor's structures for key, nil when it has none.
func (a *anchorLeads) get(key string) *keyLeads {
	if i, ok := a.search(key); ok {
		return a.keys[i]
	}
	return nil
}

// put returns the anchor's structures for key, whose interned id is id,
// creating them (the side's writer).
func (a *anchorLeads) put(key string, id uint32) *keyLeads {
	if i := slices.Index(a.ids, id); i >= 0 {
		return a.keys[i]
	}
	i, _ := a.search(key)
	k := newKeyLeads(key)
	a.keys = slices.Insert(a.keys, i, k)
	a.ids = slices.Insert(a.ids, i, id)
	return k
}

// leadIndex holds the per-anchor structures. The records themselves are
// kept by the side's lead table (putLead), which hands them back to
// replace and remove: one map by lead id per side, not two.
type leadIndex struct {
	anchors map[string]*anchorLeads
	names   *symbols // interned *_norm values and signal keys
	// deferTrees: a side written before anyone reads it (a replay's, an
	// Import's) appends each record to its keys' pend instead of
	// inserting it into their two trees; buildTrees ends it (lead_bulk.go).
	deferTrees bool
}

func newLeadIndex() *leadIndex {
	return &leadIndex{anchors: map[string]*anchorLeads{}, names: newSymbols()}
}

// add indexes l and returns its record: reuse (a record remove just took
// out of every structure of this side, or nil for a new one).
func (x *leadIndex) add(l readmodel.Lead, reuse *leadRec) *leadRec {
	r := reuse
	if r == nil {
		r = &leadRec{}
	}
	*r = leadRec{
		lead:   l,
		date:   parseDay(l.EventDateUsed),
		city:   x.names.id(l.Location.CityNorm),
		zip:    x.names.id(l.Location.ZipcodeNorm),
		county: x.names.id(l.Location.CountyNorm),
	}
	if l.Confidence != nil {
		r.hasConf, r.conf = true, *l.Confidence
	}
	key := x.names.id(l.SignalKey)
	for _, g := range l.GeoIDs {
		a := x.anchors[g]
		if a == nil {
			a = &anchorLeads{}
			x.anchors[g] = a
		}
		a.version++
		k := a.put(l.SignalKey, key)
		if x.deferTrees {
			k.pend = append(k.pend, r)
		} else {
			k.byDate.SetHint(r, &k.dateHint)
			k.byConf.SetHint(r, &k.confHint)
		}
		k.days.add(r, 1)
	}
	return r
}

// replace re-indexes l in place of r, its stored record (the side's lead
// table's), when l's record would sit exactly where
// the stored one does: same anchors and key, and the same date,
// confidence and interned city, zip and county (so the same tree
// positions, day cell entries and roll-up counts). Only the record's
// document changes; the anchors' versions still move (the stats cache).
// It reports false, changing nothing, when l needs a full re-index.
// Readers never see this side while its writer runs (store.go), so the
// record may change in place.
func (x *leadIndex) replace(r *leadRec, l readmodel.Lead) bool {
	if r.lead.SignalKey != l.SignalKey || !slices.Equal(r.lead.GeoIDs, l.GeoIDs) {
		return false
	}
	hasConf, conf := l.Confidence != nil, 0.0
	if hasConf {
		conf = *l.Confidence
	}
	if r.hasConf != hasConf || math.Float64bits(r.conf) != math.Float64bits(conf) ||
		r.date != parseDay(l.EventDateUsed) ||
		!x.names.is(r.city, l.Location.CityNorm) ||
		!x.names.is(r.zip, l.Location.ZipcodeNorm) ||
		!x.names.is(r.county, l.Location.CountyNorm) {
		return false
	}
	r.lead = l
	for _, g := range l.GeoIDs {
		if a := x.anchors[g]; a != nil {
			a.version++
		}
	}
	return true
}

// remove takes the lead of record r (the side's lead table's) out of
// every structure and returns r, which nothing of this side then holds
// once the table lets it go: a move
// (putLead) re-indexes the lead in it instead of allocating another, so a
// writer moving leads makes no garbage of records.
func (x *leadIndex) remove(r *leadRec) *leadRec {
	x.buildTrees() // r may be pending (lead_bulk.go)
	for _, g := range r.lead.GeoIDs {
		a := x.anchors[g]
		if a == nil {
			continue
		}
		a.version++
		k := a.get(r.lead.SignalKey)
		if k == nil {
			continue
		}
		k.byDate.DeleteHint(r, &k.dateHint)
		k.byConf.DeleteHint(r, &k.confHint)
		k.days.add(r, -1)
	}
	return r
}

// anchorVersion is the number of lead writes that touched geoID.
func (x *leadIndex) anchorVersion(geoID string) uint64 {
	if a := x.anchors[geoID]; a != nil {
		return a.version
	}
	return 0
}

// leadWindow is a LeadFilter's effective date bounds in day numbers.
type leadWindow struct {
	lo, hi  int32 // inclusive; lo = noDate+1 and hi = MaxInt32 when open
	bounded bool  // a bound is set: null dates are excluded
	minConf *float64
}

func leadWindowOf(f readmodel.LeadFilter) (leadWindow, error) {
	w := leadWindow{lo: noDate + 1, hi: math.MaxInt32, minConf: f.MinConfidence}
	for _, b := range []struct {
		s  string
		lo bool
	}{{f.FromDate, true}, {f.FreshSince, true}, {f.ToDate, false}} {
		if b.s == "" {
			continue
		}
		d := parseDay(b.s)
		if d == noDate {
			return w, fmt.Errorf("%w: date %q is not YYYY-MM-DD", readmodel.ErrInvalidQuery, b.s)
		}
		w.bounded = true
		if b.lo {
			w.lo = max(w.lo, d)
		} else {
			w.hi = min(w.hi, d)
		}
	}
	return w, nil
}

// passes reports whether r is in the leadWindow and meets the confidence
// floor.
func (w leadWindow) passes(r *leadRec) bool {
	if r.date == noDate {
		if w.bounded {
			return false
		}
	} else if r.date < w.lo || r.date > w.hi {
		return false
	}
	if w.minConf != nil && (!r.hasConf || r.conf < *w.minConf) {
		return false
	}
	return true
}

// selected returns the anchor's key structures the filter asks for.
func (a *anchorLeads) selected(keys []string) []*keyLeads {
	if a == nil {
		return nil
	}
	if len(keys) == 0 {
		return a.keys
	}
	var out []*keyLeads
	for _, k := range keys {
		if kl := a.get(k); kl != nil && !slices.Contains(out, kl) {
			out = append(out, kl)
		}
	}
	return out
}

// page returns up to limit+1 leads after the cursor in the query's order:
// a k-way merge of one sorted stream per selected signal key, each
// starting at the cursor (or the window's edge), stopping once limit+1
// leads are out. Nothing is collected and then sorted.
func (x *leadIndex) page(q readmodel.LeadQuery) ([]*leadRec, error) {
	w, err := leadWindowOf(q.Filter)
	if err != nil {
		return nil, err
	}
	var pivot *leadRec
	if q.After != nil {
		pivot = &leadRec{date: parseDay(q.After.EventDate), hasConf: q.After.HasConfidence, conf: q.After.Confidence}
		pivot.lead.LeadID = q.After.LeadID
		if q.After.EventDate != "" && pivot.date == noDate {
			return nil, fmt.Errorf("%w: cursor date %q", readmodel.ErrInvalidQuery, q.After.EventDate)
		}
	}
	keys := x.anchors[q.Filter.Geo.ID()].selected(q.Filter.SignalKeys)
	want := q.Limit + 1
	m := mergeHeap[*leadStream]{less: streamDateLess}
	if q.Sort == readmodel.SortConfidenceDesc {
		m.less = streamConfLess
	}
	out := make([]*leadRec, 0, want)
	streams := make([]leadStream, len(keys))
	for i, k := range keys {
		st := &streams[i]
		if q.Sort == readmodel.SortConfidenceDesc {
			k.confStream(st, w, pivot, want)
		} else {
			k.dateStream(st, w, pivot)
		}
		if st.advance() {
			m.push(st)
		}
	}
	for len(m.h) > 0 && len(out) < want {
		st := m.h[0]
		out = append(out, st.cur)
		if st.advance() {
			m.fix()
		} else {
			m.pop()
		}
	}
	for i := range streams {
		streams[i].release()
	}
	return out, nil
}
