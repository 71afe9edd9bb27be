package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestLoopbackIsFreeToListenOn(t *testing.T) {
	port, err := Loopback()
	if err != nil {
		t.Fatal(err)
	}
	if port <= 0 || port > 65535 {
		t.Fatalf("port %d", port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listen on the port Loopback returned: %v", err)
	}
	ln.Close()
}
