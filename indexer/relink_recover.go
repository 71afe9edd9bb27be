package indexer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/readmodel"
)

// Re-links across a restart of a consumer group member (durable backends).
//
// What an indexer remembers for a re-link (relink.go) lives in its
// memory. The memory backend saves it beside its snapshot (relink_save.go).
// A durable backend keeps it with the documents instead: when the
// Writer lists waiting documents (readmodel.UnlinkedLister, OpenSearch),
// every document written without a location it names carries what it
// waits for (readmodel.Batch.Awaiting: the geo_id and the message, with
// its topic and partition), whether this indexer remembers it or the
// bound made it forget it.
//
// RecoverUnlinked reads them back. The Kafka consumer calls it each time
// the group assigns this member its partitions (at start and after every
// rebalance), before it consumes any of them, with the partitions it now
// owns:
//
//   - what this indexer remembers of a partition it no longer owns is
//     dropped: the new owner recovers it from the read model;
//   - the documents of the owned partitions still waiting are listed page
//     by page (bounded memory: one page, plus what is remembered, which
//     MaxUnlinkedBytes bounds); the geographies a page waits for that
//     the table does not hold are read once each from Params.Lookup;
//   - a document whose location is known now is re-linked at once (the
//     message is projected again and written, as when the location
//     arrives); the others are remembered, exactly as if this indexer
//     had written them, so the location's arrival (a batch of the
//     locations topic, or RelinkFromLookup when another member consumes
//     it) re-links them through the same path. Past the bound they are
//     counted in Progress.UnlinkedDropped and logged, and stay listed in
//     the read model for the next recovery.
//
// Ownership: a document's message came from one partition (its entity
// key's), so one member lists it. During a rebalance the previous owner
// may still re-link a document it remembers while the new owner recovers
// it: both project the same message into the same document at the same
// (version, linked), and the Writer's rule (readmodel.Writer: equal pairs
// are stale) makes the second write a no-op, so doing it twice is
// harmless; the OpenSearch cells count a re-link once by its tag.

// Recovered counts what one RecoverUnlinked did.
type Recovered struct {
	Listed     int // waiting documents the read model listed
	Remembered int // remembered for a re-link when their location arrives
	Relinked   int // re-linked at once: their location was known
	Dropped    int // not remembered: MaxUnlinkedBytes reached
	Unreadable int // a stored message that does not decode (logged)
}

// RecoverUnlinked recovers, from the read model, the documents of the
// owned partitions (by topic; nil: every partition) that wait for a
// location (see above). It returns once the re-links it made are durable;
// on error (the read model failed) it may be called again: what it
// remembered stays, and remembering again is harmless. Nothing to do when
// the Writer does not list waiting documents.
func (ix *Indexer) RecoverUnlinked(ctx context.Context, owned map[string][]int) (Recovered, error) {
	var r Recovered
	lister := ix.lister
	if lister == nil {
		return r, nil
	}
	if n := ix.loc.keepOwned(owned); n > 0 {
		ix.p.Logger.Info("re-links of partitions now owned by another member are left to it", "documents", n)
	}
	q := readmodel.UnlinkedScan{Partitions: owned, PageSize: ix.p.UnlinkedPageSize}
	err := lister.ScanUnlinked(ctx, q, func(page []readmodel.Awaiting) error { return ix.recoverPage(ctx, page, &r) })
	if err != nil {
		return r, fmt.Errorf("indexer: recover documents waiting for a location: %w", err)
	}
	if r.Listed > 0 {
		ix.p.Logger.Info("documents waiting for a location recovered from the read model",
			"listed", r.Listed, "remembered", r.Remembered, "relinked", r.Relinked, "not_remembered", r.Dropped, "unreadable", r.Unreadable)
	}
	return r, nil
}

// recoverPage remembers or re-links one page of waiting documents.
func (ix *Indexer) recoverPage(ctx context.Context, page []readmodel.Awaiting, r *Recovered) error {
	if err := ix.lookUpMissing(ctx, page); err != nil {
		return err
	}
	var now []parked
	for _, a := range page {
		r.Listed++
		m := Message{Topic: a.Topic, Partition: a.Partition, Offset: a.Offset, Key: a.Key, Value: a.Value}
		key, version, err := entityOf(m)
		if err == nil && version != a.Version {
			err = fmt.Errorf("message version %d, document version %d", version, a.Version)
		}
		if err != nil {
			r.Unreadable++
			ix.p.Logger.Error("a document waiting for a location carries a message that cannot be projected again; it stays unlinked until re-published",
				"kind", a.Kind, "id", a.ID, "err", err)
			continue
		}
		ok, dropped := ix.loc.remember(key, version, a.GeoID, m)
		switch {
		case dropped:
			r.Dropped++
			ix.warnDropped(a.GeoID)
		case ok:
			r.Remembered++
		default: // known now: re-link at once
			now = append(now, parked{msg: m, key: key, version: version, geoID: a.GeoID})
		}
	}
	if len(now) == 0 {
		return nil
	}
	if err := ix.writeFinal(ctx, now); err != nil {
		return err
	}
	r.Relinked += len(now)
	ix.relinked.Add(int64(len(now)))
	return nil
}

// lookUpMissing reads, once each, the geographies page waits for that
// the table does not hold from Params.Lookup (the read model), and keeps
// the ones found in the table.
func (ix *Indexer) lookUpMissing(ctx context.Context, page []readmodel.Awaiting) error {
	if ix.p.Lookup == nil {
		return nil
	}
	var geos []string
	for _, a := range page {
		if _, ok := ix.loc.get(a.GeoID); !ok && !slices.Contains(geos, a.GeoID) {
			geos = append(geos, a.GeoID)
		}
	}
	for _, g := range geos {
		l, err := ix.p.Lookup.Location(ctx, readmodel.ParseGeoRef(g))
		if errors.Is(err, readmodel.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("look up %s: %w", g, err)
		}
		if l.GeoType != readmodel.GeoProperty {
			ix.loc.cache(l)
		}
	}
	return nil
}

// entityOf is the entity key and version of a message.
func entityOf(m Message) (key string, version int64, err error) {
	err = events.WithEvent(m.Value, func(env events.Envelope) error {
		key, version = entityKey(env), env.EntityVersion
		return nil
	})
	return key, version, err
}

// awaiting is what the document env was projected into, written without
// geoID, waits for (readmodel.Batch.Awaiting). m's bytes are aliased:
// the batch is written before the source's buffers are reused.
func awaiting(env events.Envelope, m Message, geoID string) readmodel.Awaiting {
	return readmodel.Awaiting{Kind: kindOf[env.Type.Family()], ID: env.EntityID, Version: env.EntityVersion, GeoID: geoID,
		Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
}

// keepOwned drops what is remembered of messages of partitions not in
// owned (nil: keep everything), and returns how many it dropped.
func (t *locations) keepOwned(owned map[string][]int) int {
	if owned == nil || t.unlinkedCount.Load() == 0 {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for key, p := range t.unlinked {
		if !slices.Contains(owned[p.msg.Topic], p.msg.Partition) {
			t.unlinkedBytes -= p.size()
			t.dropUnlinkedLocked(key, p.geoID)
			n++
		}
	}
	return n
}
