package memory

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/permitd/permitd/readmodel"
)

// Lead indexes. Every lead is anchored to a handful of geographies
// (jurisdiction, city, zip, county, state). For each anchor and signal key
// the store keeps
//
//   - two B+ trees of the (immutable) lead records' items (lead_tree.go),
//     one in event-date order and one in confidence order, so a page is a
//     descent plus a short walk from the cursor, merged across the
//     requested keys;
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
	// slot is the record's place in its index's recs (leadIndex.place),
	// which its tree items name; 0 for a seek key's record, never placed.
	slot uint32
}

// dateLess orders by event date descending (null last), confidence
// descending (null last), lead id ascending.
func dateLess(a, b *leadRec) bool {
	if c := dateOrder(a.date, a.hasConf, a.conf, b.date, b.hasConf, b.conf); c != 0 {
		return c < 0
	}
	return a.lead.LeadID < b.lead.LeadID
}

// confLess orders by confidence descending (null last), event date
// descending (null last), lead id ascending.
func confLess(a, b *leadRec) bool {
	if c := confOrder(a.date, a.hasConf, a.conf, b.date, b.hasConf, b.conf); c != 0 {
		return c < 0
	}
	return a.lead.LeadID < b.lead.LeadID
}

// dateOrder is dateLess before the ids: -1 when the first lead sorts
// first, 1 when the second does, 0 when they tie.
func dateOrder(ad int32, ah bool, ac float64, bd int32, bh bool, bc float64) int {
	if ad != bd {
		return cmpDesc(ad, bd)
	}
	return confFirst(ah, ac, bh, bc)
}

// confOrder is confLess before the ids.
func confOrder(ad int32, ah bool, ac float64, bd int32, bh bool, bc float64) int {
	if c := confFirst(ah, ac, bh, bc); c != 0 {
		return c
	}
	return cmpDesc(ad, bd)
}

// confFirst orders confidences descending, null last.
func confFirst(ah bool, ac float64, bh bool, bc float64) int {
	switch {
	case ah != bh:
		if ah {
			return -1
		}
		return 1
	case ac != bc:
		if ac > bc {
			return -1
		}
		return 1
	}
	return 0
}

// cmpDesc orders a and b descending.
func cmpDesc(a, b int32) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// leadItem is a lead record as its two B-trees hold it: its sort fields
// inline beside the record, so a descent into a large tree compares
// items it already holds instead of loading a record per step (a cache
// miss each, in a state's tree of a million leads). Confidences have two
// decimals, so days and confidences tie often; the lead id's abbreviation
// settles most ties: ids are mostly "lead_" and 24 hex digits
// (events.LeadID), and abbr is the big-endian number of the 8 bytes after
// that prefix (lp), or of the id's first 8 bytes when it has none,
// zero-padded. Two items of the same lp whose abbr differ are in the
// order of their abbr; otherwise the ids themselves are compared
// (leadIndex.idCmp).
//
// An item names its record by slot, an index into its leadIndex's recs,
// not by pointer: the trees' nodes then hold no pointer, so the
// collector does not trace them and a node's shift on insert needs no
// write barriers (the live path writes every lead into about ten trees
// per side). A seek key's record is never placed (slot 0): its item
// sorts before every item it ties with on everything but the id, so a
// seek lands on the first of them and the stream's accept skips those
// not after the cursor (lead_streams.go). Two items tie on all but the
// id when they share day, confidence and abbreviation: for ids of
// events.LeadID's form (hashes) only the cursor's own item, nearly
// always.
type leadItem struct {
	date    int32
	slot    uint32
	conf    float64
	abbr    uint64
	hasConf bool
	lp      bool
}

// leadIDPrefix is the prefix of events.LeadID's ids, which abbr skips.
const leadIDPrefix = "lead_"

// itemOf is r's tree item.
func itemOf(r *leadRec) leadItem {
	id := r.lead.LeadID
	it := leadItem{date: r.date, hasConf: r.hasConf, conf: r.conf, slot: r.slot}
	if strings.HasPrefix(id, leadIDPrefix) {
		it.lp, id = true, id[len(leadIDPrefix):]
	}
	var b [8]byte
	copy(b[:], id)
	it.abbr = binary.BigEndian.Uint64(b[:])
	return it
}

// seekItem is r's item as a seek key: before every item it ties with
// but for the id.
func seekItem(r *leadRec) leadItem {
	it := itemOf(r)
	it.slot = 0
	return it
}

