package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

// A write that fails (here every write to the temporary file) stops the
// export at its next batch, returns the write's error, and leaves
// neither a snapshot nor a temporary file.
func TestWriteFailureStopsTheExport(t *testing.T) {
	defer func(old func(string, string) (*os.File, error)) { createTemp = old }(createTemp)
	createTemp = func(dir, pattern string) (*os.File, error) {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		f.Close()
		return os.Open(f.Name()) // read-only: every write fails
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "memory.snapshot")
	const batches = 200
	handed := 0
	_, err := Write(path, Offsets{"t": {0: 1}}, func(fn func(readmodel.Batch) error) error {
		for i := range batches {
			name := strings.Repeat(string(rune('a'+i%26)), 100_000) // a literal: over 1 MB in 11 batches
			if err := fn(readmodel.Batch{Locations: []readmodel.Location{{GeoID: "g", DisplayName: name}}}); err != nil {
				return err
			}
			handed++
		}
		return nil
	})
	require.Error(t, err)
	require.NotErrorIs(t, err, errWriteFailed, "the write's own error")
	require.Less(t, handed, batches, "the export stopped")
	entries, rerr := os.ReadDir(dir)
	require.NoError(t, rerr)
	require.Empty(t, entries, "no snapshot, no temporary file")
}
