package memory_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// FuzzPermitWrites applies a sequence of permit and property writes the
// fuzzer chooses (new versions, stale and equal ones, moves between
// ZIPs, days, valuations and properties, re-links, deletes and writes
// after them) in batches it cuts, as a replay first or not, with the
// state moved into a new store through an Export and an Import where it
// says (a snapshot's load), and after every batch compares what the
// readers see with the version rule's reference state: each geo's pages
// in both date orders and in valuation order (filtered), its month
// stats, its count and latest date, each property's permit history, the
// counts and the digest. The store's thresholds (filter postings, text
// groups, dense postings) come from the input's first byte, so that
// small inputs cross them while they are written.
//
// An op is three bytes: what (put a permit linked or unlinked, write or
// delete a property, delete a permit, end the batch, end the replay or
// move the state), which permit (or property) and which version
// relative to its row's, and a seed for its fields.
func FuzzPermitWrites(f *testing.F) {
	for _, seed := range writeSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || len(in) > 1+3*400 {
			return // no settings; a long input only slows the fuzzer
		}
		cfg := in[0]
		defer memory.SetPostingMin([]int{0, 2, 5, 1 << 30}[cfg&3])()
		defer memory.SetGroupMin([]int{1, 3, 1 << 30}[int(cfg>>2&3)%3])()
		defer memory.SetDenseShare([]int{0, 2, 50}[int(cfg>>4&3)%3])()
		runWriteFuzz(t, cfg, in[1:], (*writeFuzz).permitOp)
	})
}

// FuzzLeadWrites is FuzzPermitWrites for leads: each anchor's pages in
// both orders and its stats after every batch. The roll-ups' and day
// cells' thresholds, and whether lead keys are built as they are made
// or by their first reader, come from the input's first byte.
func FuzzLeadWrites(f *testing.F) {
	for _, seed := range writeSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || len(in) > 1+3*400 {
			return
		}
		cfg := in[0]
		defer memory.SetRollMin([]int64{1, 4, 1 << 40}[int(cfg&3)%3])()
		defer memory.SetSparseMin([]int{1, 2, 1 << 30}[int(cfg>>2&3)%3])()
		defer memory.SetLeadBuildMin([]int{1, 3, 1 << 30}[int(cfg>>4&3)%3])()
		runWriteFuzz(t, cfg, in[1:], (*writeFuzz).leadOp)
	})
}

// FuzzSignalWrites is FuzzPermitWrites for geo signal rows and the
// catalog that says which keys are served: after every batch the state's
// search (filtered, paged), each geo's rows and the catalog's lists
// must be the reference's. Scores tie often, so that pages end and
// continue inside a tie.
func FuzzSignalWrites(f *testing.F) {
	for _, seed := range writeSeeds() {
		f.Add(seed)
	}
	rows := []byte{0}
	for k := range byte(3) {
		rows = append(rows, 4, k<<2, 0) // the three keys active
	}
	for i := range byte(40) {
		rows = append(rows, i%3, i*5, i*7)
		if i%8 == 7 {
			rows = append(rows, 3, i*3, 0, 6, 0, i)
		}
	}
	rows = append(rows, 4, 1<<2, 2, 6, 0, 0, 5, 2<<2, 3, 6, 0, 0) // k1 retired, k2's entry deleted
	f.Add(rows)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || len(in) > 1+3*400 {
			return
		}
		runWriteFuzz(t, in[0], in[1:], (*writeFuzz).signalOp)
	})
}

// writeSeeds are inputs for every target: a few writes, re-links and
// deletes in small batches, a replay ended and a state moved, a walk
// paged while the store is written and moved, and a long run that
// crosses the thresholds.
func writeSeeds() [][]byte {
	seeds := [][]byte{
		{0, 0, 1, 1, 1, 2, 2, 2, 3, 6, 0, 0},
		{1, 0, 81, 9, 0, 81, 7, 4, 1, 9, 6, 0, 0, 4, 1, 2, 0, 121, 5, 6, 0, 0, 5, 81, 3, 6, 0, 0},
		{0x82, 0, 41, 10, 1, 41, 11, 2, 41, 12, 3, 41, 13, 7, 0, 0, 0, 82, 20, 5, 1, 0, 6, 0, 0, 1, 83, 30, 7, 0, 2, 2, 83, 31, 6, 0, 0},
	}
	walk := []byte{0x01}
	for i := range 30 {
		walk = append(walk, byte(i%3), byte(i), byte(i*29))
		if i == 9 {
			walk = append(walk, 6, 0, 0x86) // a walk of city, ascending, pages of 1
		}
		if i == 19 {
			walk = append(walk, 7, 0, 0x11) // the state moved into a new store mid-walk
		}
		if i%5 == 4 {
			walk = append(walk, 5, byte(i), 0, 6, 0, byte(i))
		}
	}
	seeds = append(seeds, walk)
	long := []byte{0xc5}
	for i := range 96 {
		long = append(long, byte(i%6), byte(i*7), byte(i*13))
		if i%17 == 16 {
			long = append(long, 6+byte(i/17%2), 0, byte(i))
		}
	}
	return append(seeds, long)
}

