package kafka

import (
	"bufio"
	"context"
	"net"
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
type readConn struct {
	net.Conn
	r    *bufio.Reader // nil until the connection has read bufferAfter bytes
	read int
}

func (c *readConn) Read(p []byte) (int, error) {
	if c.r != nil {
		return c.r.Read(p)
	}
	n, err := c.Conn.Read(p)
	if c.read += n; c.read >= bufferAfter {
		c.r = bufio.NewReaderSize(c.Conn, readBuffer)
	}
	return n, err
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
