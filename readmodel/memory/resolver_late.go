package memory

import (
	"sync/atomic"

	"github.com/permitd/permitd/readmodel"
)

// lateResolver is the place index of a side that is filled before anyone
// reads it (a replay's side, an Import's first side), built once the
// side is whole, from its location table, on a goroutine of its own. A
// resolver indexes each location's names, terms and spellings (about
// 0.2 s of CPU for the gazetteer's 98,016 locations): beside a replay
// that was 5% of the CPU before ready, on a machine whose two cores the
// replay keeps busy. Built afterwards it indexes each live location
// once, not every version the log holds, and is made to size for them.
//
// Until start, Upsert and Delete do nothing: the side's table records
// what they would have said. After it, the side's writes wait for the
// build (awaitResolver, before they change the table it reads), and so
// do Search and Warm: a place search that comes in the build's first
// tenths of a second waits for the rest of it, as the first two-typo
// search waited for its index before the second side's build warmed it
// (standby.go). Searches that name no place (by geo_id, the permit,
// lead and stats reads) never wait.
type lateResolver struct {
	r       Resolver
	started atomic.Bool
	built   chan struct{} // closed once r holds the side's live locations
}

// resolveLate makes d's resolver (if any) a late one, on a new side
// nobody reads before start (BeginReplay, NewImport).
func (d *side) resolveLate() {
	if d.resolver != nil {
		d.resolver = &lateResolver{r: d.resolver, built: make(chan struct{})}
	}
}

// startResolver starts the build of d's late resolver from d's
// locations (EndReplay, an Import's first side at its end): before the
// side is read, and with no write to it until the build is done.
func (d *side) startResolver() {
	l, ok := d.resolver.(*lateResolver)
	if !ok || l.started.Swap(true) {
		return
	}
	t := d.locations.table
	go func() {
		defer close(l.built)
		if rr, ok := l.r.(interface{ Reserve(n int) }); ok {
			rr.Reserve(t.live)
		}
		for _, r := range t.rows {
			if !r.deleted {
				l.r.Upsert(*r.doc)
			}
		}
	}()
}

// awaitResolver waits for d's late resolver's build, if one runs: a
// write to d waits for it before it changes the locations it reads.
func (d *side) awaitResolver() {
	if l, ok := d.resolver.(*lateResolver); ok && l.started.Load() {
		<-l.built
	}
}

func (l *lateResolver) Upsert(loc readmodel.Location) {
	if l.started.Load() {
		<-l.built
		l.r.Upsert(loc)
	}
}

func (l *lateResolver) Delete(geoID string) {
	if l.started.Load() {
		<-l.built
		l.r.Delete(geoID)
	}
}

// Search waits for the build. Readers have the side after start only.
func (l *lateResolver) Search(q readmodel.ResolveQuery) []readmodel.Candidate {
	if !l.started.Load() {
		panic("memory: a side's resolver searched before its late index was started")
	}
	<-l.built
	return l.r.Search(q)
}

// Warm waits for the build and warms what r leaves to its first search;
// before start there is nothing to warm.
func (l *lateResolver) Warm() {
	if !l.started.Load() {
		return
	}
	<-l.built
	warm(l.r)
}