// idCmp orders a and b by lead id, through their abbreviations when
// those decide; a seek key's item (slot 0) comes before every other it
// reaches here with.
func (x *leadIndex) idCmp(a, b leadItem) int {
	if a.lp == b.lp && a.abbr != b.abbr {
		return cmp.Compare(a.abbr, b.abbr)
	}
	switch {
	case a.slot == b.slot:
		return 0
	case a.slot == 0:
		return -1
	case b.slot == 0:
		return 1
	}
	return strings.Compare(x.recs[a.slot].lead.LeadID, x.recs[b.slot].lead.LeadID)
}

// itemDateCmp and itemConfCmp order items as dateLess and confLess order
// their records (a seek key's item before those it ties with).
func (x *leadIndex) itemDateCmp(a, b leadItem) int {
	if c := dateOrder(a.date, a.hasConf, a.conf, b.date, b.hasConf, b.conf); c != 0 {
		return c
	}
	return x.idCmp(a, b)
}

func (x *leadIndex) itemConfCmp(a, b leadItem) int {
	if c := confOrder(a.date, a.hasConf, a.conf, b.date, b.hasConf, b.conf); c != 0 {
		return c
	}
	return x.idCmp(a, b)
}

// rec is the record it names (not a seek key's).
func (x *leadIndex) rec(it leadItem) *leadRec { return x.recs[it.slot] }

// afterInDate and afterInConf report whether the lead of item it comes
// after the cursor c (whose item is ci) in dateLess's and confLess's
// orders: from the items' fields, reading it's record only when the two
// tie on all of them.
func (x *leadIndex) afterInDate(c *leadRec, ci, it leadItem) bool {
	if k := dateOrder(ci.date, ci.hasConf, ci.conf, it.date, it.hasConf, it.conf); k != 0 {
		return k < 0
	}
	return x.idAfter(c, ci, it)
}

func (x *leadIndex) afterInConf(c *leadRec, ci, it leadItem) bool {
	if k := confOrder(ci.date, ci.hasConf, ci.conf, it.date, it.hasConf, it.conf); k != 0 {
		return k < 0
	}
	return x.idAfter(c, ci, it)
}

// idAfter reports whether it's lead id comes after c's (ci its item).
func (x *leadIndex) idAfter(c *leadRec, ci, it leadItem) bool {
	if ci.lp == it.lp && ci.abbr != it.abbr {
		return ci.abbr < it.abbr
	}
	return c.lead.LeadID < x.recs[it.slot].lead.LeadID
}

// keyLeads is one anchor's leads of one signal key.
type keyLeads struct {
	key    string
	x      *leadIndex // whose recs the items name
	byDate *leadTree  // nil until built (makeBuilt); lead_tree.go
	byConf *leadTree
	days   leadDayAggs
	// pend holds the slots of the records added while the key is not
	// built (built false), in the order added; the key's first reader,
	// or the first remove from it, sorts them into the trees and the day
	// cells once (lead_bulk.go). Slots, not pointers: the collector has
	// nothing to trace in the keys nobody reads. A pending record is
	// never dropped (a remove builds its keys first).
	pend []uint32
	// built: the trees and day cells hold the key's records, and writes
	// go to them. Set under once (or at creation), by a reader or by the
	// side's writer with no reader on the side; atomic, as the second
	// side's build reads it on the readers' side (buildLike).
	built atomic.Bool
	once  sync.Once
}

func (x *leadIndex) newKeyLeads(key string) *keyLeads {
	k := fromBlock(&x.spareKeys, keyBlockMin, keyBlockMax, len(x.anchors))
	k.key, k.x = key, x
	if x.eager && !x.deferTrees {
		k.makeBuilt()
	}
	return k
}

// Keys are allocated in blocks that grow with the index's anchors, from
// keyBlockMin to keyBlockMax keys (312 bytes each): a key is never
// freed (its anchor keeps it, empty, when its last lead leaves), so a
// block holds nothing that would have gone. BenchmarkHandleMix: 11.18
// allocations an event with a key allocated alone, 10.97 from blocks.
const (
	keyBlockMin = 8
	keyBlockMax = 128
)

