package indexer_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
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

// TestRestoredUnlinkedRelinkAfterSettle: a restart from a snapshot whose
// ZIP is still unpublished when the restarted indexer settles. The
// re-link file's messages wait for it until Settle, are written without
// it then (stale against the snapshot's unlinked copies), and are
// remembered, so the ZIP published after the restart re-links them as
// it re-links any other: the read model ends as a clean replay's.
func TestRestoredUnlinkedRelinkAfterSettle(t *testing.T) {
	ctx := context.Background()
	f := newRelinkFixture(t)
	ix, s := storeIndexer(t, nil)
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.state}))
	require.NoError(t, ix.Settle(ctx))
	require.NoError(t, ix.HandleBatch(ctx, []indexer.Message{f.permit, f.property, f.lead}))
	msgs, _ := ix.CaptureUnlinked()
	require.Len(t, msgs, 3)
	restarted, loaded := restartFromSnapshot(t, ix, s)
	require.Equal(t, int64(3), restarted.Progress().Parked, "they wait for their ZIP until Settle")
	require.NoError(t, restarted.Settle(ctx))
	require.Equal(t, int64(3), restarted.Progress().Unlinked, "written without it at Settle, and remembered")

	require.NoError(t, restarted.HandleBatch(ctx, []indexer.Message{f.zip}))
	clean, cleanStore := storeIndexer(t, nil)
	require.NoError(t, clean.HandleBatch(ctx, []indexer.Message{f.state, f.zip}))
	require.NoError(t, clean.Settle(ctx))
	require.NoError(t, clean.HandleBatch(ctx, []indexer.Message{f.permit, f.property, f.lead}))
	wantDigest, want := contents(t, cleanStore)
	gotDigest, got := contents(t, loaded)
	require.Equal(t, want, got, "re-linked as a clean replay links them")
	require.Equal(t, wantDigest, gotDigest)
	require.Zero(t, restarted.Progress().Unlinked)
}

// restartFromSnapshot is a restart of ix from a snapshot of s taken
// now, as serve restarts (cmd/permitd serve_kafka.go): the restarted
// indexer and its store.
func restartFromSnapshot(t *testing.T, ix *indexer.Indexer, s *memory.Store) (*indexer.Indexer, *memory.Store) {
	ctx := context.Background()
	msgs, _ := ix.CaptureUnlinked()
	var all readmodel.Batch
	require.NoError(t, s.Export(ctx, 0, func(b readmodel.Batch) error { all.Append(b); return nil }))
	loaded := memory.New(memory.Params{})
	im := loaded.NewImport()
	require.NoError(t, im.Add(all))
	require.NoError(t, im.Commit())
	restarted, err := indexer.New(indexer.Params{Writer: loaded, DeadLetter: func(_ context.Context, m indexer.Message, reason error) error {
		t.Errorf("dead letter %s: %v", m.Key, reason)
		return nil
	}})
	require.NoError(t, err)
	restarted.Preload(all)
	require.NoError(t, restarted.RestoreUnlinked(ctx, msgs))
	return restarted, loaded
}
