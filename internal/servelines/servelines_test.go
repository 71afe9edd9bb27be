package servelines

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestReadStopsOnceItHasWhatItWants(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, "starting\n"+DevKey+"k1\n"+Serving+"http://127.0.0.1:1\n"+Admin+"http://127.0.0.1:2\nlater\n")
		// Read must keep draining after it returns: this write blocks
		// until something reads it.
		_, _ = io.WriteString(pw, strings.Repeat("x", 1<<20)+"\n")
		pw.Close()
	}()
	got := Read(pr, BaseKey)
	want := Lines{Base: "http://127.0.0.1:1", DevKey: "k1"}
	if got != want {
		t.Fatalf("Read(BaseKey) = %+v, want %+v", got, want)
	}
}

func TestReadToTheEnd(t *testing.T) {
	got := Read(strings.NewReader(Serving+"http://a\n"+Admin+"http://b\n"), All)
	if want := (Lines{Base: "http://a", Admin: "http://b"}); got != want {
		t.Fatalf("Read(All) = %+v, want %+v (no key line: read to the end)", got, want)
	}
}

func TestReadDrainsTheRest(t *testing.T) {
	pr, pw := io.Pipe()
	wrote := make(chan struct{})
	go func() {
		_, _ = io.WriteString(pw, Serving+"http://a\n"+DevKey+"k\n")
		_, _ = io.WriteString(pw, "more output\n")
		pw.Close()
		close(wrote)
	}()
	Read(pr, BaseKey)
	select {
	case <-wrote:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer is blocked: Read does not drain what follows")
	}
}
