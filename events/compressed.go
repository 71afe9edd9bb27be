package events

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Magic numbers of the compressed forms Uncompressed reads.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Uncompressed returns r's NDJSON uncompressed when r is gzip (a .gz
// file, several members read as one) or zstd (.zst), told by the magic
// number at its start, and r as it is otherwise; close releases the
// decoder. Pipelines keep their event files compressed; before, `permitd
// publish` read a .gz file as lines of binary, one invalid event per
// line. Only the opening bytes are looked at: a file is one or the other
// throughout.
func Uncompressed(r io.Reader) (out io.Reader, kind string, close func(), err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(len(zstdMagic))
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, "", nil, err
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, "", nil, fmt.Errorf("gzip: %w", err)
		}
		return namedErrors{z, "gzip"}, "gzip", func() { _ = z.Close() }, nil
	case bytes.HasPrefix(head, zstdMagic):
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, "", nil, fmt.Errorf("zstd: %w", err)
		}
		return namedErrors{z, "zstd"}, "zstd", z.Close, nil
	}
	return br, "", func() {}, nil
}

// namedErrors names the format in a read error (a truncated or corrupt
// file), which reaches the user as "line N: gzip: unexpected EOF".
type namedErrors struct {
	r    io.Reader
	kind string
}

func (n namedErrors) Read(b []byte) (int, error) {
	k, err := n.r.Read(b)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", n.kind, err)
	}
	return k, err
}
