package kafka

import (
	"bufio"
	"context"
	"net"
	"sync"
	"time"
)

// Reads of the connections the consumer dials (readConn): buffered
// readBuffer bytes at a time once a connection has read bufferAfter
// bytes.
const (
	readBuffer  = 256 << 10
	bufferAfter = 1 << 20
)

// readConn is a connection whose reads are buffered readBuffer bytes at
// a time once it has read bufferAfter bytes. kafka-go reads a fetch
// answer through a bufio.Reader of its own of 4 KiB (kafka-go's Conn),
// so that each 16 MiB answer took about 4,000 read system calls: in the
// real mix's replay (BenchmarkIngestMix) the read calls under kafka-go's
// message reads were about a twentieth of the process's CPU time. With
// this buffer underneath, one call reads what the socket holds, up to
// readBuffer. The buffer waits for bufferAfter bytes because most of the
// connections kafka-go dials (about 200 in one replay of the mix) answer
// a few small requests (metadata, offsets, the group's) and are closed:
// only a partition's fetches read much. Writes, deadlines and Close are
// the connection's own. A read deadline bounds every read that waits
// for the socket; bytes already buffered are answered even past it (they
// arrived in time; a socket answers nothing once its deadline passed,
// and kafka-go then drops the connection). kafka-go reads a connection
// from one goroutine at a time.
//
// Once buffered, a read deadline reaches the socket only when a read
// needs the socket: kafka-go sets one before every message it reads
// from a fetch answer (its reader's read loop), and each went to the
// runtime's poller (a timer changed under the descriptor's lock), about
// a hundredth of the process's CPU time in the real mix's replay, while
// the message's bytes were already in the buffer. A deadline set while
// the socket is being read is passed on at once, so it still ends that
// read.
type readConn struct {
	net.Conn
	r    *bufio.Reader // nil until the connection has read bufferAfter bytes
	read int

	mu       sync.Mutex
	deadline time.Time // the read deadline last set
	set      time.Time // the read deadline the socket has
	reading  bool      // a read of the socket runs (buffered only)
}

func (c *readConn) Read(p []byte) (int, error) {
	if c.r != nil {
		if c.r.Buffered() > 0 {
			return c.r.Read(p) // from the buffer: no socket read, no deadline
		}
		if err := c.startRead(); err != nil {
			return 0, err
		}
		n, err := c.r.Read(p)
		c.mu.Lock()
		c.reading = false
		c.mu.Unlock()
		return n, err
	}
	n, err := c.Conn.Read(p)
	if c.read += n; c.read >= bufferAfter {
		c.mu.Lock() // SetReadDeadline reads r
		c.r = bufio.NewReaderSize(c.Conn, readBuffer)
		c.mu.Unlock()
	}
	return n, err
}

// startRead gives the socket the read deadline last set, before a
// buffered read that reads the socket.
func (c *readConn) startRead() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.deadline.Equal(c.set) {
		if err := c.Conn.SetReadDeadline(c.deadline); err != nil {
			return err // no read follows
		}
		c.set = c.deadline
	}
	c.reading = true
	return nil
}

// SetReadDeadline keeps t for the next read of the socket once the
// connection is buffered (see readConn); before that, or while the
// socket is being read, the socket takes it at once.
func (c *readConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	if c.r != nil && !c.reading {
		return nil
	}
	c.set = t
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets both deadlines on the socket at once.
func (c *readConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline, c.set = t, t
	return c.Conn.SetDeadline(t)
}

// dialBuffered dials as kafka-go's dialer does by default (the dialer's
// timeout comes with ctx) and buffers the connection's reads; TLS, when
// set, runs over it.
func dialBuffered(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &readConn{Conn: conn}, nil
}
