package indexer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/permitd/permitd/readmodel"
)

// The indexer's own location table.
//
// Projections denormalise from locations (a permit's ZIP hierarchy, a
// lead's anchor, a geo signal's display name). They read them from this
// table, which the indexer fills from the location documents it projects,
// never from the read model: a read per message would cap ingest at the
// backend's read latency (an _msearch per message on OpenSearch). The whole
// US gazetteer is about 100k rows, a few tens of MB.
//
// A dependent document whose location is not in the table yet waits
// (parks) instead of being written half-linked, as long as the table is
// not settled: its message is kept, and when the location arrives the
// indexer projects it again, exactly as if the location had come first,
// with the message's own entity version, in the batch that brings the
// location. The source settles the table (Indexer.Settle) once it has
// read every location that existed when it started (the Kafka consumer:
// the locations topic up to its start watermark; the embedded feed: its
// producers exhausted). Settling releases what still waits, linked to
// what can be known without the missing geography (a permit to its state
// and property).
//
// After settling, locations keep coming when they are published while
// the source runs. A miss then makes the batch wait for the source
// (Indexer.SetLocationSource; the Kafka consumer's AwaitLocations): once
// every location published before the wait began has been handled, the
// message is projected again. A location published before the permit
// that names it is therefore always linked, whichever partition the
// consumer happens to read first; the batch is made durable (and its
// offset committed) only after that, so nothing waits outside the source
// and a crash loses nothing. Only a location still unknown after the
// wait is missing for that write: the message links what it can without
// it, and the indexer remembers it (relink.go) so that the location, when
// it is published later, re-links the document at the same version. A
// source without such a wait (the embedded feed, which settles once it
// has no more locations) takes the miss at once, and the re-link too.
//
// Once settled, a miss falls back to Params.Lookup (the read model), once
// per geography found, and the answer is kept in the table: with a
// durable backend shared by a consumer group, other members own the
// location partitions (the wait covers them through the group's
// committed offsets); in serve, the embedded feed may have written
// locations this indexer never saw. Before it is settled a miss reads
// nothing: the message waits.

// locRow is one geography of the table: the fields projections use.
type locRow struct {
	loc     readmodel.Location
	deleted bool
}

// parked is a message waiting for a location.
type parked struct {
	msg     Message
	key     string // entity key: family + "\x00" + entity id
	version int64
	geoID   string // the location it waits for
}

// locations is the table and the parked messages; safe for concurrent
// use (the consumer hands batches of different partitions concurrently).
type locations struct {
	mu      sync.RWMutex
	rows    map[string]locRow
	settled bool
	// parked by entity key (topic + "\x00" + entity id), the newest
	// version only; waiting lists the keys parked on each geo_id.
	parked  map[string]parked
	waiting map[string][]string

	// Documents written without a location, for a re-link (relink.go):
	// by entity key, the newest version only; relinks lists the keys
	// remembered for each geo_id.
	unlinked         map[string]parked
	relinks          map[string][]string
	unlinkedBytes    int64
	maxUnlinkedBytes int64
	droppedUnlinked  int64
	unlinkedCount    atomic.Int64 // len(unlinked), read without the lock
	// Re-linked messages kept for the next re-link file (relink_save.go).
	trackRetired bool
	retired      []retired
	retiredBytes int64
	retireSeq    uint64
}

func newLocations(maxUnlinkedBytes int64) *locations {
	return &locations{rows: make(map[string]locRow, 1024), parked: map[string]parked{}, waiting: map[string][]string{},
		unlinked: map[string]parked{}, relinks: map[string][]string{}, maxUnlinkedBytes: maxUnlinkedBytes}
}

// maxReservedLocations bounds what reserve sizes the table for: about
// two and a half times the US gazetteer's rows (98,016). The map keeps
// rows of this size apart from its slots (a key and a pointer each), so
// that is about 14 MB of slots; the rows are allocated as they are
// written. A location topic holding more messages (many versions of
// each geography) grows the table as it fills.
const maxReservedLocations = 1 << 18

// reserve makes room in the table for n more rows (at most
// maxReservedLocations).
func (t *locations) reserve(n int64) {
	n = min(n, maxReservedLocations)
	if n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rows := make(map[string]locRow, len(t.rows)+int(n))
	for id, r := range t.rows {
		rows[id] = r
	}
	t.rows = rows
}

// tableRow keeps what projections read of l (not aliases or names used
// only by search).
func tableRow(l readmodel.Location) readmodel.Location {
	return readmodel.Location{
		GeoID: l.GeoID, GeoType: l.GeoType, DisplayName: l.DisplayName,
		State: l.State, County: l.County, City: l.City, Zipcode: l.Zipcode,
		Jurisdiction: l.Jurisdiction, StateGeoID: l.StateGeoID, CountyGeoID: l.CountyGeoID,
		CountyGeoIDs: l.CountyGeoIDs, CityGeoID: l.CityGeoID, JurisdictionGeoID: l.JurisdictionGeoID,
		Version: l.Version,
	}
}

// get returns the live location geoID.
func (t *locations) get(geoID string) (readmodel.Location, bool) {
	t.mu.RLock()
	r, ok := t.rows[geoID]
	t.mu.RUnlock()
	if !ok || r.deleted {
		return readmodel.Location{}, false
	}
	return r.loc, true
}

