package kafka

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadConnPassesEveryByte: a readConn answers the bytes its peer
// sent, in order, through small reads as kafka-go's 4 KiB reader makes
// them, before and after its buffer starts; it buffers only once
// bufferAfter bytes were read; and a read deadline still ends a read
// that waits for the socket.
func TestReadConnPassesEveryByte(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	want := make([]byte, 3*bufferAfter+12345)
	for i := range want {
		want[i] = byte(i*7 + i>>11)
	}
	sent := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			sent <- err
			return
		}
		defer c.Close()
		for rest := want; len(rest) > 0; { // uneven writes
			n := min(len(rest), 70_001)
			if _, err := c.Write(rest[:n]); err != nil {
				sent <- err
				return
			}
			rest = rest[n:]
		}
		sent <- nil
		<-release // keep the connection open, silent
	}()
	defer close(release)

	conn, err := dialBuffered(t.Context(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	rc := conn.(*readConn)
	got := make([]byte, 0, len(want))
	buf := make([]byte, 4096)
	for len(got) < len(want) {
		if len(got) < bufferAfter-len(buf) {
			require.Nil(t, rc.r, "buffered after %d bytes", len(got))
		}
		n, err := conn.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	require.NoError(t, <-sent)
	require.NotNil(t, rc.r, "not buffered after %d bytes", len(got))
	require.True(t, bytes.Equal(want, got), "the bytes read differ from the bytes sent")

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = conn.Read(buf)
	require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "read past the deadline: %v", err)
}

// TestReadConnEOF: a peer's close reaches the reader as io.EOF after
// its last bytes, whether or not the buffer had started.
func TestReadConnEOF(t *testing.T) {
	for _, size := range []int{1000, 2 * bufferAfter} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				c.Write(make([]byte, size))
				c.Close()
			}
		}()
		conn, err := dialBuffered(t.Context(), "tcp", ln.Addr().String())
		require.NoError(t, err)
		n, err := io.Copy(io.Discard, conn)
		require.NoError(t, err) // io.Copy ends at io.EOF
		require.Equal(t, int64(size), n)
		conn.Close()
		ln.Close()
	}
}
