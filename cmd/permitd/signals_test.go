package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// signals -in reads a gzip file as the NDJSON it holds: the signals are
// those of the plain file, byte for byte.
func TestSignalsReadsCompressedInput(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "events.ndjson")
	require.NoError(t, run(t.Context(), []string{"gen", "-permits", "300", "-now", "2026-06-01", "-out", plain}, kafkaNoEnv, io.Discard, io.Discard))
	raw, err := os.ReadFile(plain)
	require.NoError(t, err)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(raw)
	require.NoError(t, w.Close())
	packed := filepath.Join(dir, "events.ndjson.gz")
	require.NoError(t, os.WriteFile(packed, gz.Bytes(), 0o600))

	signalsOf := func(in string) string {
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), []string{"signals", "-in", in, "-as-of", "2026-06-01", "-log-level", "error"}, kafkaNoEnv, &out, io.Discard))
		return out.String()
	}
	want := signalsOf(plain)
	require.NotEmpty(t, want)
	require.Equal(t, want, signalsOf(packed))
}
