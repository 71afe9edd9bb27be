package indexer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
)

func TestUnlinkedFileRoundTripAndRefusals(t *testing.T) {
	f := newRelinkFixture(t)
	path := filepath.Join(t.TempDir(), "s.snapshot.unlinked")
	msgs := []indexer.Message{f.permit, f.property}
	msgs[0].Partition, msgs[0].Offset = 3, 12345
	require.NoError(t, indexer.WriteUnlinked(path, msgs))
	got, err := indexer.ReadUnlinked(path)
	require.NoError(t, err)
	require.Equal(t, msgs, got)

	require.NoError(t, indexer.WriteUnlinked(path, nil))
	got, err = indexer.ReadUnlinked(path)
	require.NoError(t, err)
	require.Empty(t, got)

	_, err = indexer.ReadUnlinked(filepath.Join(t.TempDir(), "none"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, indexer.WriteUnlinked(path, msgs))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for name, bad := range map[string][]byte{
		"truncated":   raw[:len(raw)-5],
		"flipped bit": func() []byte { b := append([]byte(nil), raw...); b[len(b)/2] ^= 1; return b }(),
		"empty":       nil,
	} {
		require.NoError(t, os.WriteFile(path, bad, 0o600))
		_, err := indexer.ReadUnlinked(path)
		require.ErrorIs(t, err, indexer.ErrUnlinkedCorrupt, name)
	}
}

// TestCaptureKeepsRelinkedUntilSaved: a capture holds the remembered
// messages and, until a snapshot after their re-link is saved, the
// re-linked ones too (a re-link file never older than its snapshot may
// pair with the one before).
func TestCaptureKeepsRelinkedUntilSaved(t *testing.T) {
	ctx := context.Background()
	f := newRelinkFixture(t)
	ix, _ := storeIndexer(t, nil)
	ix.TrackRelinksForSnapshots()
	require.NoError(t, ix.Settle(ctx))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.permit, f.property, f.noZip}))
	msgs, mark := ix.CaptureUnlinked()
	require.Len(t, msgs, 3)

	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.zip}))
	require.Equal(t, int64(1), ix.Progress().Unlinked)
	msgs, _ = ix.CaptureUnlinked()
	require.Len(t, msgs, 3, "the re-linked messages are kept until a later snapshot is saved")
	ix.SavedUnlinked(mark)
	msgs, mark = ix.CaptureUnlinked()
	require.Len(t, msgs, 3, "the snapshot saved was taken before the re-link")
	ix.SavedUnlinked(mark)
	msgs, _ = ix.CaptureUnlinked()
	require.Len(t, msgs, 1, "only the permit outside the gazetteer")
	require.Equal(t, f.noZip.Value, msgs[0].Value)
}
