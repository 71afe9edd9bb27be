package main

import (
	"bytes"
	"regexp"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

// spinAlone and spinTogether keep a P busy for d, yielding now and then
// so that the trace records where they stopped.
func spinAlone(d time.Duration) { spin(d) }

func spinTogether(d time.Duration) { spin(d) }

func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 10_000; i++ {
			_ = i * i
		}
		runtime.Gosched()
	}
}

// A trace of one goroutine working alone for 200ms, then two together
// for 200ms: the first shows as alone, named by its function; the
// second as two running.
func TestAloneAndTogether(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { spinAlone(200 * time.Millisecond); close(done) }()
	<-done
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { spinTogether(200 * time.Millisecond) })
	}
	wg.Wait()
	trace.Stop()

	r, err := analyse(&buf, regexp.MustCompile(`traceidle\.spin`), 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.wall < 0.4 {
		t.Fatalf("wall %.3f s, want at least the 0.4 s of work", r.wall)
	}
	alone := r.aloneAt["traceidle.spin < traceidle.spinAlone"]
	if alone < 0.1 {
		var out bytes.Buffer
		r.print(&out, 10)
		t.Fatalf("alone in spinAlone %.3f s, want most of its 0.2 s; report:\n%s", alone, out.String())
	}
	var two float64
	for k, s := range r.states {
		if k[0] >= 2 {
			two += s
		}
	}
	if two < 0.1 {
		t.Fatalf("two running for %.3f s, want most of spinTogether's 0.2 s", two)
	}
	var out bytes.Buffer
	r.print(&out, 5)
	if !strings.Contains(out.String(), "traceidle.spin < traceidle.spinAlone") {
		t.Fatalf("the report does not name spinAlone:\n%s", out.String())
	}
}

func TestNotATrace(t *testing.T) {
	if _, err := analyse(strings.NewReader("not a trace"), regexp.MustCompile("x"), 1); err == nil {
		t.Fatal("analyse read a text as a trace")
	}
}