// runWriteFuzz plays ops, three bytes each, on a new store (a replay
// first when cfg's top bit is set, its lead keys built as made when the
// one below is), then ends the last batch and any replay and checks.
func runWriteFuzz(t *testing.T, cfg byte, ops []byte, op func(w *writeFuzz, what, which, seed byte)) {
	w := newWriteFuzz(t, cfg&0x80 != 0, cfg&0x40 != 0)
	for i := 0; i+3 <= len(ops); i += 3 {
		op(w, ops[i], ops[i+1], ops[i+2])
	}
	w.endBatch(0)
	w.endReplay()
	w.check(7)
	for w.pwalk != nil || w.lwalk != nil {
		w.page()
	}
}

// writeFuzz is FuzzPermitWrites' and FuzzLeadWrites' store and
// reference.
type writeFuzz struct {
	t       *testing.T
	s       *memory.Store
	replay  bool
	eager   bool // the store builds lead keys as they are made
	b       readmodel.Batch
	permits *refTable[readmodel.Permit]
	props   *refTable[readmodel.Property]
	leads   *refTable[readmodel.Lead]
	signals *refTable[readmodel.GeoSignal]
	catalog *refTable[readmodel.CatalogEntry]
	checks  int
	pwalk   *openWalk[readmodel.Permit] // walks paged one page a batch
	lwalk   *openWalk[readmodel.Lead]
}

// refTable is a reference table of documents under readmodel.Writer's
// version rule; rows are live (doc) or tombstones.
type refTable[T any] struct {
	rows   map[string]refRow[T]
	linked func(T) bool
}

type refRow[T any] struct {
	version int64
	live    bool
	doc     T
}

func newRefTable[T any](linked func(T) bool) *refTable[T] {
	return &refTable[T]{rows: map[string]refRow[T]{}, linked: linked}
}

// next is a version for id relative to its row's (which picks: one
// before, the same, one or two after), at least 1.
func (r *refTable[T]) next(id string, which byte) int64 {
	if row, had := r.rows[id]; had {
		return max(1, row.version-1+int64(which/40%4))
	}
	return 1
}

// put writes doc at version v and reports whether it took: newer than
// the row, or a linked document over a live unlinked one of the same
// version (a re-link).
func (r *refTable[T]) put(id string, v int64, doc T) bool {
	row, had := r.rows[id]
	if had && !(v > row.version || v == row.version && row.live && !r.linked(row.doc) && r.linked(doc)) {
		return false
	}
	r.rows[id] = refRow[T]{version: v, live: true, doc: doc}
	return true
}

// del tombstones id at version v and reports whether it took: newer
// than the row, of the version of a live row (a tombstone outranks the
// documents of its version), or no row.
func (r *refTable[T]) del(id string, v int64) bool {
	if row, had := r.rows[id]; had && (v < row.version || v == row.version && !row.live) {
		return false
	}
	r.rows[id] = refRow[T]{version: v}
	return true
}

// live is the table's live documents.
func (r *refTable[T]) live() []T {
	var docs []T
	for _, row := range r.rows {
		if row.live {
			docs = append(docs, row.doc)
		}
	}
	return docs
}

func newWriteFuzz(t *testing.T, replay, eager bool) *writeFuzz {
	w := &writeFuzz{t: t, eager: eager, permits: newRefTable(readmodel.Permit.Linked), props: newRefTable(readmodel.Property.Linked), leads: newRefTable(readmodel.Lead.Linked),
		signals: newRefTable(func(readmodel.GeoSignal) bool { return true }), catalog: newRefTable(func(readmodel.CatalogEntry) bool { return true })}
	w.s = w.newStore()
	if replay {
		if !w.s.BeginReplay() {
			t.Fatal("a new store refused a replay")
		}
		w.replay = true
	}
	w.b.Locations = []readmodel.Location{
		{GeoID: zipA, GeoType: readmodel.GeoZip, Name: "98101", Version: 1},
		{GeoID: zipB, GeoType: readmodel.GeoZip, Name: "98104", Version: 1},
		{GeoID: city, GeoType: readmodel.GeoCity, Name: "Seattle", Version: 1},
		{GeoID: state, GeoType: readmodel.GeoState, Name: "Washington", Version: 1},
	}
	w.b.Locations = append(w.b.Locations, lrLocations()...) // the leads' anchors
	w.endBatch(0)
	return w
}

func (w *writeFuzz) newStore() *memory.Store {
	s := memory.New(memory.Params{}) // with the stats cache, whose answers the writes must retire
	if w.eager {
		s.BuildLeadKeysEagerly()
	}
	return s
}

