package snapshot_test

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/indexer/snapshot"
	"github.com/permitd/permitd/pipeline/gen"
	"github.com/permitd/permitd/pipeline/signals"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

var asOf = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// filled is a store holding generated permits, properties, leads, geo
// signals, catalog entries, a few locations and tombstones.
func filled(t *testing.T) *memory.Store {
	t.Helper()
	return filledWith(t, 400)
}

// filledWith is filled with n generated permits.
func filledWith(t testing.TB, n int) *memory.Store {
	t.Helper()
	store := memory.New(memory.Params{})
	// Geo signals of ZIPs and cities no location here names are dead
	// letters; the rest is what a snapshot must keep.
	ix, err := indexer.New(indexer.Params{Writer: store, DeadLetter: func(context.Context, indexer.Message, error) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, indexer.NewFeed(ix, 512).Run(context.Background(), func(ctx context.Context, emit indexer.Emit) error {
		e := indexer.Envelopes(emit)
		state := events.GeoID("state", "WA")
		for _, env := range []struct {
			typ  events.Type
			id   string
			v    int64
			data any
		}{
			{events.LocationUpserted, state, 1, events.Location{GeoType: "state", Name: "Washington", DisplayName: "Washington", State: "WA", StateName: "Washington", Lat: 47, Lon: -120}},
			{events.LocationUpserted, "gone", 1, events.Location{GeoType: "city", Name: "Gone", DisplayName: "Gone, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -120}},
			{events.LocationDeleted, "gone", 2, nil},
			{events.PermitDeleted, "synthetic:never", 5, nil},
		} {
			ev, err := events.New(env.typ, env.id, env.v, asOf, "test", env.data)
			require.NoError(t, err)
			require.NoError(t, e(ev))
		}
		for _, st := range []string{"AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WV", "WI", "WY", "PR"} {
			ev, err := events.New(events.LocationUpserted, events.GeoID("state", st), 1, asOf, "test",
				events.Location{GeoType: "state", Name: st, DisplayName: st, State: st, StateName: st, Lat: 40, Lon: -100})
			require.NoError(t, err)
			require.NoError(t, e(ev))
		}
		sig, err := signals.New(signals.Params{AsOf: asOf}, e)
		require.NoError(t, err)
		_, err = gen.Generate(ctx, gen.Params{Permits: n, Seed: 3, Now: asOf}, func(env events.Envelope) error {
			if err := e(env); err != nil {
				return err
			}
			return sig.Add(env)
		})
		require.NoError(t, err)
		_, err = sig.Finish(ctx)
		return err
	}))
	counts, err := store.Counts(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(n), counts[readmodel.KindPermit])
	require.NotZero(t, counts[readmodel.KindLead])
	require.NotZero(t, counts[readmodel.KindGeoSignal])
	return store
}

// exported collects every document and tombstone of a store by kind and
// id, for an exact comparison.
func exported(t *testing.T, s *memory.Store) map[string]any {
	t.Helper()
	out := map[string]any{}
	require.NoError(t, s.Export(context.Background(), 100, func(b readmodel.Batch) error {
		for _, d := range b.Locations {
			out["location "+d.GeoID] = d
		}
		for _, d := range b.Permits {
			out["permit "+d.PermitID] = d
		}
		for _, d := range b.Properties {
			out["property "+d.PropertyID] = d
		}
		for _, d := range b.GeoSignals {
			out["geo_signal "+d.ID()] = d
		}
		for _, d := range b.Leads {
			out["lead "+d.LeadID] = d
		}
		for _, d := range b.Catalog {
			out["catalog "+d.ID()] = d
		}
		for _, d := range b.Deletes {
			out["tombstone "+string(d.Kind)+" "+d.ID] = d
		}
		return nil
	}))
	return out
}

func write(t *testing.T, s *memory.Store, path string, offsets snapshot.Offsets) snapshot.Info {
	t.Helper()
	info, err := snapshot.Write(path, offsets, func(fn func(readmodel.Batch) error) error {
		return s.Export(context.Background(), 128, fn)
	})
	require.NoError(t, err)
	return info
}

// load imports the snapshot at path into a new store, as serve does.
func load(path string) (*memory.Store, snapshot.Info, error) {
	s := memory.New(memory.Params{})
	im := s.NewImport()
	info, again, err := snapshot.LoadLent(path, im.Reserve, im.AddLent)
	if err != nil {
		im.Abort()
		return s, info, err
	}
	im.SecondFrom(again)
	return s, info, im.Commit()
}

// applied loads the snapshot at path with Apply, batch by batch.
func applied(t *testing.T, path string) *memory.Store {
	s := memory.New(memory.Params{})
	_, err := snapshot.Load(path, func(b readmodel.Batch) error {
		_, err := s.Apply(context.Background(), b)
		return err
	})
	require.NoError(t, err)
	return s
}

// A snapshot loads back exactly: every document, every tombstone, the
// digest and the offsets.
func TestRoundTrip(t *testing.T) {
	src := filled(t)
	path := filepath.Join(t.TempDir(), "memory.snapshot")
	offsets := snapshot.Offsets{"permitd.permits.v1": {0: 120, 3: 7}, "permitd.locations.v1": {1: 9}}
	info := write(t, src, path, offsets)
	require.Positive(t, info.Bytes)

	got, linfo, err := load(path)
	require.NoError(t, err)
	require.Equal(t, offsets, linfo.Offsets)
	require.Equal(t, info.Documents, linfo.Documents)
	want := exported(t, src)
	require.Contains(t, want, "tombstone location gone")
	require.Contains(t, want, "tombstone permit synthetic:never")
	require.Equal(t, want, exported(t, got))
	d1, _ := src.Digest(context.Background())
	d2, _ := got.Digest(context.Background())
	require.Equal(t, d1, d2)
	// The import's bulk-loaded indexes answer as the ones Apply builds
	// and as the source's.
	byApply := applied(t, path)
	require.Equal(t, want, exported(t, byApply))
	found := 0
	for _, st := range []string{"WA", "CA", "TX", "NY", "FL"} {
		for _, q := range []readmodel.PermitQuery{
			{Geo: readmodel.ParseGeoRef(events.GeoID("state", st)), Limit: 50},
			{Geo: readmodel.ParseGeoRef(events.GeoID("state", st)), Limit: 50, Desc: true},
		} {
			a, errA := src.SearchPermits(context.Background(), q)
			b, errB := got.SearchPermits(context.Background(), q)
			c, errC := byApply.SearchPermits(context.Background(), q)
			require.Equal(t, errA, errB)
			require.Equal(t, errA, errC)
			require.Equal(t, a, b, "state %s", st)
			require.Equal(t, a, c, "state %s", st)
			found += len(a.Permits)
		}
	}
	require.Positive(t, found)
	// A tombstone still wins over an older upsert after the load.
	res, err := got.Apply(context.Background(), readmodel.Batch{Locations: []readmodel.Location{{GeoID: "gone", GeoType: readmodel.GeoCity, Name: "G", DisplayName: "G", State: "WA", Version: 1}}})
	require.NoError(t, err)
	require.Equal(t, 1, res.Stale)
}

// LoadShaped hands apply a shape for every permit and property, and the
// documents of one shape have the same links but for their property
// links' GeoIDs (readmodel.LinkShapes): what an Import that converts a
// list once per shape relies on. Most documents share their shape.
func TestLoadShapedShapes(t *testing.T) {
	src := filled(t)
	path := filepath.Join(t.TempDir(), "memory.snapshot")
	write(t, src, path, nil)
	template := func(ls []readmodel.GeoLink) []readmodel.GeoLink {
		out := slices.Clone(ls)
		for i := range out {
			if out[i].GeoType == readmodel.GeoProperty {
				out[i].GeoID = ""
			}
		}
		return out
	}
	seen := map[uint32][]readmodel.GeoLink{}
	docs, shared := 0, 0
	check := func(shape uint32, links []readmodel.GeoLink) {
		docs++
		if shape == 0 {
			return
		}
		if first, ok := seen[shape]; ok {
			require.Equal(t, first, template(links), "shape %d", shape)
			shared++
			return
		}
		seen[shape] = template(links)
	}
	_, err := snapshot.LoadShaped(path, nil, func(b readmodel.Batch, shapes *readmodel.LinkShapes) error {
		require.Len(t, shapes.Permits, len(b.Permits))
		require.Len(t, shapes.Properties, len(b.Properties))
		for i, p := range b.Permits {
			check(shapes.Permits[i], p.GeoLinks)
		}
		for i, p := range b.Properties {
			check(shapes.Properties[i], p.GeoLinks)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, shared, docs/2, "%d of %d documents share a shape", shared, docs)
}

// Corrupt, truncated and old-format files are refused before anything is
// applied; a temporary file left by a crash during a write is ignored and
// the previous snapshot loads.
func TestRefusesWhatItCannotTrust(t *testing.T) {
	src := filled(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "memory.snapshot")
	write(t, src, path, snapshot.Offsets{"t": {0: 1}})
	good, err := os.ReadFile(path)
	require.NoError(t, err)

	_, _, err = load(filepath.Join(dir, "absent"))
	require.ErrorIs(t, err, snapshot.ErrNone)

	for name, tc := range map[string]struct {
		mutate func([]byte) []byte
		want   error
	}{
		"flipped byte":    {func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }, snapshot.ErrCorrupt},
		"truncated":       {func(b []byte) []byte { return b[:len(b)*2/3] }, snapshot.ErrCorrupt},
		"no trailer":      {func(b []byte) []byte { return b[:len(b)-4] }, snapshot.ErrCorrupt},
		"trailer flipped": {func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, snapshot.ErrCorrupt},
		"header only":     {func(b []byte) []byte { return b[:10] }, snapshot.ErrCorrupt},
		"old format":      {func(b []byte) []byte { binary.BigEndian.PutUint32(b[12:], 0); return b }, snapshot.ErrFormat},
		"version 2":       {func(b []byte) []byte { binary.BigEndian.PutUint32(b[12:], 2); return b }, snapshot.ErrFormat},
		// A version 3 file (no string table) with a right checksum: the
		// version alone refuses it, before its frames are read.
		"version 3": {func(b []byte) []byte { return resummed(b, 3) }, snapshot.ErrFormat},
		// A version 4 file has no counts: refused by its version too.
		"version 4": {func(b []byte) []byte { return resummed(b, 4) }, snapshot.ErrFormat},
		// Version 5 wrote every geo link list out: refused by its version.
		"version 5":       {func(b []byte) []byte { return resummed(b, 5) }, snapshot.ErrFormat},
		"version 7":       {func(b []byte) []byte { return resummed(b, 7) }, snapshot.ErrFormat},
		"version 6 again": {func(b []byte) []byte { return resummed(b, 6) }, nil},
		"not a snapshot":  {func(b []byte) []byte { return []byte(`{"hello":"world"} and more bytes than a header`) }, snapshot.ErrFormat},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, tc.mutate(append([]byte(nil), good...)), 0o600))
			applied := 0
			_, err := snapshot.Load(p, func(readmodel.Batch) error { applied++; return nil })
			if tc.want == nil { // the mutation itself is right
				require.NoError(t, err)
				require.Positive(t, applied)
				return
			}
			require.ErrorIs(t, err, tc.want)
			require.Zero(t, applied, "nothing applied from a refused snapshot")
		})
	}

	// A crash while writing leaves a temporary file beside the snapshot.
	require.NoError(t, os.WriteFile(path+".tmp-123", good[:len(good)/2], 0o600))
	got, _, err := load(path)
	require.NoError(t, err)
	require.Equal(t, exported(t, src), exported(t, got))
}

