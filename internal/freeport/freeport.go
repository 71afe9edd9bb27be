// Package freeport finds a loopback TCP port that no listener holds, for
// the tests and drivers that start a server process (redis-server, the
// broker, permitd) on a port of their choosing.
package freeport

import "net"

// Loopback returns a TCP port on 127.0.0.1 that was free when asked. The
// port is released before Loopback returns, so another process may take
// it first; callers start their server on it at once.
func Loopback() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