var fuzzDays = []string{"", "2024-01-01", "2024-01-02", "2024-01-31", "2024-02-01", "2024-02-01",
	"2024-02-29", "2024-03-01", "2024-03-03", "2024-03-31", "2024-04-01", "2024-04-02", "2024-04-30",
	"2023-12-31", "2024-05-01", "2024-02-14"}

// permitOp is one op of FuzzPermitWrites.
func (w *writeFuzz) permitOp(what, which, seed byte) {
	id := fmt.Sprintf("test:%02d", which%40)
	v := w.permits.next(id, which)
	switch what % 8 {
	case 0, 1, 2:
		w.b.Permits = append(w.b.Permits, fuzzPermit(id, v, seed, true))
	case 3:
		w.propertyOp(which, seed)
	case 4:
		w.b.Permits = append(w.b.Permits, fuzzPermit(id, v, seed, false))
	case 5:
		w.b.Deletes = append(w.b.Deletes, readmodel.Delete{Kind: readmodel.KindPermit, ID: id, Version: v})
	default:
		w.cut(what, seed)
	}
}

// fuzzProps are the properties the fuzzed permits name (fuzzPermit).
var fuzzProps = []readmodel.Property{
	property("600 University Street", "Seattle", "WA", "98101", 1),
	property("1500 Pike Place", "Seattle", "WA", "98101", 1),
}

// propertyOp writes or deletes one of fuzzProps: deleted, put linked
// to its ZIP, city and state, or (unlinked) to its state only.
func (w *writeFuzz) propertyOp(which, seed byte) {
	p := fuzzProps[which%2]
	p.Version = w.props.next(p.PropertyID, which)
	switch seed % 4 {
	case 0:
		w.b.Deletes = append(w.b.Deletes, readmodel.Delete{Kind: readmodel.KindProperty, ID: p.PropertyID, Version: p.Version})
		return
	case 1:
		p.GeoLinks = []readmodel.GeoLink{{GeoID: state, GeoType: readmodel.GeoState, Confidence: 1, Method: "source_state"}}
	default:
		p.GeoLinks = permit("x", "", zipA, 1).GeoLinks
	}
	p.ParcelID = fmt.Sprint(seed) // a document of its own
	w.b.Properties = append(w.b.Properties, p)
}

// leadOp is one op of FuzzLeadWrites.
func (w *writeFuzz) leadOp(what, which, seed byte) {
	id := fmt.Sprintf("lead-%02d", which%40)
	v := w.leads.next(id, which)
	switch what % 8 {
	case 0, 1, 2, 3:
		w.b.Leads = append(w.b.Leads, fuzzLead(id, v, seed, true))
	case 4:
		w.b.Leads = append(w.b.Leads, fuzzLead(id, v, seed, false))
	case 5:
		w.b.Deletes = append(w.b.Deletes, readmodel.Delete{Kind: readmodel.KindLead, ID: id, Version: v})
	default:
		w.cut(what, seed)
	}
}

// fuzzSignalGeos are the geos the fuzzed signal rows are of.
var fuzzSignalGeos = []struct {
	id  string
	typ readmodel.GeoType
}{{zipA, readmodel.GeoZip}, {zipB, readmodel.GeoZip}, {city, readmodel.GeoCity}, {state, readmodel.GeoState}}

// signalOp is one op of FuzzSignalWrites: a geo signal row (which picks
// the geo and the key; seed its score and decision) or a catalog entry
// (seed its status), written or deleted.
func (w *writeFuzz) signalOp(what, which, seed byte) {
	key := fmt.Sprintf("k%d", which>>2%3)
	switch what % 8 {
	case 0, 1, 2:
		g := fuzzSignalGeos[which&3]
		row := readmodel.GeoSignal{GeoID: g.id, GeoType: g.typ, State: "WA", SignalKey: key, Value: []byte(`{}`),
			Score: float64(seed%5) / 4, Confidence: 0.5, Decision: []string{"positive", "neutral", "negative"}[seed/5%3]}
		row.Version = w.signals.next(row.ID(), seed)
		w.b.GeoSignals = append(w.b.GeoSignals, row)
	case 3:
		g := fuzzSignalGeos[which&3]
		id := readmodel.GeoSignal{GeoID: g.id, SignalKey: key}.ID()
		w.b.Deletes = append(w.b.Deletes, readmodel.Delete{Kind: readmodel.KindGeoSignal, ID: id, Version: w.signals.next(id, seed)})
	case 4:
		c := readmodel.CatalogEntry{State: "WA", SignalKey: key, Family: "geo", Status: []string{readmodel.CatalogActive, readmodel.CatalogActive, "retired"}[seed%3]}
		c.Version = w.catalog.next(c.ID(), seed)
		w.b.Catalog = append(w.b.Catalog, c)
	case 5:
		id := readmodel.CatalogEntry{State: "WA", SignalKey: key}.ID()
		w.b.Deletes = append(w.b.Deletes, readmodel.Delete{Kind: readmodel.KindCatalog, ID: id, Version: w.catalog.next(id, seed)})
	default:
		w.cut(what, seed)
	}
}

