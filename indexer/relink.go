package indexer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// Re-links: documents written without a location they name.
//
// Once the table is settled (locations.go), a permit or property whose
// ZIP location, or a lead whose anchor location, is still unknown after
// the source's wait is written linked to what is known without it (its
// property and state; a lead to its state: Linked is false). The indexer remembers its message
// here, keyed by the missing geo_id, and when that location arrives it
// projects the message again, in the batch that brings the location, and
// writes the same entity at the same version, linked: the document a
// replay with the locations first would have produced (the projection is
// the same code, given the same locations). The Writer orders equal
// versions by link completeness (readmodel.Writer), so the re-link
// replaces the unlinked copy and a replayed unlinked copy never undoes it.
//
// Which documents: those whose links come from a location they name.
// Permits and properties: the ZIP (a city link comes from the ZIP's
// hierarchy, so a ZIP is the one location they wait for). Leads: the
// anchor (a lead whose anchor is unknown is anchored to its state alone).
// A geo signal of an unknown geography is a dead letter, not written, so
// there is nothing to re-link (re-publish it from the dead-letter topic).
//
// The entry is the raw message (newest version of the entity only),
// removed once the re-link is durable, or when a newer version or a
// delete of the entity is projected. Bounded: at most maxUnlinkedBytes of
// messages (Params.MaxUnlinkedBytes, 64 MiB by default: about 50,000
// permit events); beyond it a document is not remembered, which is
// counted (Progress.UnlinkedDropped) and logged, and the document stays
// unlinked until its entity is published again (it is still found by
// Linked, so it is not silent), or, on a Writer that keeps what waiting
// documents wait for, until the next recovery (relink_recover.go).
//
// A message is remembered under the table's lock, after checking that
// the location is still unknown: a location batch applied concurrently
// either finds the entry or the caller sees the location and projects the
// message again at once, so no entry can wait for a location that has
// already arrived.

// defaultMaxUnlinkedBytes bounds the remembered messages by default.
const defaultMaxUnlinkedBytes = 64 << 20

// entryOverhead approximates an entry's bookkeeping beyond its bytes
// (map slots, the struct, the waiting list slot).
const entryOverhead = 160

func (p parked) size() int64 {
	return int64(len(p.msg.Key) + len(p.msg.Value) + len(p.msg.Topic) + 2*len(p.key) + len(p.geoID) + entryOverhead)
}

// remember records m (entity key, version), written without geoID. It
// returns false, recording nothing, when geoID is known now: the caller
// projects m again. An older version than the one remembered is ignored.
func (t *locations) remember(key string, version int64, geoID string, m Message) (ok, dropped bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.rows[geoID]; ok && !r.deleted {
		return false, false
	}
	prev, had := t.unlinked[key]
	if had && prev.version > version {
		return true, false
	}
	if had && prev.version == version && prev.geoID == geoID {
		return true, false
	}
	m.Key = append([]byte(nil), m.Key...) // the source may reuse its buffers
	m.Value = append([]byte(nil), m.Value...)
	p := parked{msg: m, key: key, version: version, geoID: geoID}
	size := p.size()
	if had {
		t.unlinkedBytes -= prev.size()
	}
	if t.unlinkedBytes+size > t.maxUnlinkedBytes {
		if had {
			t.dropUnlinkedLocked(key, prev.geoID)
		}
		t.droppedUnlinked++
		return true, true
	}
	t.unlinked[key] = p
	t.unlinkedBytes += size
	t.unlinkedCount.Store(int64(len(t.unlinked)))
	if !had || prev.geoID != geoID {
		if had {
			t.relinks[prev.geoID] = dropKey(t.relinks[prev.geoID], key)
		}
		t.relinks[geoID] = append(t.relinks[geoID], key)
	}
	return true, false
}

