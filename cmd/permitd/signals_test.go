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
	packed := filepath.Join(dir, "events.ndjson.gz")
	writeGzip(t, packed, raw)

	signalsOf := func(in string) string {
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), []string{"signals", "-in", in, "-as-of", "2026-06-01", "-log-level", "error"}, kafkaNoEnv, &out, io.Discard))
		return out.String()
	}
	want := signalsOf(plain)
	require.NotEmpty(t, want)
	require.Equal(t, want, signalsOf(packed))
}

// writeGzip writes b gzip-compressed to path.
func writeGzip(t *testing.T, path string, b []byte) {
	t.Helper()
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(path, gz.Bytes(), 0o600))
}