// makeBuilt gives k, new or being built, its trees and marks it built.
// A key is made without trees, which are read and written only once it
// is built: most keys are never read in a replay, and making two empty
// trees for each took BenchmarkHandleMix from 11.93 allocations an
// event to 12.35 (HandleMixLive 21.60 to 22.58).
func (k *keyLeads) makeBuilt() {
	k.makeTrees()
	k.built.Store(true)
}

// makeTrees gives k its two trees, empty.
func (k *keyLeads) makeTrees() {
	k.byDate = newLeadTree(k.x, false)
	k.byConf = newLeadTree(k.x, true)
}

// anchorKeysFirst is the room an anchor's first key lists have: most
// anchors hold a few keys, and lists grown from one took four
// allocations each for eight (BenchmarkHandleMix: 10.97 allocations an
// event from one, 10.86 from 4, 10.79 from 8, at the same bytes).
const anchorKeysFirst = 8

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
	// recs counts the records in the anchor's keys; eager: the anchor
	// reached leadBuildMin of them on a side being read, and its keys are
	// built, a new one as it is made (lead_bulk.go). The writer's, and a
	// second side's build before settle.
	recs  int
	eager bool
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
// creating them in x (the side's writer).
func (a *anchorLeads) put(x *leadIndex, key string, id uint32) *keyLeads {
	if i := slices.Index(a.ids, id); i >= 0 {
		return a.keys[i]
	}
	i, _ := a.search(key)
	k := x.newKeyLeads(key)
	if a.eager && !k.built.Load() {
		k.makeBuilt()
	}
	if a.keys == nil {
		a.keys, a.ids = make([]*keyLeads, 0, anchorKeysFirst), make([]uint32, 0, anchorKeysFirst)
	}
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
	// Import's) writes its leads one by one, not in lanes (lead_lanes.go):
	// every key is new there, so not built, and a write appends to pend
	// (lead_bulk.go). readersBuild ends it.
	deferTrees bool
	// eager: keys are built from the start (tests: the structures a
	// write makes one lead at a time, to compare the built ones with).
	eager bool
	// recs holds each record by its slot (recs[0] is nil: the seek keys'
	// slot), free the records dropped (drop), emptied, each keeping its
	// slot, for reuse.
	recs []*leadRec
	free []*leadRec
	// spare records, allocated together and taken one at a time (newRec).
	spare []leadRec
	// spareKeys: the same for keys (newKeyLeads).
	spareKeys []keyLeads
	// near finds an anchor by the address of its geo_id's bytes before
	// the map is asked (anchor), as symCache does for symbols: a lead's
	// geo_ids are the indexer's location table's strings, one list per
	// anchor geography (indexer/project_signals.go), so most are seen
	// before at the same address. Made once the index holds cacheFrom
	// anchors; the writer's only. An anchor is never taken out of
	// anchors, so a slot never names one that is gone.
	near *anchorCache
}

// anchorCache is leadIndex.near: a slot keeps its geo_id, so the address
// is not reused for other bytes while the slot holds it.
type anchorCache [anchorCacheSlots]struct {
	g string
	a *anchorLeads
}

const anchorCacheBits = 15
const anchorCacheSlots = 1 << anchorCacheBits

// anchor returns g's structures, nil when it has none (the writer's).
func (x *leadIndex) anchor(g string) *anchorLeads {
	if x.near == nil {
		if len(x.anchors) < cacheFrom {
			return x.anchors[g]
		}
		x.near = new(anchorCache)
	}
	slot := &x.near[(strAddr(g)*0x9e3779b97f4a7c15)>>(64-anchorCacheBits)]
	if sameStr(slot.g, g) {
		return slot.a
	}
	a := x.anchors[g]
	if a != nil {
		slot.g, slot.a = g, a
	}
	return a
}

func newLeadIndex() *leadIndex {
	x := &leadIndex{anchors: map[string]*anchorLeads{}, names: newSymbols(), recs: []*leadRec{nil}}
	// The names are the indexer's strings too (its normalised names and
	// signal keys): found by address once many (symbols.id).
	x.names.cached = true
	return x
}

// placed returns an empty record in a slot of recs: a dropped one in
// its slot, or a new one in a new slot.
func (x *leadIndex) placed() *leadRec {
	var r *leadRec
	if n := len(x.free); n > 0 {
		r, x.free = x.free[n-1], x.free[:n-1]
	} else {
		r = x.newRec()
		r.slot = uint32(len(x.recs))
		x.recs = append(x.recs, nil)
	}
	x.recs[r.slot] = r
	return r
}