// cut ends the batch (6), and then the replay or, with none open,
// moves the state into a new store by an Import (7).
func (w *writeFuzz) cut(what, seed byte) {
	if seed&0x80 != 0 && w.pwalk == nil && w.lwalk == nil && !w.replay && what%8 == 6 {
		w.openWalks(seed)
	}
	switch what % 8 {
	case 6:
		w.endBatch(seed)
	case 7:
		w.endBatch(seed)
		if w.replay {
			w.endReplay()
		} else {
			w.reimport(seed)
		}
	}
}

// fuzzPermit is a permit of id at version v whose fields seed picks:
// linked to its ZIP, its city and its state, or (unlinked) to its
// state only while naming its ZIP.
func fuzzPermit(id string, v int64, seed byte, linked bool) readmodel.Permit {
	r := rand.New(rand.NewPCG(uint64(seed), 5))
	zip := zipA
	if r.IntN(3) == 0 {
		zip = zipB
	}
	p := permit(id[len("test:"):], fuzzDays[r.IntN(len(fuzzDays))], zip, v)
	p.PermitType = []string{"Building", "Demolition", "BUILDING", "Electrical", ""}[r.IntN(5)]
	p.WorkType = []string{"New", "Alteration", "addition", ""}[r.IntN(4)]
	p.Status = []string{"Issued", "Completed", "permit closed", "Expired", ""}[r.IntN(5)]
	p.Contractor = []string{"ACME Roofing, Inc.", "acme roofing inc", "Bob's Builders", "", "Zeta-Co"}[r.IntN(5)]
	p.RawDescription = descriptions[r.IntN(len(descriptions))]
	switch r.IntN(6) {
	case 0:
		p.Valuation = nil
	default:
		val := []float64{0, 500, 1000, 1000.5, 7500, 3e9, 250}[r.IntN(7)]
		p.Valuation = &val
	}
	if r.IntN(4) > 0 {
		lat, lon := 47.60+float64(r.IntN(50))/1000, -122.35+float64(r.IntN(50))/1000
		p.Lat, p.Lon = &lat, &lon
	}
	if !linked {
		p.GeoLinks = p.GeoLinks[2:] // the state's only
	}
	if n := r.IntN(4); n < len(fuzzProps) {
		p.PropertyID = fuzzProps[n].PropertyID
	}
	return p
}

var leadDays = []string{"", "2024-01-01", "2024-01-31", "2024-02-01", "2024-02-29", "2024-03-01",
	"2024-03-08", "2024-03-14", "2024-03-15", "2023-12-31", "2022-06-30", "2019-01-01"}

// fuzzLead is a lead of id at version v whose fields seed picks:
// anchored to the state and one of two cities, or (unlinked) to the
// state only. Its permit number is its version's, so that a rewrite of
// the same fields changes the document only (a rewrite in place).
func fuzzLead(id string, v int64, seed byte, linked bool) readmodel.Lead {
	r := rand.New(rand.NewPCG(uint64(seed), 6))
	l := readmodel.Lead{
		LeadID:        id,
		SignalKey:     fmt.Sprintf("k%d", r.IntN(4)),
		EventDateUsed: leadDays[r.IntN(len(leadDays))],
		PermitNumber:  fmt.Sprint("P", v),
		GeoIDs:        []string{lrState, []string{lrCityA, lrCityB}[r.IntN(2)]},
		Version:       v,
		Location: readmodel.LeadLocation{
			CityNorm: []string{"", "city 1", "city 2"}[r.IntN(3)], ZipcodeNorm: fmt.Sprint(98000 + r.IntN(3)),
			CountyNorm: []string{"king", "pierce"}[r.IntN(2)],
		},
	}
	if c := []float64{-1, 0, 0.25, 0.5, 0.74999, 0.75, 1}[r.IntN(7)]; c >= 0 {
		l.Confidence = &c
	}
	if !linked {
		l.GeoIDs = l.GeoIDs[:1]
	}
	return l
}

