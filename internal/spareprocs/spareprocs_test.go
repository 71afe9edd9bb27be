package spareprocs

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// fake is the runtime as the package sees it.
type fake struct {
	env      string
	cpus     int
	def      int          // the runtime's default
	n        atomic.Int32 // GOMAXPROCS now
	restores atomic.Int32
}

func newFake(env string, cpus, def int) *fake {
	f := &fake{env: env, cpus: cpus, def: def}
	f.n.Store(int32(def))
	return f
}

// install puts f in place of the runtime, with linger as Linger and no
// CPU quota files.
func (f *fake) install(t *testing.T, linger time.Duration) {
	t.Helper()
	e, c, p, r, q, l := env, numCPU, procs, restore, quotaFiles, Linger
	t.Cleanup(func() {
		mu.Lock()
		if lowerAt != nil {
			lowerAt.Stop()
		}
		active, raised, lowerAt, decided = 0, false, nil, false
		before.Store(0)
		turns.Store(nil)
		mu.Unlock()
		env, numCPU, procs, restore, quotaFiles, Linger = e, c, p, r, q, l
	})
	mu.Lock()
	decided = false
	mu.Unlock()
	quotaFiles.cgroup2, quotaFiles.cgroup1 = filepath.Join(t.TempDir(), "none"), filepath.Join(t.TempDir(), "none")
	Linger = linger
	env = func() string { return f.env }
	numCPU = func() int { return f.cpus }
	procs = func(n int) int {
		if n > 0 {
			return int(f.n.Swap(int32(n)))
		}
		return int(f.n.Load())
	}
	restore = func() {
		f.restores.Add(1)
		f.n.Store(int32(f.def))
	}
}

// waitRestored waits for the restore after Linger.
func (f *fake) waitRestored(t *testing.T, want int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); f.restores.Load() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("%d restores, want %d", f.restores.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDuringRaisesToMinAndRestores(t *testing.T) {
	f := newFake("", 2, 2)
	f.install(t, 0)
	if !Allowed() {
		t.Fatal("not allowed with no variable, no quota, the default at the CPUs")
	}
	end := During()
	if got := f.n.Load(); got != Min {
		t.Fatalf("GOMAXPROCS during the work = %d, want %d", got, Min)
	}
	if !Allowed() {
		t.Fatal("not allowed while raised")
	}
	if got := Workers(); got != 2 {
		t.Fatalf("Workers while raised = %d, want 2 (as before the raise)", got)
	}
	end()
	f.waitRestored(t, 1)
	if got := f.n.Load(); got != 2 {
		t.Fatalf("after the work: GOMAXPROCS %d, want 2", got)
	}
	if got := Workers(); got != 2 {
		t.Fatalf("Workers after = %d, want 2", got)
	}
	end() // a second call does nothing
	time.Sleep(10 * time.Millisecond)
	if got := f.restores.Load(); got != 1 {
		t.Fatalf("end called twice: %d restores", got)
	}
}

func TestDuringOverlappingWork(t *testing.T) {
	f := newFake("", 1, 1)
	f.install(t, 0)
	end1 := During()
	end2 := During()
	end1()
	end1()
	time.Sleep(10 * time.Millisecond)
	if got, r := f.n.Load(), f.restores.Load(); got != Min || r != 0 {
		t.Fatalf("one work of two ended: GOMAXPROCS %d, %d restores; want %d, 0", got, r, Min)
	}
	end2()
	f.waitRestored(t, 1)
	// Later work raises again.
	end3 := During()
	if got := f.n.Load(); got != Min {
		t.Fatalf("later work: GOMAXPROCS %d, want %d", got, Min)
	}
	end3()
	f.waitRestored(t, 2)
}

// Work that begins within Linger of the last one's end keeps the Ps: no
// restore, no second raise.
func TestDuringLingers(t *testing.T) {
	f := newFake("", 2, 2)
	f.install(t, 200*time.Millisecond)
	sets := 0
	inner := procs
	procs = func(n int) int {
		if n > 0 {
			sets++
		}
		return inner(n)
	}
	for range 5 {
		During()()
	}
	time.Sleep(50 * time.Millisecond)
	if got, r := f.n.Load(), f.restores.Load(); got != Min || r != 0 || sets != 1 {
		t.Fatalf("steps within Linger: GOMAXPROCS %d, %d restores, set %d times; want %d, 0, 1", got, r, sets, Min)
	}
	f.waitRestored(t, 1)
	if got := f.n.Load(); got != 2 {
		t.Fatalf("after Linger: GOMAXPROCS %d, want 2", got)
	}
}

func TestDuringLeavesAlone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       string
		cpus, def int
	}{
		{"GOMAXPROCS set by the operator", "2", 2, 2},
		{"a default under the machine's CPUs", "", 16, 2},
		{"as many Ps as Min already", "", Min, Min},
		{"more", "", 32, 32}, // allowed, but nothing to raise
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(tc.env, tc.cpus, tc.def)
			f.install(t, 0)
			end := During()
			if got := f.n.Load(); got != int32(tc.def) {
				t.Fatalf("GOMAXPROCS during the work = %d, want %d (left alone)", got, tc.def)
			}
			end()
			time.Sleep(10 * time.Millisecond)
			if got, r := f.n.Load(), f.restores.Load(); got != int32(tc.def) || r != 0 {
				t.Fatalf("after: GOMAXPROCS %d, %d restores; want %d, 0", got, r, tc.def)
			}
		})
	}
}

