package memory_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
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

// deepCopy is b with arrays of its own for what an Import lends back.
func deepCopy(b readmodel.Batch) readmodel.Batch {
	c := b
	c.Permits = make([]readmodel.Permit, len(b.Permits))
	for i, p := range b.Permits {
		c.Permits[i] = p.Clone()
	}
	c.Properties = make([]readmodel.Property, len(b.Properties))
	for i, p := range b.Properties {
		c.Properties[i] = p.Clone()
	}
	return c
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
	apply(t, applied, readmodel.Batch{Permits: permits, Properties: props})
	during := readmodel.Batch{Permits: filterPermits(rand.New(rand.NewPCG(11, 12)), 5)}
	for i := range during.Permits {
		during.Permits[i].PermitID += "-during"
	}

	imported := newStore(t)
	im := imported.NewImport()
	given, back := 0, 0
	add := func(b readmodel.Batch, s *readmodel.LinkShapes) {
		c := deepCopy(b)
		given++
		require.NoError(t, im.AddLent(c, s, func() { back++; scribble(&c) }))
	}
	require.NoError(t, applied.Export(ctx, 40, func(b readmodel.Batch) error {
		add(b, nil)
		return nil
	}))
	add(readmodel.Batch{Permits: permits, Properties: props}, &shapes) // again, shaped: the same versions
	_, err := imported.Apply(ctx, during)                              // journalled
	require.NoError(t, err)
	require.Error(t, im.Add(readmodel.Batch{}), "an Import of lent batches takes no kept one")
	require.NoError(t, im.Commit())
	require.Equal(t, given, back, "every batch given back")
	apply(t, applied, during)

	same := func(msg string) {
		t.Helper()
		sameDigest(t, applied, imported, msg)
		for _, geo := range []string{zipA, zipB, city} {
			q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geo), Limit: 50}
			require.Equal(t, walk(t, applied, q, nil), walk(t, imported, q, nil), "%s: %s", msg, geo)
		}
	}
	same("the first side")
	imported.Settle()
	same("settled: the second side")
	b := readmodel.Batch{Permits: []readmodel.Permit{permits[3]}}
	b.Permits[0].Version, b.Permits[0].Status = 7, "Withdrawn"
	apply(t, applied, b)
	apply(t, imported, b) // written to both sides
	same("after a write")
}

// An Import takes every batch lent or none.
func TestImportLentOrKept(t *testing.T) {
	s := newStore(t)
	im := s.NewImport()
	require.NoError(t, im.Add(readmodel.Batch{}))
	require.Error(t, im.AddLent(readmodel.Batch{}, nil, func() {}))
	im.Abort()
}