// endBatch applies the batch, plays it on the reference (the version
// rule of readmodel.Writer; a batch's deletes after its documents, as
// the memory backend applies them) and checks the readers' view.
func (w *writeFuzz) endBatch(seed byte) {
	b := w.b
	w.b = readmodel.Batch{}
	if b.Len() == 0 {
		return
	}
	res, err := w.s.Apply(context.Background(), b)
	if err != nil {
		w.t.Fatal(err)
	}
	var applied, stale int
	count := func(ok bool) {
		if ok {
			applied++
		} else {
			stale++
		}
	}
	count0 := len(b.Locations)
	for _, p := range b.Permits {
		ok := w.permits.put(p.PermitID, p.Version, p)
		w.pwalk.changed(p.PermitID, ok)
		count(ok)
	}
	for _, p := range b.Properties {
		count(w.props.put(p.PropertyID, p.Version, p))
	}
	for _, g := range b.GeoSignals {
		count(w.signals.put(g.ID(), g.Version, g))
	}
	for _, l := range b.Leads {
		ok := w.leads.put(l.LeadID, l.Version, l)
		w.lwalk.changed(l.LeadID, ok)
		count(ok)
	}
	for _, c := range b.Catalog {
		count(w.catalog.put(c.ID(), c.Version, c))
	}
	for _, d := range b.Deletes {
		switch d.Kind {
		case readmodel.KindGeoSignal:
			count(w.signals.del(d.ID, d.Version))
		case readmodel.KindCatalog:
			count(w.catalog.del(d.ID, d.Version))
		case readmodel.KindPermit:
			ok := w.permits.del(d.ID, d.Version)
			w.pwalk.changed(d.ID, ok)
			count(ok)
		case readmodel.KindProperty:
			count(w.props.del(d.ID, d.Version))
		default:
			ok := w.leads.del(d.ID, d.Version)
			w.lwalk.changed(d.ID, ok)
			count(ok)
		}
	}
	if res.Applied != applied+count0 || res.Stale != stale {
		w.t.Fatalf("batch of %d documents and %d deletes: applied %d stale %d, want %d and %d",
			b.Len()-len(b.Deletes), len(b.Deletes), res.Applied, res.Stale, applied+count0, stale)
	}
	if !w.replay {
		w.check(seed)
		w.page()
	}
}

func (w *writeFuzz) endReplay() {
	if w.replay {
		w.s.EndReplay()
		w.replay = false
		w.check(3)
	}
}

// reimport exports the store into a new one by an Import (as a
// snapshot's load does), which the writes that follow go to: its sides
// are built in bulk, lean, and the first writes that move a permit end
// their deferrals.
func (w *writeFuzz) reimport(seed byte) {
	ctx := context.Background()
	s := w.newStore()
	im := s.NewImport()
	if err := w.s.Export(ctx, 1+int(seed%16), im.Add); err != nil {
		w.t.Fatal(err)
	}
	if err := im.Commit(); err != nil {
		w.t.Fatal(err)
	}
	w.s = s
	w.check(seed)
}

// check compares the readers' view with the reference: the permits',
// the leads', and the counts and digest.
func (w *writeFuzz) check(seed byte) {
	t, ctx := w.t, context.Background()
	w.checks++
	r := rand.New(rand.NewPCG(uint64(seed), uint64(w.checks)))
	w.checkPermits(r)
	w.checkLeads(r)
	w.checkSignals(r)
	permits, props, leads := w.permits.live(), w.props.live(), w.leads.live()
	h, err := w.s.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[readmodel.Kind]int64{readmodel.KindPermit: int64(len(permits)), readmodel.KindProperty: int64(len(props)), readmodel.KindLead: int64(len(leads)),
		readmodel.KindGeoSignal: int64(len(w.signals.live())), readmodel.KindCatalog: int64(len(w.catalog.live()))}
	for k, n := range want {
		if h.Counts[k] != n {
			t.Fatalf("health counts %v, want %v", h.Counts, want)
		}
	}
	var d readmodel.Digest
	for _, g := range []string{zipA, zipB, city, state, lrState, lrCityA, lrCityB} {
		d.Add(readmodel.KindLocation, g, 1)
	}
	for _, p := range permits {
		d.Add(readmodel.KindPermit, p.PermitID, p.Version)
	}
	for _, p := range props {
		d.Add(readmodel.KindProperty, p.PropertyID, p.Version)
	}
	for _, l := range leads {
		d.Add(readmodel.KindLead, l.LeadID, l.Version)
	}
	for _, g := range w.signals.live() {
		d.Add(readmodel.KindGeoSignal, g.ID(), g.Version)
	}
	for _, c := range w.catalog.live() {
		d.Add(readmodel.KindCatalog, c.ID(), c.Version)
	}
	if got, err := w.s.Digest(ctx); err != nil || got != d.Sum() {
		t.Fatalf("digest %s (%v), want %s", got, err, d.Sum())
	}
}

