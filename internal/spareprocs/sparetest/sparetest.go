// Package sparetest takes spareprocs' CPU turns for a test, so that a
// test can see work wait for one.
package sparetest

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/permitd/permitd/internal/spareprocs"
)

// Hold raises the spare Ps (spareprocs.During, ended at the test's
// cleanup) and holds all but free of the CPU turns, returning what gives
// them back (once; also at cleanup). It skips the test where the Ps are
// not raised: a GOMAXPROCS variable, a CPU quota, or Min cores or more.
func Hold(t testing.TB, free int) (giveBack func()) {
	t.Helper()
	end := spareprocs.During()
	t.Cleanup(end)
	if runtime.GOMAXPROCS(0) < spareprocs.Min || spareprocs.Workers() >= spareprocs.Min {
		t.Skipf("the Ps are not raised here (GOMAXPROCS %d, allowed %v): no CPU turns", runtime.GOMAXPROCS(0), spareprocs.Allowed())
	}
	n := spareprocs.Workers() - free
	if n < 0 {
		t.Fatalf("%d turns free of %d", free, spareprocs.Workers())
	}
	var held []func()
	for range n {
		held = append(held, spareprocs.Hold())
	}
	var once sync.Once
	giveBack = func() {
		once.Do(func() {
			for _, r := range held {
				r()
			}
		})
	}
	t.Cleanup(giveBack)
	return giveBack
}

// Finishes fails the test unless do returns within 30 s while the turns
// stay as they are: work that needs no turn held elsewhere goes on.
func Finishes(t testing.TB, do func()) {
	t.Helper()
	select {
	case <-run(do):
	case <-time.After(30 * time.Second):
		t.Fatal("the work did not finish with the turns it needs free")
	}
}

// Waits reports whether do is still running after a while (a slow do,
// under -race, may look as if it waited; one that returns sooner did not
// wait). Either way it then calls release, which lets do go on, and
// fails the test unless do returns within a minute.
func Waits(t testing.TB, release func(), do func()) bool {
	t.Helper()
	done := run(do)
	waited := true
	select {
	case <-done:
		waited = false
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the work did not finish once the turns were given back")
	}
	return waited
}

// run calls do on a goroutine of its own; the channel closes when it
// returns.
func run(do func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		do()
	}()
	return done
}
