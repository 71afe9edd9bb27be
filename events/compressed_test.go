package events

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

func gzipped(t *testing.T, parts ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, p := range parts { // each part a member of its own, as `cat a.gz b.gz` makes
		w := gzip.NewWriter(&buf)
		_, err := w.Write([]byte(p))
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	return buf.Bytes()
}

func zstded(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf)
	require.NoError(t, err)
	_, err = w.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// Uncompressed reads gzip (every member) and zstd by their magic numbers
// and passes anything else through unchanged, an empty input included.
func TestUncompressed(t *testing.T) {
	text := strings.Repeat(`{"a":1}`+"\n", 5000)
	for _, tc := range []struct {
		name, kind string
		in         []byte
		want       string
	}{
		{"plain", "", []byte(text), text},
		{"empty", "", nil, ""},
		{"one byte", "", []byte{0x1f}, "\x1f"},
		{"gzip", "gzip", gzipped(t, text), text},
		{"gzip of two members", "gzip", gzipped(t, text, "second\n"), text + "second\n"},
		{"zstd", "zstd", zstded(t, text), text},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, kind, closeIn, err := Uncompressed(bytes.NewReader(tc.in))
			require.NoError(t, err)
			defer closeIn()
			require.Equal(t, tc.kind, kind)
			got, err := io.ReadAll(r)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

// A truncated compressed file fails with an error that names its format,
// and a gzip header that is not whole fails at once.
func TestUncompressedTruncated(t *testing.T) {
	text := strings.Repeat(`{"a":1}`+"\n", 5000)
	for _, tc := range []struct{ kind string }{{"gzip"}, {"zstd"}} {
		t.Run(tc.kind, func(t *testing.T) {
			whole := gzipped(t, text)
			if tc.kind == "zstd" {
				whole = zstded(t, text)
			}
			r, kind, closeIn, err := Uncompressed(bytes.NewReader(whole[:len(whole)/2]))
			require.NoError(t, err)
			defer closeIn()
			require.Equal(t, tc.kind, kind)
			_, err = io.ReadAll(r)
			require.ErrorContains(t, err, tc.kind+": ")
		})
	}
	_, _, _, err := Uncompressed(bytes.NewReader([]byte{0x1f, 0x8b, 8}))
	require.ErrorContains(t, err, "gzip: ")
}
