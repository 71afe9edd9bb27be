package kafka

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
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

// deadlineConn counts the read deadlines that reach a connection.
type deadlineConn struct {
	net.Conn
	mu  sync.Mutex
	set int
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.set++
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) sets() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set
}

// bufferedPipe is a readConn whose buffer has started, over one end of
// a pipe, and the other end.
func bufferedPipe(t *testing.T) (*readConn, *deadlineConn, net.Conn) {
	near, far := net.Pipe()
	t.Cleanup(func() { near.Close(); far.Close() })
	dc := &deadlineConn{Conn: near}
	rc := &readConn{Conn: dc}
	rc.r = bufio.NewReaderSize(dc, readBuffer)
	return rc, dc, far
}

// TestReadConnDeadlineWaitsForTheSocket: once buffered, the deadlines
// set while the bytes read are in the buffer do not reach the socket,
// and those bytes are answered even past them; the last one set reaches
// the socket before the next read that waits for it, and ends that
// read.
func TestReadConnDeadlineWaitsForTheSocket(t *testing.T) {
	rc, dc, far := bufferedPipe(t)
	go far.Write([]byte("0123456789"))
	buf := make([]byte, 4)
	n, err := rc.Read(buf) // fills the buffer with the ten bytes
	require.NoError(t, err)
	require.Equal(t, "0123", string(buf[:n]))
	before := dc.sets()
	for range 100 { // as kafka-go sets one per message
		require.NoError(t, rc.SetReadDeadline(time.Now().Add(time.Minute)))
	}
	require.NoError(t, rc.SetReadDeadline(time.Now().Add(-time.Second)))
	require.Equal(t, before, dc.sets(), "a deadline reached the socket while the buffer answered")
	got := ""
	for len(got) < 6 {
		n, err := rc.Read(buf)
		require.NoError(t, err, "buffered bytes are answered past the deadline")
		got += string(buf[:n])
	}
	require.Equal(t, "456789", got)
	require.Equal(t, before, dc.sets())
	require.True(t, errors.Is(readWithin(t, rc, buf), os.ErrDeadlineExceeded), "a read of the socket past the deadline")
	require.Equal(t, before+1, dc.sets(), "the last deadline set, once, before the socket's read")
}

// readWithin is rc.Read's error, failing the test if the read has not
// ended within 5 s (the peer of bufferedPipe never writes by itself).
func readWithin(t *testing.T, rc *readConn, buf []byte) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := rc.Read(buf)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the read did not end: no deadline reached the socket")
		return nil
	}
}

// TestReadConnDeadlineEndsAWaitingRead: a deadline set while a read
// waits for the socket reaches it at once and ends that read.
func TestReadConnDeadlineEndsAWaitingRead(t *testing.T) {
	rc, _, _ := bufferedPipe(t)
	require.NoError(t, rc.SetReadDeadline(time.Now().Add(time.Hour)))
	done := make(chan error, 1)
	go func() {
		_, err := rc.Read(make([]byte, 16))
		done <- err
	}()
	for { // until the read is waiting for the socket
		rc.mu.Lock()
		reading := rc.reading
		rc.mu.Unlock()
		if reading {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // in the pipe's read, past startRead
	require.NoError(t, rc.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	select {
	case err := <-done:
		require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "the waiting read ended with %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("a deadline set during a read of the socket did not end it")
	}
}

// TestReadConnDeadlineOnAClosedSocket: a deadline that cannot reach the
// socket (closed) fails the read that needed it, which leaves no read
// of the socket running.
func TestReadConnDeadlineOnAClosedSocket(t *testing.T) {
	rc, dc, _ := bufferedPipe(t)
	require.NoError(t, rc.SetReadDeadline(time.Now().Add(time.Minute)))
	require.NoError(t, dc.Conn.Close())
	_, err := rc.Read(make([]byte, 16))
	require.ErrorIs(t, err, io.ErrClosedPipe)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.False(t, rc.reading)
}
