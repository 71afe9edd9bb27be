package api

import (
	"bufio"
	"context"
	"io"
	"sync"
	"time"
)

// BufferedWriter buffers access-log lines so that a request costs no
// write syscall: lines are written through when the buffer fills, on
// Flush, and every interval while Run runs. A line is never split across
// two writes (a line that does not fit flushes the buffer first), so
// lines interleave cleanly with other writers of the same file. Flush
// after the HTTP server has drained loses nothing of a completed request.
type BufferedWriter struct {
	mu sync.Mutex
	bw *bufio.Writer
}

// NewBufferedWriter buffers up to size bytes (64 KiB when size <= 0).
func NewBufferedWriter(w io.Writer, size int) *BufferedWriter {
	if size <= 0 {
		size = 64 << 10
	}
	return &BufferedWriter{bw: bufio.NewWriterSize(w, size)}
}

// Write buffers p, one whole log line.
func (b *BufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(p) > b.bw.Available() && b.bw.Buffered() > 0 {
		if err := b.bw.Flush(); err != nil {
			return 0, err
		}
	}
	return b.bw.Write(p)
}

// Flush writes every buffered line.
func (b *BufferedWriter) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bw.Flush()
}

// Run flushes every interval until ctx ends, then once more. The final
// flush of a server is the caller's, after the server has drained.
func (b *BufferedWriter) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return b.Flush()
		case <-t.C:
			_ = b.Flush()
		}
	}
}
