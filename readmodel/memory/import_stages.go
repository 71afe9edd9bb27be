package memory

import (
	"sync"

	"github.com/permitd/permitd/readmodel"
)

// An Import builds a side in two stages on two goroutines, since a
// permit's write is two halves of about equal cost that touch different
// parts of the side:
//
//   - the compactor (the Import's goroutine) converts each permit
//     (compactPermit: symbols, texts, link sets) and stores it in the
//     permits table;
//   - the indexer (its own goroutine) adds the stored permits to the
//     indexes (indexPermit: geo sets, the properties' permit lists, the
//     text and cell indexes, the symbol folds).
//
// The compactor hands the indexer the permits of each batch in order,
// with a view of the side to index them with: a copy of the side whose
// symbols, texts and link sets are the tables as they were when the batch
// was handed over (the compactor appends to them meanwhile; entries
// already there never change while a permit holds them), and whose maps
// and pointers are the side's own. The indexer writes only through
// those, so the view's copied values (bulk, deferGeo) are only read.
//
// Properties share the permits' property entries, so they wait until the
// indexer has indexed the permits handed over (drain); then the compactor
// converts and stores each new one and the indexer links it into the
// address chains (putProperties), the two halves again side by side, as
// the properties of a snapshot come in batches of their own after its
// permits. Anything else waits until the indexer has caught up and is
// then written as usual, by the compactor: a permit whose id is already
// in the table (a new version, a tombstone, a re-link: never in a
// snapshot, where each id is once, so a snapshot's permits, the unique
// batches, are not checked one by one and the Import checks the table
// once at the end instead), a property whose entry holds a
// document or a tombstone already, and every other kind (locations,
// signals, leads and the catalog, which costs one wait per batch that
// holds them). The result is the side side.apply builds from the same
// batches (TestImportStagesMatchApply).
//
// The per-geo indexes an Import defers (permit_bulk.go) are built in the
// background from the first batch after some permits that holds nothing
// of permits: a snapshot holds its locations, then its permits, then the
// other kinds (memory.Export), so they are built while the properties and
// the rest load. A later permit, or a delete of one, waits for that build
// first and is then indexed as Apply indexes it (correct in any order,
// only slower).
//
// Both stages look up the large maps they write (the permits table, the
// property entries, the address chains) a run at a time before they use
// the answers (stagedRun), so that the waits for memory overlap.
type importStages struct {
	d       *side
	work    chan indexWork
	pending sync.WaitGroup // work handed over, not yet indexed
	permits bool           // some of it permits (send; drain clears it)
	done    chan struct{}  // the indexer has ended
	geo     *geoBuild      // the background build of the geo indexes; nil: none
	// staged counts what the indexer's staged lookups found (stagedRun),
	// and found the compactor's: kept so that the lookups are made.
	staged, found int
}

type indexWork struct {
	view    *side
	permits []*cpermit
	props   []*propEntry // new property documents, to link into the address chains
}

func newImportStages(d *side) *importStages {
	st := &importStages{d: d, work: make(chan indexWork, 4), done: make(chan struct{})}
	go func() {
		defer close(st.done)
		for w := range st.work {
			for lo := 0; lo < len(w.permits); lo += stagedRun {
				run := w.permits[lo:min(lo+stagedRun, len(w.permits))]
				st.staged += w.view.props.touchEntries(run)
				for _, c := range run {
					w.view.indexPermit(c)
				}
			}
			st.staged += w.view.props.linkAll(w.props)
			st.pending.Done()
		}
	}()
	return st
}

// add writes b to the side (the compactor's goroutine).
func (st *importStages) add(ib importBatch) {
	b, shapes := ib.b, ib.shapes
	d := st.d
	if d.quitting() { // an abandoned second side (standby.go)
		return
	}
	if len(b.Permits) > 0 || deletesPermits(b.Deletes) {
		st.joinGeo()
		d.leanLists = nil // the indexer's views write its sets (permit_bulk.go)
		if d.quitting() { // the geo build may have stopped half way
			return
		}
	}
	var stored []*cpermit
	for i, p := range b.Permits {
		if i%stagedRun == 0 {
			// The run's ids, looked up a run at a time (stagedRun), so
			// that the look below and the insert find them in the cache.
			run := b.Permits[i:min(i+stagedRun, len(b.Permits))]
			for j := range run {
				if _, ok := d.permits.rows[run[j].PermitID]; ok {
					st.found++
				}
			}
		}
		// A unique batch's permits are new ids (a snapshot's): stored
		// without a check, the Import checks the table once at the end
		// (table.duplicated).
		if !ib.unique && d.permits.has(p.PermitID) {
			st.send(stored)
			stored = nil
			st.drain()
			d.putPermit(p)
			continue
		}
		c := d.compactPermit(p, shapes.PermitShape(i, len(b.Permits)))
		d.permits.insert(c.id, c.version, c) // a new id (looked up above, or unique)
		d.pi.slab.take(c)                    // before the indexer stage reads it
		stored = append(stored, c)
	}
	st.send(stored)
	rest := *b
	rest.Permits = nil
	if rest.Len() > 0 {
		// Properties alone need not wait for the indexer to link the
		// ones before them, only for the permits it indexes (which
		// make and fill the property entries).
		if st.permits || len(rest.Properties) < rest.Len() {
			st.drain()
		}
		if len(b.Permits) == 0 && d.deferGeo && st.geo == nil && !deletesPermits(rest.Deletes) && d.pi.deferred.geos > 0 {
			st.startGeo()
		}
		if len(rest.Properties) > 0 {
			if len(rest.Locations) > 0 { // apply's order: locations first
				d.apply(&readmodel.Batch{Locations: rest.Locations})
				rest.Locations = nil
			}
			st.putProperties(rest.Properties, shapes)
			rest.Properties = nil
			if rest.Len() == 0 {
				return
			}
			st.drain()
		}
		d.applyShaped(&rest, shapes)
	}
}