// The counts before the checksum are the frames' documents and
// tombstones by kind; LoadSized hands them over before the first batch,
// and a file whose counts disagree with its frames is corrupt.
func TestCounts(t *testing.T) {
	src := filled(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "memory.snapshot")
	info := write(t, src, path, snapshot.Offsets{"t": {0: 1}})
	want := snapshot.Counts{}
	for key := range exported(t, src) {
		kind, _, _ := strings.Cut(strings.TrimPrefix(key, "tombstone "), " ")
		switch kind {
		case "lead":
			kind = string(readmodel.KindLead)
		case "geo_signal":
			kind = string(readmodel.KindGeoSignal)
		}
		want[readmodel.Kind(kind)]++
	}
	require.Positive(t, want[readmodel.KindPermit])
	require.Positive(t, want[readmodel.KindLocation])
	for k, n := range info.Counts {
		if n == 0 {
			delete(info.Counts, k)
		}
	}
	require.Equal(t, want, info.Counts, "Write counts what it exports")

	var reserved snapshot.Counts
	batches := 0
	linfo, err := snapshot.LoadSized(path, func(c snapshot.Counts) {
		require.Zero(t, batches, "the counts come before the first batch")
		reserved = c
	}, func(readmodel.Batch) error { batches++; return nil })
	require.NoError(t, err)
	for k, n := range want {
		require.Equal(t, n, reserved[k], "kind %s", k)
		require.Equal(t, n, linfo.Counts[k], "kind %s", k)
	}

	// Counts that disagree with the frames, under a right checksum.
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	bad := append([]byte(nil), good...)
	permits := len(bad) - 4 - 6*8 + 8 // the second count: permits
	binary.BigEndian.PutUint64(bad[permits:], uint64(want[readmodel.KindPermit]+1))
	p := filepath.Join(dir, "miscounted")
	require.NoError(t, os.WriteFile(p, resummed(bad, snapshot.FormatVersion), 0o600))
	_, err = snapshot.Load(p, func(readmodel.Batch) error { return nil })
	require.ErrorIs(t, err, snapshot.ErrCorrupt)
	require.ErrorContains(t, err, "permit")

	// A store reserved for the counts loads the same state.
	got, _, err := load(path)
	require.NoError(t, err)
	require.Equal(t, exported(t, src), exported(t, got))
}

