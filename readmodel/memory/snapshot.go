package memory

import (
	"context"

	"github.com/permitd/permitd/readmodel"
)

// Export hands every live document and every tombstone (as a Delete at
// its version) to fn in batches of at most size items, under the read
// active side, as one reader: the batches together are one consistent
// state, and applying them to an empty Store rebuilds the same contents
// (the same Digest). It is the one door snapshots use into the Store
// (indexer/snapshot). Readers never wait for it, nor does the writer,
// but while another Export reads the other side. An error from fn (or
// ctx ending) stops it and is returned. fn may keep the batches: they
// are copies.
// An open replay ends first (EndReplay): what Apply took must be in what
// a snapshot saves, with the offsets taken before the export. Apply goes
// on meanwhile, visible once the export ends (export_hold.go).
func (s *Store) Export(ctx context.Context, size int, fn func(readmodel.Batch) error) error {
	s.EndReplay()
	d, c := s.beginExport()
	defer s.endExport(d, c)
	return d.export(ctx, size, fn)
}

// export is Export of one side, which no writer may change meanwhile.
func (d *side) export(ctx context.Context, size int, fn func(readmodel.Batch) error) error {
	if size < 1 {
		size = 4096
	}
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
	tomb := func(k readmodel.Kind, id string, v int64) error {
		b.Deletes = append(b.Deletes, readmodel.Delete{Kind: k, ID: id, Version: v})
		return add()
	}
	if err := exportRows(d.locations.table, readmodel.KindLocation, tomb, func(l *readmodel.Location) error {
		b.Locations = append(b.Locations, l.Clone())
		return add()
	}); err != nil {
		return err
	}
	// Permits in index order (permitLess), so an Import appends them to
	// its B-trees (import.go).
	live := make([]*cpermit, 0, len(d.permits.rows))
	if err := exportRows(d.permits, readmodel.KindPermit, tomb, func(c *cpermit) error {
		live = append(live, c)
		return nil
	}); err != nil {
		return err
	}
	sortPermits(live)
	for i, c := range live {
		if b.Permits == nil {
			b.Permits = make([]readmodel.Permit, 0, min(size-n, len(live)-i))
		}
		b.Permits = append(b.Permits, d.expandPermit(c))
		if err := add(); err != nil {
			return err
		}
	}
	seen := 0
	for _, e := range d.props.m {
		var err error
		seen++
		switch e.state {
		case propLive:
			if b.Properties == nil {
				b.Properties = make([]readmodel.Property, 0, min(size-n, len(d.props.m)-seen+1))
			}
			b.Properties = append(b.Properties, d.expandProperty(e))
			err = add()
		case propDeleted:
			err = tomb(readmodel.KindProperty, d.propString(e.ref), e.version)
		}
		if err != nil {
			return err
		}
	}
	if err := exportRows(d.geoSignals, readmodel.KindGeoSignal, tomb, func(g readmodel.GeoSignal) error {
		b.GeoSignals = append(b.GeoSignals, g.Clone())
		return add()
	}); err != nil {
		return err
	}
	// Leads in event-date order (dateLess): an Import then appends each
	// to its anchors' date trees and fills their day cells a day at a
	// time, where the table's order scattered every insert (the second
	// side's lead build took about 3x the first side's CPU).
	leads := make([]*leadRec, 0, d.leads.live)
	if err := exportRows(d.leads, readmodel.KindLead, tomb, func(l *leadRec) error {
		leads = append(leads, l)
		return nil
	}); err != nil {
		return err
	}
	sortLeads(leads)
	for i, l := range leads {
		if b.Leads == nil {
			b.Leads = make([]readmodel.Lead, 0, min(size-n, len(leads)-i))
		}
		b.Leads = append(b.Leads, l.lead.Clone())
		if err := add(); err != nil {
			return err
		}
	}
	if err := exportRows(d.catalog, readmodel.KindCatalog, tomb, func(c readmodel.CatalogEntry) error {
		b.Catalog = append(b.Catalog, c.Clone())
		return add()
	}); err != nil {
		return err
	}
	return flush()
}

// exportRows hands each tombstone of t to tomb and each live document to
// doc, stopping at the first error.
func exportRows[T any](t *table[T], kind readmodel.Kind, tomb func(readmodel.Kind, string, int64) error, doc func(T) error) error {
	for id, r := range t.rows {
		var err error
		if r.deleted {
			err = tomb(kind, id, r.version)
		} else {
			err = doc(r.doc)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
