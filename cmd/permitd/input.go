package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/permitd/permitd/events"
)

// openInput opens a command's input file, or stdin for "-", with its
// size when it is a regular file (0 otherwise: stdin, a pipe); close
// closes what was opened.
func openInput(path string) (in io.Reader, size int64, close func(), err error) {
	if path == "-" {
		return os.Stdin, 0, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, nil, err
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return f, size, func() { _ = f.Close() }, nil
}

// uncompressedInput is in read as the NDJSON it holds, plain, gzip or
// zstd (events.Uncompressed), saying so in the log when it is compressed;
// close releases the decoder.
func uncompressedInput(in io.Reader, log *slog.Logger) (io.Reader, func(), error) {
	r, kind, closeIn, err := events.Uncompressed(in)
	if err != nil {
		return nil, nil, fmt.Errorf("input: %w", err)
	}
	if kind != "" {
		log.Info("file is compressed; reading it uncompressed", "compression", kind)
	}
	return r, closeIn, nil
}
