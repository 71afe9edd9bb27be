package memory_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// scribble overwrites, in place, the arrays an Import lends back (its
// permits and properties and their geo links), as snapshot.LoadLent
// does when it decodes the next batches into them.
func scribble(b *readmodel.Batch) {
	junk := readmodel.GeoLink{GeoID: "zip:00000", GeoType: readmodel.GeoZip, Confidence: 0.1, Method: "junk"}
	for i := range b.Permits {
		for j := range b.Permits[i].GeoLinks {
			b.Permits[i].GeoLinks[j] = junk
		}
		b.Permits[i] = readmodel.Permit{PermitID: "junk", Status: "junk", PropertyID: "junk", Version: 99}
	}
	for i := range b.Properties {
		for j := range b.Properties[i].GeoLinks {
			b.Properties[i].GeoLinks[j] = junk
		}
		b.Properties[i] = readmodel.Property{PropertyID: "junk", CanonicalAddress: "junk", Version: 99}
	}
}

// deepCopy is b with documents of its own: an Import takes over the
// documents of a batch but for those it lends back.
func deepCopy(b readmodel.Batch) readmodel.Batch {
	c := b
	c.Locations = clones(b.Locations, readmodel.Location.Clone)
	c.Permits = clones(b.Permits, readmodel.Permit.Clone)
	c.Properties = clones(b.Properties, readmodel.Property.Clone)
	c.GeoSignals = clones(b.GeoSignals, readmodel.GeoSignal.Clone)
	c.Leads = clones(b.Leads, readmodel.Lead.Clone)
	c.Catalog = clones(b.Catalog, readmodel.CatalogEntry.Clone)
	c.Deletes = append([]readmodel.Delete(nil), b.Deletes...)
	return c
}

func clones[T any](s []T, clone func(T) T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[i] = clone(v)
	}
	return out
}

// An Import of lent batches (AddLent, as a snapshot's load gives them)
// copies what it keeps of the permits, the properties and their links
// before it gives them back: written over once given back, they change
// neither side (the first, then the second: a copy of the first), nor
// what a write during the Import added, nor a page of permits.
func TestImportLentBatches(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 10))
	permits, props, shapes := shapedDocs()
	applied := newStore(t)
	apply(t, applied, readmodel.Batch{Permits: filterPermits(r, 300)})
	during := readmodel.Batch{Permits: filterPermits(rand.New(rand.NewPCG(11, 12)), 5)}
	for i := range during.Permits {
		during.Permits[i].PermitID += "-during"
	}

	var batches []shapedBatch
	require.NoError(t, applied.Export(ctx, 40, func(b readmodel.Batch) error {
		batches = append(batches, shapedBatch{b: b})
		return nil
	}))
	apply(t, applied, readmodel.Batch{Permits: permits, Properties: props})
	batches = append(batches, shapedBatch{readmodel.Batch{Permits: permits, Properties: props}, &shapes}) // then shaped ones: each id once, as in a snapshot
	apply(t, applied, during)
	// A source that gives a permit twice (which the first side's batches
	// did not): the second side is refused, and is then a copy.
	twice := append(append([]shapedBatch(nil), batches...), shapedBatch{b: readmodel.Batch{Permits: permits[:1]}})
	for name, src := range map[string]*replaySource{
		"second side a copy of the first":                      nil,
		"second side from its source":                          {batches: batches},
		"second side a copy after its source failed":           {batches: batches, failAt: len(batches) / 2},
		"second side a copy after its source gave an id twice": {batches: twice},
	} {
		t.Run(name, func(t *testing.T) { importLent(t, applied, batches, during, src, permits) })
	}
}

type shapedBatch struct {
	b      readmodel.Batch
	shapes *readmodel.LinkShapes
}

// replaySource is a memory.SecondSource that hands the batches again,
// lent (each a copy written over once given back), failing before
// batch failAt when failAt > 0.
type replaySource struct {
	batches     []shapedBatch
	failAt      int
	given, back int
	ran, closed bool
}