// forget drops what is remembered under key at a version older than
// version (a newer version of the entity was projected linked) or, with
// orEqual, at version too (a delete).
func (t *locations) forget(key string, version int64, orEqual bool) {
	if t.unlinkedCount.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.unlinked[key]; ok && (p.version < version || orEqual && p.version == version) {
		t.unlinkedBytes -= p.size()
		t.dropUnlinkedLocked(key, p.geoID)
	}
}

func (t *locations) dropUnlinkedLocked(key, geoID string) {
	delete(t.unlinked, key)
	t.unlinkedCount.Store(int64(len(t.unlinked)))
	if w := dropKey(t.relinks[geoID], key); len(w) == 0 {
		delete(t.relinks, geoID)
	} else {
		t.relinks[geoID] = w
	}
}

// dropKey removes key from keys.
func dropKey(keys []string, key string) []string {
	if i := slices.Index(keys, key); i >= 0 {
		return slices.Delete(keys, i, i+1)
	}
	return keys
}

// relinksOf appends the entries waiting for geoID to out (t.mu held).
func (t *locations) relinksOf(geoID string, out []parked) []parked {
	for _, k := range t.relinks[geoID] {
		if p, ok := t.unlinked[k]; ok && p.geoID == geoID {
			out = append(out, p)
		}
	}
	return out
}

// relinkDoneLocked removes p once its re-link is durable (t.mu held),
// unless a newer version was remembered meanwhile, or p's location is
// still unknown: then p was written without it again (a message parked
// before Settle and written at Settle), and the entry is the one that
// write made, waiting for the location as any other.
func (t *locations) relinkDoneLocked(p parked) {
	if r, ok := t.rows[p.geoID]; !ok || r.deleted {
		return
	}
	if q, ok := t.unlinked[p.key]; ok && q.version == p.version && q.geoID == p.geoID {
		t.unlinkedBytes -= q.size()
		t.dropUnlinkedLocked(p.key, p.geoID)
		t.retireLocked(q)
	}
}

// unlinkedLen is the number of documents waiting for a re-link.
func (t *locations) unlinkedLen() (n int, dropped int64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.unlinked), t.droppedUnlinked
}

// missingGeo returns the geo_id of the location the document env was just
// projected into b without (the last permit or property of b), or "" when
// it is linked (or is of another kind).
func missingGeo(env events.Envelope, b *readmodel.Batch) string {
	switch env.Type {
	case events.PermitUpserted:
		if p := b.Permits[len(b.Permits)-1]; !p.Linked() {
			return zipIDs.of(p.Address.Zipcode)
		}
	case events.PropertyUpserted:
		if p := b.Properties[len(b.Properties)-1]; !p.Linked() {
			return zipIDs.of(p.Zipcode)
		}
	case events.LeadUpserted:
		// Anchored to its state alone: missing its anchor, unless the
		// anchor is that state (or a property, never a location).
		if l := b.Leads[len(b.Leads)-1]; !l.Linked() {
			d, err := events.Payload[events.Lead](env)
			if err == nil && len(l.GeoIDs) == 1 && l.GeoIDs[0] != d.AnchorGeoID && !readmodel.IsPropertyID(d.AnchorGeoID) {
				return d.AnchorGeoID
			}
		}
	}
	return ""
}

// unappend removes the document env was just projected into b.
func unappend(env events.Envelope, b *readmodel.Batch) {
	switch env.Type {
	case events.PermitUpserted:
		b.Permits[len(b.Permits)-1] = readmodel.Permit{}
		b.Permits = b.Permits[:len(b.Permits)-1]
	case events.PropertyUpserted:
		b.Properties[len(b.Properties)-1] = readmodel.Property{}
		b.Properties = b.Properties[:len(b.Properties)-1]
	case events.LeadUpserted:
		b.Leads[len(b.Leads)-1] = readmodel.Lead{}
		b.Leads = b.Leads[:len(b.Leads)-1]
	}
}

// projectFinal projects env with what the table (and the fallback) knows,
// appending to b, and remembers the message when the document misses its
// ZIP's location (see above). Only a settled table gets here with a miss.
func (ix *Indexer) projectFinal(ctx context.Context, env events.Envelope, m Message, b *readmodel.Batch) error {
	if err := projectInto(ctx, env, ix.final, b); err != nil {
		return err
	}
	return ix.noteLinks(ctx, env, m, b)
}

