package api_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/api"
)

// countingWriter counts the writes that reach the file.
type countingWriter struct {
	mu     sync.Mutex
	writes int
	buf    bytes.Buffer
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

func (w *countingWriter) snapshot() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.buf.String()
}

func TestBufferedWriterBatchesWholeLines(t *testing.T) {
	out := &countingWriter{}
	b := api.NewBufferedWriter(out, 1024)
	line := strings.Repeat("x", 99) + "\n"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte(line))
			}
		})
	}
	wg.Wait()
	require.NoError(t, b.Flush())
	writes, s := out.snapshot()
	require.Equal(t, 800*len(line), len(s))
	require.LessOrEqual(t, writes, 800/10+1, "about one write per 10 lines")
	for _, l := range strings.SplitAfter(s, "\n")[:800] {
		require.Equal(t, line, l, "a line was split")
	}
}

func TestBufferedWriterFlushesOnInterval(t *testing.T) {
	out := &countingWriter{}
	b := api.NewBufferedWriter(out, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.Run(ctx, 10*time.Millisecond) }()
	_, _ = b.Write([]byte("one\n"))
	require.Eventually(t, func() bool { _, s := out.snapshot(); return s == "one\n" }, 2*time.Second, 5*time.Millisecond)
	_, _ = b.Write([]byte("two\n"))
	cancel()
	require.NoError(t, <-done)
	_, s := out.snapshot()
	require.Equal(t, "one\ntwo\n", s)
}
