package memory

import (
	"context"
	"slices"

	"github.com/permitd/permitd/readmodel"
)

// Export hands every live document and every tombstone (as a Delete at
// its version) to fn in batches of at most size items, under the read
// active side, as one reader: the batches together are one consistent
// state, and applying them to an empty Store rebuilds the same contents
// (the same Digest). It is the one door snapshots use into the Store
// (indexer/snapshot). The writer may apply one more batch while it runs
// (to the other side), then waits for it; readers never do. An error from fn (or ctx ending)
// stops it and is returned. fn may keep the batches: they are copies.
func (s *Store) Export(ctx context.Context, size int, fn func(readmodel.Batch) error) error {
	if size < 1 {
		size = 4096
	}
	d, c := s.enter()
	defer leave(c)
	var b readmodel.Batch
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(b)
		b, n = readmodel.Batch{}, 0
		return err
	}
	add := func() error {
		n++
		if n >= size {
			return flush()
		}
		return nil
	}
	var err error
	tomb := func(k readmodel.Kind, id string, v int64) {
		if err == nil {
			b.Deletes = append(b.Deletes, readmodel.Delete{Kind: k, ID: id, Version: v})
			err = add()
		}
	}
	for id, r := range d.locations.rows {
		if err != nil {
			return err
		}
		if r.deleted {
			tomb(readmodel.KindLocation, id, r.version)
			continue
		}
		b.Locations = append(b.Locations, r.doc.Clone())
		err = add()
	}
	// Permits in index order (permitLess), so an Import appends them to
	// its B-trees (import.go).
	live := make([]*cpermit, 0, len(d.permits.rows))
	for id, r := range d.permits.rows {
		if err != nil {
			return err
		}
		if r.deleted {
			tomb(readmodel.KindPermit, id, r.version)
			continue
		}
		live = append(live, r.doc)
	}
	slices.SortFunc(live, func(a, b *cpermit) int {
		if permitLess(a, b) {
			return -1
		}
		if permitLess(b, a) {
			return 1
		}
		return 0
	})
	for _, c := range live {
		if err != nil {
			return err
		}
		b.Permits = append(b.Permits, d.expandPermit(c))
		err = add()
	}
	for _, e := range d.props.m {
		if err != nil {
			return err
		}
		switch e.state {
		case propLive:
			b.Properties = append(b.Properties, d.expandProperty(e))
			err = add()
		case propDeleted:
			tomb(readmodel.KindProperty, d.propString(e.ref), e.version)
		}
	}
	for id, r := range d.geoSignals.rows {
		if err != nil {
			return err
		}
		if r.deleted {
			tomb(readmodel.KindGeoSignal, id, r.version)
			continue
		}
		b.GeoSignals = append(b.GeoSignals, r.doc.Clone())
		err = add()
	}
	for id, r := range d.leads.rows {
		if err != nil {
			return err
		}
		if r.deleted {
			tomb(readmodel.KindLead, id, r.version)
			continue
		}
		b.Leads = append(b.Leads, r.doc.lead.Clone())
		err = add()
	}
	for id, r := range d.catalog.rows {
		if err != nil {
			return err
		}
		if r.deleted {
			tomb(readmodel.KindCatalog, id, r.version)
			continue
		}
		b.Catalog = append(b.Catalog, r.doc.Clone())
		err = add()
	}
	if err != nil {
		return err
	}
	return flush()
}