// checkPermits compares each geo's permits with the reference: its
// count and latest date, its pages in both date orders (in a window or
// not), filtered in date and valuation order, and its month stats; and
// each property's permit history, count and latest date (not found
// while it is not live).
func (w *writeFuzz) checkPermits(r *rand.Rand) {
	t, ctx := w.t, context.Background()
	all := w.permits.live()
	for _, geo := range []string{zipA, zipB, city, state} {
		var ps []readmodel.Permit
		for _, p := range all {
			if _, ok := p.Link(geo); ok {
				ps = append(ps, p)
			}
		}
		loc, err := w.s.Location(ctx, readmodel.ParseGeoRef(geo))
		if err != nil {
			t.Fatal(err)
		}
		if loc.PermitCount != int64(len(ps)) || loc.LatestPermitDate != expectedLatest(ps) {
			t.Fatalf("%s: count %d latest %q, want %d %q", geo, loc.PermitCount, loc.LatestPermitDate, len(ps), expectedLatest(ps))
		}
		from, to := "", ""
		if r.IntN(3) == 0 {
			from, to = "2024-02-01", "2024-03-31"
		}
		for _, desc := range []bool{true, false} {
			got := walk(t, w.s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: desc, FromDate: from, ToDate: to, Limit: 1 + r.IntN(9)}, nil)
			if want := expected(ps, desc, from, to); !slices.Equal(got, want) {
				t.Fatalf("%s desc %v %s..%s: got %v, want %v", geo, desc, from, to, got, want)
			}
		}
		f := readmodel.PermitFilter{}
		if r.IntN(2) == 0 {
			f = randomPermitFilter(r)
		}
		var keep []readmodel.Permit
		for _, p := range ps {
			if f.Match(&p) {
				keep = append(keep, p)
			}
		}
		got := walk(t, w.s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: true, Limit: 1 + r.IntN(9), Filter: f}, nil)
		if want := expected(keep, true, "", ""); !slices.Equal(got, want) {
			t.Fatalf("%s filter %+v: got %v, want %v", geo, f, got, want)
		}
		got = walk(t, w.s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 1 + r.IntN(9), Filter: f, Sort: readmodel.SortValuationDesc}, nil)
		if want := byValuation(keep); !slices.Equal(got, want) {
			t.Fatalf("%s valuation order, filter %+v: got %v, want %v", geo, f, got, want)
		}
		w.checkMonthly(geo, f, keep)
	}
	for _, prop := range fuzzProps {
		id := prop.PropertyID
		row, ok := w.props.rows[id]
		loc, err := w.s.Location(ctx, readmodel.ParseGeoRef(id))
		if !ok || !row.live {
			if !errors.Is(err, readmodel.ErrNotFound) {
				t.Fatalf("property %s, not live: %v", id, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var ps []readmodel.Permit
		for _, p := range all {
			if p.PropertyID == id {
				ps = append(ps, p)
			}
		}
		if loc.PermitCount != int64(len(ps)) || loc.LatestPermitDate != expectedLatest(ps) || loc.Version != row.version {
			t.Fatalf("property %s: count %d latest %q version %d, want %d %q %d", id, loc.PermitCount, loc.LatestPermitDate, loc.Version, len(ps), expectedLatest(ps), row.version)
		}
		got := walk(t, w.s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(id), Desc: true, Limit: 1 + r.IntN(9)}, nil)
		if want := expected(ps, true, "", ""); !slices.Equal(got, want) {
			t.Fatalf("property %s: got %v, want %v", id, got, want)
		}
	}
}

// byValuation is the ids of ps in valuation order: descending, unknown
// last, permit_id ascending among equals.
func byValuation(ps []readmodel.Permit) []string {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, valuationCmp)
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.PermitID)
	}
	return ids
}

// checkMonthly compares geo's month stats over the fuzz's days with ps,
// the geo's permits that pass f.
func (w *writeFuzz) checkMonthly(geo string, f readmodel.PermitFilter, ps []readmodel.Permit) {
	from, to := "2023-12-01", "2024-05-31"
	got, err := w.s.PermitMonthly(context.Background(), readmodel.MonthlyQuery{Geo: readmodel.ParseGeoRef(geo), Filter: f, FromDate: from, ToDate: to})
	if err != nil {
		w.t.Fatal(err)
	}
	months := readmodel.MonthsOf(from, to)
	if len(got) != len(months) {
		w.t.Fatalf("%d buckets, want %d", len(got), len(months))
	}
	for i, m := range months {
		var n int64
		var vals []float64
		total := 0.0
		for _, p := range ps {
			if strings.HasPrefix(p.IssueDate, m) {
				n++
				if p.Valuation != nil {
					vals = append(vals, *p.Valuation)
					total += *p.Valuation
				}
			}
		}
		var median *float64
		if len(vals) > 0 {
			slices.Sort(vals)
			v := vals[len(vals)/2]
			if len(vals)%2 == 0 {
				v = (vals[len(vals)/2-1] + v) / 2
			}
			median = &v
		}
		b := got[i]
		if b.Month != m || b.Count != n || b.TotalValuation != total || (b.MedianValuation == nil) != (median == nil) ||
			median != nil && *b.MedianValuation != *median {
			w.t.Fatalf("%s filter %+v month %s: %+v (median %v), want count %d total %v median %v", geo, f, m, b, b.MedianValuation, n, total, median)
		}
	}
}