// apply records the batch's locations and location deletes (newer
// versions only) and returns the messages parked on the geographies of
// the batch that are live now. They stay parked until done removes them,
// once their projection is durable, so a batch that fails and is retried
// finds them again.
func (t *locations) apply(locs []readmodel.Location, dels []readmodel.Delete) []parked {
	if len(locs) == 0 && len(dels) == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range locs {
		t.putLocked(l)
	}
	for _, d := range dels {
		if d.Kind != readmodel.KindLocation {
			continue
		}
		// A delete outranks a location of its own version, as in the read
		// model.
		if r, ok := t.rows[d.ID]; !ok || readmodel.DeleteTakes(d.Version, r.loc.Version, r.deleted) {
			t.rows[d.ID] = locRow{loc: readmodel.Location{GeoID: d.ID, Version: d.Version}, deleted: true}
		}
	}
	if len(t.parked) == 0 && len(t.unlinked) == 0 {
		return nil
	}
	var out []parked
	for _, l := range locs {
		if r := t.rows[l.GeoID]; r.deleted {
			continue
		}
		for _, k := range t.waiting[l.GeoID] {
			if p, ok := t.parked[k]; ok && p.geoID == l.GeoID {
				out = append(out, p)
			}
		}
		out = t.relinksOf(l.GeoID, out) // documents written without it (relink.go)
	}
	return out
}

// done unparks ps (their projections are durable), unless a newer
// version was parked meanwhile.
func (t *locations) done(ps []parked) {
	if len(ps) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	geos := map[string]bool{}
	for _, p := range ps {
		if q, ok := t.parked[p.key]; ok && q.version == p.version && q.geoID == p.geoID {
			delete(t.parked, p.key)
		}
		t.relinkDoneLocked(p)
		geos[p.geoID] = true
	}
	for g := range geos {
		w := slices.DeleteFunc(t.waiting[g], func(k string) bool {
			q, ok := t.parked[k]
			return !ok || q.geoID != g
		})
		if len(w) == 0 {
			delete(t.waiting, g)
		} else {
			t.waiting[g] = w
		}
	}
}

// putLocked stores l when newer than the row; true when it took.
func (t *locations) putLocked(l readmodel.Location) bool {
	if r, ok := t.rows[l.GeoID]; ok && l.Version <= r.loc.Version {
		return false
	}
	t.rows[l.GeoID] = locRow{loc: tableRow(l)}
	return true
}

// cache stores a location read from the fallback Lookup.
func (t *locations) cache(l readmodel.Location) {
	t.mu.Lock()
	t.putLocked(l)
	t.mu.Unlock()
}

// park keeps m (entity key, version) until geoID is known. It returns
// false, parking nothing, when the table is settled or geoID became known
// meanwhile: the caller projects m again at once. An older version than
// the one parked is dropped (true: the newer one will be projected).
func (t *locations) park(key string, version int64, geoID string, m Message) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.settled {
		return false
	}
	if r, ok := t.rows[geoID]; ok && !r.deleted {
		return false
	}
	prev, had := t.parked[key]
	if had && prev.version >= version {
		return true
	}
	m.Key = append([]byte(nil), m.Key...) // the source may reuse its buffers
	m.Value = append([]byte(nil), m.Value...)
	t.parked[key] = parked{msg: m, key: key, version: version, geoID: geoID}
	if !had || prev.geoID != geoID {
		t.waiting[geoID] = append(t.waiting[geoID], key)
	}
	return true
}

// unpark drops what is parked under key at version or older (a delete
// of the entity arrived).
func (t *locations) unpark(key string, version int64) {
	t.mu.Lock()
	if p, ok := t.parked[key]; ok && p.version <= version {
		delete(t.parked, key)
	}
	t.mu.Unlock()
	t.forget(key, version, true)
}

// settle marks the table settled and returns every parked message; they
// stay parked until done.
func (t *locations) settle() []parked {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.settled = true
	out := make([]parked, 0, len(t.parked))
	for _, p := range t.parked {
		out = append(out, p)
	}
	return out
}

func (t *locations) isSettled() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.settled
}

// parkedCount is the number of messages waiting for a location.
func (t *locations) parkedCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.parked)
}

// errMissing is a projection's lookup of a geography the table does not
// know while messages may still park: the message waits for it.
type errMissing struct{ geoID string }

func (e *errMissing) Error() string { return fmt.Sprintf("location %s not known yet", e.geoID) }

// resolver is the Lookup projections get: the table, then the fallback
// (when set), then either a miss that parks the message (errMissing) or
// readmodel.ErrNotFound (the projection links what it can without it).
type resolver struct {
	t        *locations
	fallback Lookup
	park     bool
}

func (r *resolver) Location(ctx context.Context, geo readmodel.GeoRef) (readmodel.Location, error) {
	geoID := geo.ID()
	if l, ok := r.t.get(geoID); ok {
		return l, nil
	}
	if r.park {
		// Not settled: the location may still come from the source, so
		// the message waits, with no read of the read model.
		return readmodel.Location{}, &errMissing{geoID}
	}
	if r.fallback != nil {
		l, err := r.fallback.Location(ctx, geo)
		switch {
		case err == nil:
			if l.GeoType != readmodel.GeoProperty {
				r.t.cache(l)
			}
			return l, nil
		case !errors.Is(err, readmodel.ErrNotFound):
			return l, err
		}
	}
	return readmodel.Location{}, readmodel.ErrNotFound
}