func (r *replaySource) Run(apply memory.LentApply) error {
	r.ran = true
	for i, sb := range r.batches {
		if r.failAt > 0 && i == r.failAt {
			return errors.New("the file changed")
		}
		c := deepCopy(sb.b)
		r.given++
		if err := apply(c, sb.shapes, func() { r.back++; scribble(&c) }); err != nil {
			return err
		}
	}
	return nil
}

func (r *replaySource) Close() error { r.closed = true; return nil }

func importLent(t *testing.T, applied *memory.Store, batches []shapedBatch, during readmodel.Batch, src *replaySource, permits []readmodel.Permit) {
	ctx := context.Background()
	imported := newStore(t)
	im := imported.NewImport()
	given, back := 0, 0
	for _, sb := range batches {
		c := deepCopy(sb.b)
		given++
		require.NoError(t, im.AddLent(c, sb.shapes, func() { back++; scribble(&c) }))
	}
	_, err := imported.Apply(ctx, during) // journalled
	require.NoError(t, err)
	require.Error(t, im.Add(readmodel.Batch{}), "an Import of lent batches takes no kept one")
	if src != nil {
		im.SecondFrom(src)
	}
	require.NoError(t, im.Commit())
	require.Equal(t, given, back, "every batch given back")

	same := func(msg string) {
		t.Helper()
		sameDigest(t, applied, imported, msg)
		for _, geo := range []string{zipA, zipB, city} {
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 50}
			require.Equal(t, walk(t, applied, q, nil), walk(t, imported, q, nil), "%s: %s", msg, geo)
		}
	}
	// The write below goes to a copy of applied, which the other cases
	// compare with too.
	mine := newStore(t)
	require.NoError(t, applied.Export(ctx, 100, func(b readmodel.Batch) error {
		_, err := mine.Apply(ctx, b)
		return err
	}))
	same("the first side")
	imported.Settle()
	same("settled: the second side")
	if src != nil {
		require.True(t, src.ran && src.closed, "the source run and closed")
		require.Equal(t, src.given, src.back, "every batch of the source given back")
	}
	b := readmodel.Batch{Permits: []readmodel.Permit{permits[3]}}
	b.Permits[0].Version, b.Permits[0].Status = 7, "Withdrawn"
	applied = mine
	apply(t, applied, b)
	apply(t, imported, b) // written to both sides
	same("after a write")
}

// Lent batches are a snapshot's, which holds each document once: the
// Import stores their permits without looking for the id first, and a
// permit id given twice fails Commit, the Store keeping what it held.
func TestImportLentDuplicateID(t *testing.T) {
	permits := filterPermits(rand.New(rand.NewPCG(13, 14)), 40)
	for _, second := range []bool{false, true} { // in one batch, in another
		s := newStore(t)
		apply(t, s, readmodel.Batch{Permits: permits[30:]})
		im := s.NewImport()
		first := readmodel.Batch{Permits: clones(permits[:20], readmodel.Permit.Clone)}
		again := readmodel.Batch{Permits: clones(permits[5:6], readmodel.Permit.Clone)}
		again.Permits[0].Version++ // a newer version is a duplicate id all the same
		if second {
			require.NoError(t, im.AddLent(first, nil, func() {}))
			require.NoError(t, im.AddLent(again, nil, func() {}))
		} else {
			first.Permits = append(first.Permits, again.Permits...)
			require.NoError(t, im.AddLent(first, nil, func() {}))
		}
		require.ErrorIs(t, im.Commit(), memory.ErrDuplicateID)
		require.Len(t, walk(t, s, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(city), Limit: 100}, nil), 10, "the Store keeps what it held")
	}
}

// An Import takes every batch lent or none.
func TestImportLentOrKept(t *testing.T) {
	s := newStore(t)
	im := s.NewImport()
	require.NoError(t, im.Add(readmodel.Batch{}))
	require.Error(t, im.AddLent(readmodel.Batch{}, nil, func() {}))
	im.Abort()
}