// checkLeads compares each anchor's lead pages, in both orders, and
// its stats with the brute force over the reference's leads, for a
// random filter.
func (w *writeFuzz) checkLeads(r *rand.Rand) {
	t, ctx := w.t, context.Background()
	all := w.leads.live()
	for _, geo := range []string{lrState, lrCityA, lrCityB} {
		f := readmodel.LeadFilter{}
		if r.IntN(3) > 0 {
			f = randomFilter(r)
		}
		f.Geo = readmodel.ParseGeoRef(geo)
		var sel []readmodel.Lead
		for _, l := range all {
			if keep(f, l) {
				sel = append(sel, l)
			}
		}
		for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
			if sort == readmodel.SortEventDateDesc {
				slices.SortFunc(sel, leadByDate)
			} else {
				slices.SortFunc(sel, leadByConf)
			}
			var want, got []string
			for _, l := range sel {
				want = append(want, l.LeadID+"/"+l.PermitNumber)
			}
			q := readmodel.LeadQuery{Filter: f, Sort: sort, Limit: 1 + r.IntN(9)}
			for range 1000 {
				page, err := w.s.PermitLeads(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range page.Leads {
					got = append(got, l.LeadID+"/"+l.PermitNumber)
				}
				if q.After = page.Next; q.After == nil {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s %s %+v: got %v, want %v", geo, sort, f, got, want)
			}
		}
		q := readmodel.StatsQuery{Filter: f, Today: "2024-03-15", TopN: []int{1, 3, -1}[r.IntN(3)]}
		got, err := w.s.PermitStats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteStats(all, q); !reflect.DeepEqual(want, normStats(got)) {
			t.Fatalf("%s stats %+v:\n got %+v\nwant %+v", geo, q, normStats(got), want)
		}
	}
}

// openWalk is a cursor walk (of a geo's permits, or an anchor's leads)
// that goes on while the store is written, one page after each batch
// (through a replay's end and a move into a new store too: a cursor
// names a place in the order, not a store). Its pages must keep the
// cursor contract (decisions.md): each continues strictly after the last
// item of the one before in the order, and every document present and
// unchanged for the whole walk is listed exactly once.
type openWalk[T any] struct {
	name   string
	next   func(s *memory.Store) (page []T, more bool) // the next page
	id     func(T) string
	cmp    func(a, b T) int
	stable map[string]bool // matched at the start, unchanged since
	last   *T
	seen   map[string]int
}

// openWalks starts the walks that seed picks: a geo's permits (the
// geo, the order, the page size) and an anchor's leads (the same bits).
func (w *writeFuzz) openWalks(seed byte) {
	geo := []string{zipA, zipB, city, state}[seed&3]
	limit := 1 + int(seed>>3&3)
	pq := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Desc: seed&4 != 0, Limit: limit}
	pw := &openWalk[readmodel.Permit]{name: fmt.Sprintf("%+v", pq), id: func(p readmodel.Permit) string { return p.PermitID }}
	if seed&0x40 != 0 {
		pq.Sort = readmodel.SortValuationDesc
		pw.cmp = valuationCmp
	} else {
		pw.cmp = func(a, b readmodel.Permit) int { return dateCmp(a, b, pq.Desc) }
	}
	pw.next = func(s *memory.Store) ([]readmodel.Permit, bool) {
		res, err := s.SearchPermits(context.Background(), pq)
		if err != nil {
			w.t.Fatal(err)
		}
		var out []readmodel.Permit
		for _, h := range res.Permits {
			out = append(out, h.Permit)
		}
		pq.After = res.Next
		return out, res.Next != nil
	}
	pw.start(w.permits.live(), func(p readmodel.Permit) bool { _, ok := p.Link(geo); return ok })
	w.pwalk = pw

	anchor := []string{lrState, lrCityA, lrCityB, lrState}[seed&3]
	lq := readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(anchor)}, Sort: readmodel.SortEventDateDesc, Limit: limit}
	lw := &openWalk[readmodel.Lead]{name: fmt.Sprintf("%+v", lq), id: func(l readmodel.Lead) string { return l.LeadID }, cmp: leadByDate}
	if seed&0x40 != 0 {
		lq.Sort, lw.cmp = readmodel.SortConfidenceDesc, leadByConf
	}
	lw.next = func(s *memory.Store) ([]readmodel.Lead, bool) {
		page, err := s.PermitLeads(context.Background(), lq)
		if err != nil {
			w.t.Fatal(err)
		}
		lq.After = page.Next
		return page.Leads, page.Next != nil
	}
	lw.start(w.leads.live(), func(l readmodel.Lead) bool { return slices.Contains(l.GeoIDs, anchor) })
	w.lwalk = lw
}

// start records the documents of all that the walk lists now.
func (ow *openWalk[T]) start(all []T, listed func(T) bool) {
	ow.stable, ow.seen = map[string]bool{}, map[string]int{}
	for _, d := range all {
		if listed(d) {
			ow.stable[ow.id(d)] = true
		}
	}
}

// changed takes id out of the walk's stable set when a write to it took.
func (ow *openWalk[T]) changed(id string, took bool) {
	if ow != nil && took {
		delete(ow.stable, id)
	}
}