// A CPU quota leaves GOMAXPROCS alone, though the runtime's default
// (the quota rounded up to at least 2) equals the machine's CPUs.
func TestDuringLeavesAloneUnderACPUQuota(t *testing.T) {
	for _, tc := range []struct {
		name, v2, v1 string
		raised       bool
	}{
		{"v2 quota", "100000 100000\n", "", false},
		{"v2 none", "max 100000\n", "", true},
		{"v1 quota", "", "50000\n", false},
		{"v1 none", "", "-1\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake("", 2, 2)
			f.install(t, 0)
			dir := t.TempDir()
			for _, w := range []struct {
				path *string
				body string
			}{{&quotaFiles.cgroup2, tc.v2}, {&quotaFiles.cgroup1, tc.v1}} {
				if w.body != "" {
					*w.path = filepath.Join(dir, filepath.Base(*w.path)+"-quota")
					if err := os.WriteFile(*w.path, []byte(w.body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := Allowed(); got != tc.raised {
				t.Fatalf("Allowed = %v, want %v", got, tc.raised)
			}
			end := During()
			defer end()
			if got := f.n.Load() == Min; got != tc.raised {
				t.Fatalf("GOMAXPROCS during the work = %d; raised %v, want %v", f.n.Load(), got, tc.raised)
			}
		})
	}
}

// held reports whether hold returns (takes a turn) within a while; one
// that does not is left to take its turn later and give it back at once.
func held(hold func() func()) (release func(), ok bool) {
	got := make(chan func(), 1)
	go func() { got <- hold() }()
	select {
	case r := <-got:
		return r, true
	case <-time.After(100 * time.Millisecond):
		go func() { (<-got)() }()
		return nil, false
	}
}

// While raised, as many holders as the cores before the raise work at
// once; another waits for a turn given back. Not raised, Hold takes
// nothing; a turn of a raise that ended is given back harmlessly.
func TestHoldTurns(t *testing.T) {
	f := newFake("", 2, 2)
	f.install(t, 0)
	for range 5 { // not raised: nobody waits
		if _, ok := held(Hold); !ok {
			t.Fatal("Hold waited while the Ps are not raised")
		}
	}
	end := During()
	r1, ok1 := held(Hold)
	r2, ok2 := held(Hold)
	if !ok1 || !ok2 {
		t.Fatal("the two cores' turns were not both free")
	}
	if _, ok := held(Hold); ok {
		t.Fatal("a third holder got a turn with two held, on two cores")
	}
	r1() // the waiter above takes this turn and gives it back
	r1() // a second call gives back nothing more
	r3, ok := held(Hold)
	if !ok {
		t.Fatal("no turn after one was given back")
	}
	if _, ok := held(Hold); ok {
		t.Fatal("a holder got a turn with two held: a release counted twice")
	}
	r2()
	end()
	f.waitRestored(t, 1)
	r3() // given back after the restore: no wait, no panic
	for range 5 {
		if _, ok := held(Hold); !ok {
			t.Fatal("Hold waited after the restore")
		}
	}
}
