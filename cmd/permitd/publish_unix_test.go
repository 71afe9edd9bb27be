//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/events"
)

// An interrupt while publish reads a stream (here a named pipe that stays
// open) writes the lines already read and ends the run as interrupted,
// not with "context canceled".
func TestPublishInterruptedStream(t *testing.T) {
	brokers, _ := kafkaFixture(t, 1)
	fifo := filepath.Join(t.TempDir(), "events.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	f := &eventFile{t: t, at: time.Unix(1700000000, 0)}
	for i := range 2 {
		f.add(events.LocationUpserted, fmt.Sprintf("s%04d", i), 1, events.Location{
			GeoType: "city", Name: "C", DisplayName: "C, WA", State: "WA", StateName: "Washington", Lat: 47, Lon: -122,
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close() // after the interrupt: the stream stays open past it
		_, _ = w.Write(f.buf.Bytes())
		// Read and held within this second: --linger is an hour, so only
		// the interrupt writes them.
		time.Sleep(time.Second)
		cancel()
		time.Sleep(100 * time.Millisecond)
	}()
	var out bytes.Buffer
	err := run(ctx, []string{"publish", "--brokers", brokers, "--file", fifo, "--linger", "1h", "--log-level", "error"}, kafkaNoEnv, &out, io.Discard)
	require.EqualError(t, err, "publish: interrupted (2 events published, the lines read before the interrupt among them; publishing again is harmless)")
	require.Equal(t, "published 2 events\n", out.String())
	require.Equal(t, int64(2), topicSize(t, brokers, "permitd.locations.v1"))
}