// page reads the walk's next page and, after its last, checks it and
// reports true.
func (ow *openWalk[T]) page(t *testing.T, s *memory.Store) (done bool) {
	if ow == nil {
		return true
	}
	items, more := ow.next(s)
	for _, d := range items {
		if ow.last != nil && ow.cmp(*ow.last, d) >= 0 {
			t.Fatalf("walk %s: %s after %s, not past it in the order", ow.name, ow.id(d), ow.id(*ow.last))
		}
		ow.last = &d
		ow.seen[ow.id(d)]++
	}
	if more {
		return false
	}
	for id := range ow.stable {
		if ow.seen[id] != 1 {
			t.Fatalf("walk %s: %s, present and unchanged for the whole walk, listed %d times", ow.name, id, ow.seen[id])
		}
	}
	return true
}

// page pages the open walks once each.
func (w *writeFuzz) page() {
	if w.pwalk.page(w.t, w.s) {
		w.pwalk = nil
	}
	if w.lwalk.page(w.t, w.s) {
		w.lwalk = nil
	}
}

// checkSignals compares the state's geo signal search (a random filter,
// paged), each geo's active rows and the catalog's lists with the
// reference: a row is served while its key's catalog entry is active.
func (w *writeFuzz) checkSignals(r *rand.Rand) {
	t, ctx := w.t, context.Background()
	active := map[string]bool{}
	var entries []readmodel.CatalogEntry
	for _, c := range w.catalog.live() {
		entries = append(entries, c)
		active[c.SignalKey] = c.Status == readmodel.CatalogActive
	}
	var rows []readmodel.GeoSignal
	for _, g := range w.signals.live() {
		if active[g.SignalKey] {
			rows = append(rows, g)
		}
	}
	slices.SortFunc(rows, func(a, b readmodel.GeoSignal) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := strings.Compare(a.SignalKey, b.SignalKey); c != 0 {
			return c
		}
		return strings.Compare(a.GeoID, b.GeoID)
	})
	q := readmodel.GeoSignalQuery{State: "WA", Limit: 1 + r.IntN(4)}
	for k := range 3 {
		if r.IntN(4) == 0 {
			q.SignalKeys = append(q.SignalKeys, fmt.Sprintf("k%d", k))
		}
	}
	if r.IntN(3) == 0 {
		q.GeoType = []readmodel.GeoType{readmodel.GeoZip, readmodel.GeoCity, readmodel.GeoState}[r.IntN(3)]
	}
	if r.IntN(3) == 0 {
		q.Decision = []string{"positive", "neutral", "negative"}[r.IntN(3)]
	}
	if r.IntN(3) == 0 {
		m := float64(r.IntN(5)) / 4
		q.MinScore = &m
	}
	var want, got []string
	for _, g := range rows {
		if (len(q.SignalKeys) == 0 || slices.Contains(q.SignalKeys, g.SignalKey)) && (q.GeoType == "" || g.GeoType == q.GeoType) &&
			(q.Decision == "" || g.Decision == q.Decision) && (q.MinScore == nil || g.Score >= *q.MinScore) {
			want = append(want, fmt.Sprintf("%s/%d", g.ID(), g.Version))
		}
	}
	for range 1000 {
		page, err := w.s.SearchGeoSignals(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range page.Signals {
			got = append(got, fmt.Sprintf("%s/%d", g.ID(), g.Version))
		}
		if q.After = page.Next; q.After == nil {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("signal search %+v: got %v, want %v", q, got, want)
	}
	for _, geo := range fuzzSignalGeos {
		var keys []string
		if r.IntN(3) == 0 {
			keys = []string{fmt.Sprintf("k%d", r.IntN(3))}
		}
		ls, err := w.s.GeoSignalsForLocation(ctx, readmodel.ParseGeoRef(geo.id), keys)
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, g := range rows {
			if g.GeoID == geo.id && (keys == nil || slices.Contains(keys, g.SignalKey)) {
				want = append(want, fmt.Sprintf("%s/%d", g.ID(), g.Version))
			}
		}
		slices.Sort(want) // signal_key ascending: the ids share the geo
		for _, g := range ls.Signals {
			got = append(got, fmt.Sprintf("%s/%d", g.ID(), g.Version))
		}
		if !slices.Equal(got, want) || ls.GeoType != geo.typ {
			t.Fatalf("%s keys %v: got %v (%s), want %v (%s)", geo.id, keys, got, ls.GeoType, want, geo.typ)
		}
	}
	slices.SortFunc(entries, func(a, b readmodel.CatalogEntry) int { return strings.Compare(a.SignalKey, b.SignalKey) })
	for _, inactive := range []bool{false, true} {
		list, err := w.s.Catalog(ctx, readmodel.CatalogQuery{State: "WA", IncludeInactive: inactive})
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, c := range entries {
			if inactive || c.Status == readmodel.CatalogActive {
				want = append(want, fmt.Sprintf("%s/%d", c.ID(), c.Version))
			}
		}
		for _, c := range list {
			got = append(got, fmt.Sprintf("%s/%d", c.ID(), c.Version))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("catalog (inactive %v): got %v, want %v", inactive, got, want)
		}
	}
}