// noteLinks remembers or forgets env's entity after its projection into
// b: remembered when its document misses a location, forgotten (older
// versions) when it is linked. When the location arrived meanwhile, the
// document is projected again, linked, in place.
func (ix *Indexer) noteLinks(ctx context.Context, env events.Envelope, m Message, b *readmodel.Batch) error {
	if env.Type != events.PermitUpserted && env.Type != events.PropertyUpserted && env.Type != events.LeadUpserted {
		return nil
	}
	geo := missingGeo(env, b)
	if geo == "" {
		if ix.loc.unlinkedCount.Load() > 0 { // no key built on the hot path
			ix.loc.forget(entityKey(env), env.EntityVersion, false)
		}
		return nil
	}
	ok, dropped := ix.loc.remember(entityKey(env), env.EntityVersion, geo, m)
	if dropped {
		ix.warnDropped(geo)
	}
	if ok {
		if ix.lister != nil {
			// kept with the document, remembered or not (relink_recover.go)
			b.Awaiting = append(b.Awaiting, awaiting(env, m, geo))
		}
		return nil
	}
	unappend(env, b)
	return projectInto(ctx, env, ix.final, b)
}

// warnDropped logs a document left unlinked for the bound, the first
// time and then every 10,000th.
func (ix *Indexer) warnDropped(geoID string) {
	_, n := ix.loc.unlinkedLen()
	if n == 1 || n%10000 == 0 {
		ix.p.Logger.Warn("documents written without their location are not all remembered for a re-link: the bound on remembered messages is reached; they stay unlinked until re-published",
			"not_remembered", n, "missing_geo_id", geoID, "max_unlinked_bytes", ix.loc.maxUnlinkedBytes)
	}
}

// RelinkFromLookup re-links the remembered documents whose location the
// fallback Lookup (Params.Lookup: the read model) holds now, and returns
// how many it wrote. It is for a member of a consumer group on a durable
// backend: another member may own the locations partitions, so this
// indexer never sees the location arrive in a batch of its own. It reads
// one location per distinct geo_id waited for (not per document), keeps
// what it finds in the table, and writes the re-links as one batch. A
// Lookup failure is returned (nothing is lost: the entries stay). No
// Lookup: nothing to do.
func (ix *Indexer) RelinkFromLookup(ctx context.Context) (int, error) {
	if ix.p.Lookup == nil || ix.loc.unlinkedCount.Load() == 0 {
		return 0, nil
	}
	ix.loc.mu.RLock()
	geos := make([]string, 0, len(ix.loc.relinks))
	for g := range ix.loc.relinks {
		geos = append(geos, g)
	}
	ix.loc.mu.RUnlock()
	var found []readmodel.Location
	for _, g := range geos {
		l, err := ix.p.Lookup.Location(ctx, readmodel.ParseGeoRef(g))
		if errors.Is(err, readmodel.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("indexer: re-link: look up %s: %w", g, err)
		}
		if l.GeoType != readmodel.GeoProperty {
			found = append(found, l)
		}
	}
	ps := ix.loc.apply(found, nil) // into the table; what waits for them
	if len(ps) == 0 {
		return 0, nil
	}
	if err := ix.writeFinal(ctx, ps); err != nil {
		return 0, err
	}
	ix.loc.done(ps)
	ix.relinked.Add(int64(len(ps)))
	return len(ps), nil
}

// writeFinal projects ps again with what is known now (missFinal: no
// more waiting) and writes them as one batch (dead-lettering the
// invalid); nil once durable.
func (ix *Indexer) writeFinal(ctx context.Context, ps []parked) error {
	var b readmodel.Batch
	msgs, errs, err := ix.project(ctx, ps, &b, missFinal)
	if err != nil {
		return err
	}
	return ix.write(ctx, b, msgs, errs)
}