// putProperties stores properties as putProperty does (the compactor),
// and hands the indexer the new ones to link into the address chains:
// in a snapshot's load the properties come after the permits, when the
// indexer has nothing else to do. A property whose entry holds a
// document or a tombstone already (never in a snapshot) waits for the
// indexer and is written as Apply writes it. Nothing reads or writes the
// chains but the indexer until the next drain; the compactor writes
// other fields of the entries.
func (st *importStages) putProperties(ps []readmodel.Property, shapes *readmodel.LinkShapes) {
	d := st.d
	t := d.props
	var fresh []*propEntry
	var refs [stagedRun]propRef
	var es [stagedRun]*propEntry
	for i, p := range ps {
		if i%stagedRun == 0 { // the run's entries, looked up first (stagedRun)
			run := ps[i:min(i+stagedRun, len(ps))]
			for j := range run {
				refs[j] = d.propRefOf(run[j].PropertyID)
				es[j] = t.m[refs[j]]
			}
			for _, e := range es[:len(run)] {
				if e != nil && e.state != propNone {
					st.found++
				}
			}
		}
		shape := shapes.PropertyShape(i, len(ps))
		e := t.entry(refs[i%stagedRun], true)
		if e.state != propNone {
			st.sendProperties(fresh)
			fresh = nil
			st.drain()
			d.putProperty(p, shape)
			continue
		}
		e.state, e.version, e.doc = propLive, p.Version, d.compactProperty(p, shape)
		t.live++
		fresh = append(fresh, e)
	}
	st.sendProperties(fresh)
}

// sendProperties hands the indexer new properties to link.
func (st *importStages) sendProperties(es []*propEntry) {
	if len(es) == 0 {
		return
	}
	st.pending.Add(1)
	st.work <- indexWork{view: st.view(), props: es}
}

func deletesPermits(ds []readmodel.Delete) bool {
	for _, d := range ds {
		if d.Kind == readmodel.KindPermit {
			return true
		}
	}
	return false
}

// startGeo builds the deferred per-geo indexes in the background, on a
// view of the side as the indexer stage has one (startGeoBuild): the
// side has no permit sets until joinGeo has them from the build.
func (st *importStages) startGeo() {
	st.geo = st.d.startGeoBuild(st.view(), st.d.geoParts())
}

// joinGeo waits for the background build of the geo indexes, after which
// the side indexes permits as Apply does.
func (st *importStages) joinGeo() {
	if st.geo == nil {
		return
	}
	st.geo.wait(st.d)
	st.geo = nil
}

// send hands permits stored in the table to the indexer.
func (st *importStages) send(permits []*cpermit) {
	if len(permits) == 0 {
		return
	}
	st.pending.Add(1)
	st.permits = true
	st.work <- indexWork{view: st.view(), permits: permits}
}

// view is a copy of the side for another goroutine: its symbols, texts
// and link sets as they are now, its maps and pointers the side's own.
func (st *importStages) view() *side {
	d := st.d
	v := *d
	v.pi.syms = &symbols{strs: d.pi.syms.strs}
	v.pi.texts = &texts{strs: d.pi.texts.strs}
	v.pi.links = &linkSets{sets: d.pi.links.sets}
	return &v
}

// drain waits until the indexer has indexed everything handed over.
func (st *importStages) drain() {
	st.pending.Wait()
	st.permits = false
}

// close ends the indexer once it has caught up; the side is then the
// compactor's alone again.
func (st *importStages) close() {
	close(st.work)
	<-st.done
	st.joinGeo()
}