// resummed is snapshot file b with its version set to v and its CRC-32C
// trailer made right again.
func resummed(b []byte, v uint32) []byte {
	binary.BigEndian.PutUint32(b[12:], v)
	body := b[:len(b)-4]
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// LoadLent gives the batches LoadShaped gives, with their shapes, and
// decodes later batches into the arrays of those given back: a batch
// written over after done changes none that follows, and one not given
// back is not decoded into.
func TestLoadLent(t *testing.T) {
	src := filled(t)
	path := filepath.Join(t.TempDir(), "memory.snapshot")
	_, err := snapshot.Write(path, nil, func(fn func(readmodel.Batch) error) error {
		return src.Export(context.Background(), 3, fn) // many small batches
	})
	require.NoError(t, err)
	type shaped struct {
		b      readmodel.Batch
		shapes readmodel.LinkShapes
	}
	var want []shaped
	_, err = snapshot.LoadShaped(path, nil, func(b readmodel.Batch, s *readmodel.LinkShapes) error {
		want = append(want, shaped{b, *s})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(want), 10)

	var i, reused int
	given := map[*readmodel.Permit]bool{} // first elements of the permit arrays given back
	var held []*readmodel.Permit          // never given back
	heldAt := map[int]readmodel.Batch{}
	_, again, err := snapshot.LoadLent(path, nil, func(b readmodel.Batch, s *readmodel.LinkShapes, done func()) error {
		require.Equal(t, want[i].b, b, "batch %d", i)
		require.Equal(t, want[i].shapes, *s, "batch %d", i)
		i++
		if len(b.Permits) == 0 {
			done()
			return nil
		}
		p := &b.Permits[0]
		require.NotContains(t, held, p, "batch %d is decoded into one not given back", i)
		if given[p] {
			reused++
		}
		if i%5 == 0 {
			held = append(held, p)
			heldAt[i-1] = b
			return nil
		}
		given[p] = true
		scribble(&b)
		done()
		done() // once is what counts
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, len(want), i)
	require.Positive(t, reused, "later batches are decoded into the arrays given back")
	// Again: the same batches once more, from the file as it was loaded
	// although a new snapshot has replaced it since.
	_, err = snapshot.Write(path, nil, func(fn func(readmodel.Batch) error) error { return nil })
	require.NoError(t, err)
	j := 0
	require.NoError(t, again.Run(func(b readmodel.Batch, s *readmodel.LinkShapes, done func()) error {
		require.Equal(t, want[j].b, b, "again, batch %d", j)
		require.Equal(t, want[j].shapes, *s, "again, batch %d", j)
		j++
		scribble(&b)
		done()
		return nil
	}))
	require.Equal(t, len(want), j)
	require.NoError(t, again.Close(), "closing twice is harmless")
	require.NotEmpty(t, heldAt)
	for k, b := range heldAt {
		require.Equal(t, want[k].b, b, "batch %d, not given back, as it was given", k)
	}
}

// scribble overwrites b's permits and properties and their links in
// place, as a destination may once it has given them back.
func scribble(b *readmodel.Batch) {
	junk := readmodel.GeoLink{GeoID: "zip:00000", GeoType: readmodel.GeoZip, Method: "junk"}
	for i := range b.Permits {
		for j := range b.Permits[i].GeoLinks {
			b.Permits[i].GeoLinks[j] = junk
		}
		b.Permits[i] = readmodel.Permit{PermitID: "junk", Version: 99}
	}
	for i := range b.Properties {
		for j := range b.Properties[i].GeoLinks {
			b.Properties[i].GeoLinks[j] = junk
		}
		b.Properties[i] = readmodel.Property{PropertyID: "junk", Version: 99}
	}
}

// Again fails, with ErrCorrupt, when the file it keeps open was changed
// in place since the load (Write never does: it renames a new file over
// the path); an Again not run is closed by Close.
func TestAgainRefusesAChangedFile(t *testing.T) {
	src := filled(t)
	path := filepath.Join(t.TempDir(), "memory.snapshot")
	write(t, src, path, nil)
	nop := func(_ readmodel.Batch, _ *readmodel.LinkShapes, done func()) error { done(); return nil }
	_, again, err := snapshot.LoadLent(path, nil, nop)
	require.NoError(t, err)
	require.NoError(t, again.Close())

	for name, mutate := range map[string]func([]byte) []byte{
		"flipped byte":  func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b },
		"flipped count": func(b []byte) []byte { b[len(b)-5] ^= 0x01; return b },
		"truncated":     func(b []byte) []byte { return b[:len(b)*2/3] },
	} {
		t.Run(name, func(t *testing.T) {
			_, again, err := snapshot.LoadLent(path, nil, nop)
			require.NoError(t, err)
			good, err := os.ReadFile(path)
			require.NoError(t, err)
			defer func() { require.NoError(t, os.WriteFile(path, good, 0o600)) }()
			require.NoError(t, os.WriteFile(path, mutate(slices.Clone(good)), 0o600)) // the same file, in place
			require.ErrorIs(t, again.Run(nop), snapshot.ErrCorrupt)
		})
	}
}

// TestCheckWritable: a path Write could never write is named at start (it
// used to fail at every interval, logged, while the process ran on); a
// writable one is left as it was.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, snapshot.CheckWritable(filepath.Join(dir, "snap.bin")))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the check leaves nothing behind")

	require.EqualError(t, snapshot.CheckWritable(dir), "snapshot: "+dir+" is a directory")
	err = snapshot.CheckWritable(filepath.Join(dir, "missing", "snap.bin"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "snapshot: cannot write beside "+filepath.Join(dir, "missing", "snap.bin"))

}
