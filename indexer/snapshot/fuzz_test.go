package snapshot_test

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer/snapshot"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// FuzzLoadChecksummed loads files whose bytes the fuzzer chose, with the
// right checksum appended, as serve loads a snapshot (load: an Import,
// lent batches, the second side from the file again). The checksum
// refuses corruption on disk; this holds the decoder against what a
// checksum cannot: a file a faulty or foreign writer summed right. Serve
// must then refuse it (ErrCorrupt or ErrFormat, or the store's
// ErrDuplicateID: serve logs those and replays everything) or load it,
// and never panic, hang or take memory the file cannot account for. A
// store it loads answers reads.
func FuzzLoadChecksummed(f *testing.F) {
	raw := goodSnapshot(f)
	f.Add(raw[:len(raw)-4]) // the file without its checksum
	f.Add(raw[:len(raw)/2])
	f.Add(raw[:20])

	f.Fuzz(loadChecksummed)
}

// goodSnapshot is the bytes of a snapshot of a small filled store.
func goodSnapshot(f *testing.F) []byte {
	good := filepath.Join(f.TempDir(), "good")
	_, err := snapshot.Write(good, snapshot.Offsets{"t": {0: 7, 3: 9}}, func(fn func(readmodel.Batch) error) error {
		return filledWith(f, 12).Export(context.Background(), 16, fn)
	})
	require.NoError(f, err)
	raw, err := os.ReadFile(good)
	require.NoError(f, err)
	return raw
}

// loadChecksummed writes body and its checksum to a file, loads it as
// serve does, and fails unless the load refuses it as serve expects or
// the loaded store answers reads.
func loadChecksummed(t *testing.T, body []byte) {
	path := filepath.Join(t.TempDir(), "memory.snapshot")
	sum := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
	require.NoError(t, os.WriteFile(path, binary.BigEndian.AppendUint32(append([]byte(nil), body...), sum), 0o600))
	s, _, err := load(path)
	if err != nil {
		if !errors.Is(err, snapshot.ErrCorrupt) && !errors.Is(err, snapshot.ErrFormat) && !errors.Is(err, memory.ErrDuplicateID) {
			t.Fatalf("refused with an error serve does not treat as a refusal: %v", err)
		}
		return
	}
	ctx := context.Background()
	reads := func() {
		_, err := s.Counts(ctx)
		require.NoError(t, err)
		for _, desc := range []bool{false, true} {
			_, err = s.SearchPermits(ctx, readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(events.GeoID("state", "WA")), Desc: desc, Limit: 10})
			if !errors.Is(err, readmodel.ErrNotFound) { // the state's location may be what an edit changed
				require.NoError(t, err)
			}
		}
	}
	reads()
	// The live path over what was loaded: every document written again
	// as a newer version (the copies Export hands out), then deleted.
	var again []readmodel.Batch
	require.NoError(t, s.Export(ctx, 64, func(b readmodel.Batch) error {
		b.Deletes = nil
		again = append(again, b)
		return nil
	}))
	written := func(res readmodel.ApplyResult, err error) {
		var refused *readmodel.ItemErrors
		if !errors.As(err, &refused) {
			require.NoError(t, err)
		}
	}
	for _, b := range again {
		bumpVersions(&b)
		written(s.Apply(ctx, b))
	}
	reads()
	for _, b := range again {
		written(s.Apply(ctx, deletesOf(&b)))
	}
	reads()
}

// eachDoc calls fn with the kind, id and version of every document of b.
func eachDoc(b *readmodel.Batch, fn func(k readmodel.Kind, id string, version *int64)) {
	for i := range b.Locations {
		fn(readmodel.KindLocation, b.Locations[i].GeoID, &b.Locations[i].Version)
	}
	for i := range b.Permits {
		fn(readmodel.KindPermit, b.Permits[i].PermitID, &b.Permits[i].Version)
	}
	for i := range b.Properties {
		fn(readmodel.KindProperty, b.Properties[i].PropertyID, &b.Properties[i].Version)
	}
	for i := range b.GeoSignals {
		fn(readmodel.KindGeoSignal, b.GeoSignals[i].ID(), &b.GeoSignals[i].Version)
	}
	for i := range b.Leads {
		fn(readmodel.KindLead, b.Leads[i].LeadID, &b.Leads[i].Version)
	}
	for i := range b.Catalog {
		fn(readmodel.KindCatalog, b.Catalog[i].ID(), &b.Catalog[i].Version)
	}
}

// bumpVersions makes every document of b one version newer.
func bumpVersions(b *readmodel.Batch) {
	eachDoc(b, func(_ readmodel.Kind, _ string, v *int64) { *v++ })
}

// deletesOf is a batch deleting every document of b, a version newer.
func deletesOf(b *readmodel.Batch) readmodel.Batch {
	var out readmodel.Batch
	eachDoc(b, func(k readmodel.Kind, id string, v *int64) {
		out.Deletes = append(out.Deletes, readmodel.Delete{Kind: k, ID: id, Version: *v + 1})
	})
	return out
}

// FuzzLoadEdited is FuzzLoadChecksummed with the fuzzer's input read as
// edits of a good file, four bytes each (a position of three bytes,
// taken modulo the file's length before its checksum, and the byte put
// there), the checksum made right after: nearly every frame stays well
// formed, so the decoder's deeper paths (string and link list tables,
// lent arrays, the counts, the second side read from the file again)
// meet the bad bytes.
func FuzzLoadEdited(f *testing.F) {
	raw := goodSnapshot(f)
	body := raw[:len(raw)-4]
	f.Add([]byte{})
	f.Add([]byte{0, 0, 20, 0x7f})
	f.Add([]byte{0, 1, 0, 0xff, 0, 2, 0, 0})
	f.Fuzz(func(t *testing.T, edits []byte) {
		b := append([]byte(nil), body...)
		for ; len(edits) >= 4; edits = edits[4:] {
			pos := (int(edits[0])<<16 | int(edits[1])<<8 | int(edits[2])) % len(b)
			b[pos] = edits[3]
		}
		loadChecksummed(t, b)
	})
}