// drop frees r, a record remove took out of every structure and the
// side's lead table let go (nothing else holds it: the side's readers
// copy the documents they answer with), and its slot: r is emptied,
// keeping its slot, so that it holds no document while it waits for the
// next new lead.
func (x *leadIndex) drop(r *leadRec) {
	x.recs[r.slot] = nil
	*r = leadRec{slot: r.slot}
	x.free = append(x.free, r)
}

// add indexes l and returns its record: reuse (a record remove just took
// out of every structure of this side, or nil for a new one).
func (x *leadIndex) add(l readmodel.Lead, reuse *leadRec) *leadRec {
	r := x.record(l, reuse)
	it := itemOf(r)
	x.eachKey(r, true, func(a *anchorLeads, k *keyLeads) {
		if x.appendPending(a, k, r) { // the day cells too (lead_days_bulk.go)
			return
		}
		k.addTrees(it)
		k.days.add(r, 1)
	})
	return r
}

// Records are allocated in blocks that grow with the index, from
// recBlockMin to recBlockMax records (336 bytes each): a new lead
// cost an allocation of its own, 0.37 of an ingested event's 11.77 in
// BenchmarkHandleMix. A record is reused when its lead moves (remove,
// then add), and a dropped one (a deleted lead's) by the next new lead,
// so a block's records are never garbage.
const (
	recBlockMin = 8
	recBlockMax = 256
)

// newRec takes a zero record from the spare block.
func (x *leadIndex) newRec() *leadRec {
	return fromBlock(&x.spare, recBlockMin, recBlockMax, len(x.recs))
}

// record fills reuse (or a new record, placed) with l's indexed fields.
func (x *leadIndex) record(l readmodel.Lead, reuse *leadRec) *leadRec {
	r := reuse
	if r == nil {
		r = x.placed()
	}
	*r = leadRec{
		lead:   l,
		date:   parseDay(l.EventDateUsed),
		city:   x.names.id(l.Location.CityNorm),
		zip:    x.names.id(l.Location.ZipcodeNorm),
		county: x.names.id(l.Location.CountyNorm),
		slot:   r.slot,
	}
	if l.Confidence != nil {
		r.hasConf, r.conf = true, *l.Confidence
	}
	return r
}

// eachKey calls fn with each of r's anchors and the structures of r's
// signal key there, counting a write in each anchor, and its records:
// with create (an add), making those that do not exist yet; without (a
// remove), skipping them.
func (x *leadIndex) eachKey(r *leadRec, create bool, fn func(a *anchorLeads, k *keyLeads)) {
	var key uint32
	if create {
		key = x.names.id(r.lead.SignalKey)
	}
	for _, g := range r.lead.GeoIDs {
		a := x.anchor(g)
		if a == nil {
			if !create {
				continue
			}
			a = &anchorLeads{}
			x.anchors[g] = a
		}
		a.version++
		var k *keyLeads
		if create {
			k = a.put(x, r.lead.SignalKey, key)
			a.recs++
		} else if k = a.get(r.lead.SignalKey); k == nil {
			continue
		} else {
			a.recs--
		}
		fn(a, k)
	}
}

// addTrees and removeTrees put a lead's item in k's two trees and take
// it out.
func (k *keyLeads) addTrees(it leadItem) {
	k.byDate.Set(it)
	k.byConf.Set(it)
}

func (k *keyLeads) removeTrees(it leadItem) {
	k.byDate.Delete(it)
	k.byConf.Delete(it)
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
		if a := x.anchor(g); a != nil {
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
	it := itemOf(r)
	x.eachKey(r, false, func(_ *anchorLeads, k *keyLeads) {
		k.build() // r may be pending (lead_bulk.go)
		k.removeTrees(it)
		k.days.add(r, -1)
	})
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

// passes reports whether the lead of item it is in the leadWindow and
// meets the confidence floor.
func (w leadWindow) passes(it leadItem) bool {
	if it.date == noDate {
		if w.bounded {
			return false
		}
	} else if it.date < w.lo || it.date > w.hi {
		return false
	}
	if w.minConf != nil && (!it.hasConf || it.conf < *w.minConf) {
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
		for _, k := range a.keys {
			k.ready()
		}
		return a.keys
	}
	var out []*keyLeads
	for _, k := range keys {
		if kl := a.get(k); kl != nil && !slices.Contains(out, kl) {
			kl.ready()
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
