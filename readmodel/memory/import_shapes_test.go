package memory_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// shapedDocs are permits and properties whose links are one list but for
// their property links, with the shapes a snapshot's decoder gives them
// (readmodel.LinkShapes): permits of shape 1, properties of shape 2.
// Some permits of shape 1 link to a property that is not their own (or
// have none), so the list they share with the others is not theirs once
// compacted: the first permit of the shape is one of them.
func shapedDocs() (permits []readmodel.Permit, props []readmodel.Property, shapes readmodel.LinkShapes) {
	propID := func(i int) string { return fmt.Sprintf("prop_%032x", i+1) }
	links := func(prop string) []readmodel.GeoLink {
		return []readmodel.GeoLink{
			{GeoID: zipA, GeoType: readmodel.GeoZip, Confidence: 0.9, Method: "zip"},
			{GeoID: city, GeoType: readmodel.GeoCity, Confidence: 0.8, Method: "city"},
			{GeoID: prop, GeoType: readmodel.GeoProperty, Confidence: 1, Method: "address"},
			{GeoID: state, GeoType: readmodel.GeoState, Confidence: 1, Method: "state"},
		}
	}
	for i := range 40 {
		p := readmodel.Permit{
			PermitID: fmt.Sprintf("src:%d", i), PermitNumber: fmt.Sprint(i), Source: "src", Status: "Issued",
			IssueDate: "2025-01-02", Address: readmodel.Address{Zipcode: "98101", City: "Seattle", State: "WA"},
			PropertyID: propID(i % 10), Version: 1,
		}
		p.GeoLinks = links(p.PropertyID)
		switch i % 4 {
		case 0: // a link to another document's property
			p.GeoLinks = links(propID(i%10 + 1))
		case 1: // no property of its own
			p.PropertyID = ""
		}
		permits = append(permits, p)
		shapes.Permits = append(shapes.Permits, 1)
	}
	for i := range 10 {
		pr := readmodel.Property{
			PropertyID: propID(i), CanonicalAddress: fmt.Sprintf("%d MAIN ST, SEATTLE, WA 98101", i+1),
			NormalizedAddress: fmt.Sprintf("%d MAIN ST", i+1), City: "Seattle", State: "WA", Zipcode: "98101", Version: 1,
		}
		pr.GeoLinks = []readmodel.GeoLink{ // not the permits' list
			{GeoID: pr.PropertyID, GeoType: readmodel.GeoProperty, Confidence: 1, Method: "self"},
			{GeoID: zipA, GeoType: readmodel.GeoZip, Confidence: 1, Method: "zip"},
		}
		props = append(props, pr)
		shapes.Properties = append(shapes.Properties, 2)
	}
	return permits, props, shapes
}

// An Import given the shapes of its documents' links (AddShaped, as a
// snapshot load does) holds the same state as one without them, on both
// sides: a document whose property link is not to its own property keeps
// that link, though another document of its shape links to its own; and
// shapes that do not match a batch's documents are ignored.
func TestImportShapesKeepEveryLink(t *testing.T) {
	ctx := context.Background()
	permits, props, shapes := shapedDocs()
	applied := newStore(t)
	apply(t, applied, readmodel.Batch{Permits: permits, Properties: props})
	want, err := applied.Digest(ctx)
	require.NoError(t, err)

	for name, add := range map[string]func(add func(readmodel.Batch, *readmodel.LinkShapes)){
		"one batch": func(add func(readmodel.Batch, *readmodel.LinkShapes)) {
			add(readmodel.Batch{Permits: permits, Properties: props}, &shapes)
		},
		"batches, a shape seen again in a later one": func(add func(readmodel.Batch, *readmodel.LinkShapes)) {
			add(readmodel.Batch{Permits: permits[:7]}, &readmodel.LinkShapes{Permits: shapes.Permits[:7]})
			add(readmodel.Batch{Permits: permits[7:]}, &readmodel.LinkShapes{Permits: shapes.Permits[7:]})
			add(readmodel.Batch{Properties: props}, &readmodel.LinkShapes{Properties: shapes.Properties})
		},
		// Shapes of the wrong length, if they were used, would give the
		// documents of the next batch the other kind's list.
		"permit shapes of the wrong length": func(add func(readmodel.Batch, *readmodel.LinkShapes)) {
			add(readmodel.Batch{Permits: permits}, &readmodel.LinkShapes{Permits: slices.Repeat([]uint32{2}, len(permits)-1)})
			add(readmodel.Batch{Properties: props}, &readmodel.LinkShapes{Properties: shapes.Properties})
		},
		"property shapes of the wrong length": func(add func(readmodel.Batch, *readmodel.LinkShapes)) {
			add(readmodel.Batch{Properties: props}, &readmodel.LinkShapes{Properties: slices.Repeat([]uint32{1}, len(props)+1)})
			add(readmodel.Batch{Permits: permits}, &readmodel.LinkShapes{Permits: shapes.Permits})
		},
	} {
		t.Run(name, func(t *testing.T) {
			imported := newStore(t)
			im := imported.NewImport()
			require.NoError(t, applied.Export(ctx, 100, func(b readmodel.Batch) error {
				// The locations only: the documents come with their shapes.
				return im.Add(readmodel.Batch{Locations: b.Locations})
			}))
			add(func(b readmodel.Batch, s *readmodel.LinkShapes) { require.NoError(t, im.AddShaped(b, s)) })
			require.NoError(t, im.Commit())
			got, err := imported.Digest(ctx)
			require.NoError(t, err)
			require.Equal(t, want, got, "the first side")
			links := map[string][]readmodel.GeoLink{}
			require.NoError(t, imported.Export(ctx, 100, func(b readmodel.Batch) error {
				for _, p := range b.Permits {
					links[p.PermitID] = p.GeoLinks
				}
				for _, p := range b.Properties {
					links[p.PropertyID] = p.GeoLinks
				}
				return nil
			}))
			for _, p := range permits {
				require.Equal(t, p.GeoLinks, links[p.PermitID], p.PermitID)
			}
			for _, p := range props {
				require.Equal(t, p.GeoLinks, links[p.PropertyID], p.PropertyID)
			}
			imported.Settle()
			// A write makes the second side the active one.
			next := permits[2]
			next.Version++
			b := readmodel.Batch{Permits: []readmodel.Permit{next}}
			apply(t, imported, b)
			again := newStore(t)
			apply(t, again, readmodel.Batch{Permits: permits, Properties: props})
			apply(t, again, b)
			sameDigest(t, again, imported, "the second side")
		})
	}
}
