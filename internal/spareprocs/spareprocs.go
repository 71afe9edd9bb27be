// Package spareprocs gives the Go runtime spare Ps while the memory
// backend works beside its readers: while it builds its second side in
// the background, and while live writes apply. Requests are then
// answered promptly meanwhile.
//
// That work is goroutines that run on the CPU for seconds: the second
// side's copy (the export and its two stages), its geo builders and the
// large anchors' lead keys; for live writes the consumer's fetchers, the
// decode workers and the write's lanes. Beside them the collector's mark
// workers mark a heap of gigabytes. With as many Ps as cores they hold
// every P. Go does not preempt a running goroutine for one that has
// become runnable, and polls the network only when a P has nothing to
// run, or from sysmon every 10 ms: a request waits for that poll, then
// for a P, behind every runnable goroutine and each running one's slice
// (up to 10 to 20 ms, until sysmon preempts it; a fractional mark worker
// takes the P first, as long). It waits again at each of its hand-overs
// (its connection's reader, its response's write).
//
// Measured on the two-core machine with 1.74M events (make load-ingest,
// eighty-seventh session), a location read every 10 ms took, during the
// build, p99 20 to 28 ms and at most 44 to 49 ms, and while 1.57M live
// events applied p50 5.5 ms, p99 50 to 53 ms and at most 256 to 302 ms;
// the execution traces showed every slow read runnable and waiting for a
// P. With eight Ps the work leaves Ps free, a request gets one at once,
// and the kernel shares the cores among the threads in slices of a
// millisecond or so, preferring a thread that has just woken.
//
// The worker pools sized from the CPUs (the decode's, the builds' shares)
// size themselves with Workers, which is GOMAXPROCS as it was before the
// raise: more workers than cores would only take the spare Ps. And the
// live path's work, which runs on many goroutines at once (each
// partition's fetcher and parse ahead, the decode's workers, the write's
// lanes), takes CPU turns (Hold), as many as those cores, so that it
// too leaves the spare Ps to requests.
//
// The spare Ps are given only where more threads than cores cost
// nothing but sharing: when GOMAXPROCS is the runtime's default, that
// default is the machine's CPU count, and no cgroup CPU quota is set
// (cpu.max, or cpu.cfs_quota_us under cgroup v1). Under a quota more
// running threads than it allows would use it up early in each period
// and be throttled for the rest of it, every thread, requests' too (Go
// sizes its default from the quota, rounded up to at least 2, so the
// default alone does not show a quota of one core on two); a GOMAXPROCS
// set by the operator is theirs. Both are left alone.
package spareprocs

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Min is the Ps the process has at least while work runs beside its
// readers: the work's goroutines (about as many as cores, a few more
// for a build) and the collector's dedicated workers (a quarter of the
// Ps) leave some for requests.
const Min = 8

// Linger is how long the Ps stay raised after the last work ended, so
// that a stream of write steps does not set GOMAXPROCS at each (setting
// it stops the world).
var Linger = time.Second

var (
	mu      sync.Mutex
	active  int          // work running
	raised  bool         // GOMAXPROCS is raised
	before  atomic.Int32 // GOMAXPROCS before the raise, while raised
	lowerAt *time.Timer  // the pending restore, once no work runs; a timer that is not it does nothing
	// decided is set once allowed holds whether the environment lets
	// the Ps be raised at all (no GOMAXPROCS variable, no CPU quota).
	decided, allowed bool
	// turns are the CPU turns of the raise in force (Hold): a channel
	// of before's capacity, nil while not raised.
	turns atomic.Pointer[chan struct{}]
)

// env reads the GOMAXPROCS variable; numCPU, procs and restore are the
// runtime's; quotaFiles are where a CPU quota is read (tests replace
// them).
var (
	env        = func() string { return os.Getenv("GOMAXPROCS") }
	quotaFiles = struct{ cgroup2, cgroup1 string }{"/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"}
	numCPU     = runtime.NumCPU
	procs      = runtime.GOMAXPROCS
	restore    = runtime.SetDefaultGOMAXPROCS
)

// During is called as work beside readers starts; the function it
// returns, as it ends (once; later calls do nothing). While any such
// work runs, and for Linger after, GOMAXPROCS is at least Min when the
// rules above allow it; then it is the runtime's default again (which
// follows the machine's CPUs and quota as before).
func During() (end func()) {
	mu.Lock()
	defer mu.Unlock()
	active++
	if lowerAt != nil {
		lowerAt.Stop() // if it fired already, it finds itself replaced
		lowerAt = nil
	}
	if !raised {
		decide()
		n := procs(0)
		if allowed && n == numCPU() && n < Min {
			before.Store(int32(n))
			t := make(chan struct{}, n)
			turns.Store(&t)
			procs(Min)
			raised = true
		}
	}
	var once sync.Once
	return func() { once.Do(finish) }
}

// finish ends one work; after the last, the restore waits Linger.
func finish() {
	mu.Lock()
	defer mu.Unlock()
	active--
	if active > 0 || !raised {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(Linger, func() {
		mu.Lock()
		defer mu.Unlock()
		if lowerAt != t {
			return // work began again since
		}
		raised, lowerAt = false, nil
		turns.Store(nil)
		restore()
		before.Store(0)
	})
	lowerAt = t // under mu: the callback reads it only after
}

// Allowed reports whether the environment lets the Ps be raised: no
// GOMAXPROCS variable, no CPU quota, and the runtime's default the
// machine's CPU count.
func Allowed() bool {
	mu.Lock()
	defer mu.Unlock()
	decide()
	n := before.Load()
	if n == 0 {
		n = int32(procs(0))
	}
	return allowed && int(n) == numCPU()
}

// Workers is how many goroutines a pool of work sized from the CPUs
// should run: GOMAXPROCS, as it was before the raise while raised.
func Workers() int {
	if n := before.Load(); n > 0 {
		return int(n)
	}
	return procs(0)
}

// Hold takes one of the CPU turns while the Ps are raised, waiting for
// one to be free, and returns what gives it back (once; call it when the
// work is done, and before waiting for other work that may Hold). Not
// raised, it takes nothing.
//
// The spare Ps leave Ps free only if the work does not take them too:
// while live events apply, each partition's parse ahead, the decode's
// workers of every partition's batch and the write's lanes could all be
// running at once, every P busy, and the kernel sharing the cores among
// more threads than a request's would find waiting (eighty-seventh
// session: reads p99 22 to 30 ms). Work that holds a turn for each
// stretch of CPU leaves as many Ps as cores to the indexer, and the rest
// to requests. Work must not wait for anything while it holds a turn
// that another holder of a turn may need to finish first.
func Hold() (release func()) {
	t := turns.Load()
	if t == nil {
		return func() {}
	}
	*t <- struct{}{}
	var once sync.Once
	return func() { once.Do(func() { <-*t }) }
}

// decide sets allowed, once (under mu): a write step calls During, and
// a quota is read from files.
func decide() {
	if !decided {
		decided, allowed = true, env() == "" && !cpuQuota()
	}
}

// cpuQuota reports whether the process's cgroup has a CPU quota: cpu.max
// other than "max ..." (v2) or a cfs_quota_us other than -1 (v1). A file
// that cannot be read is no quota.
func cpuQuota() bool {
	if b, err := os.ReadFile(quotaFiles.cgroup2); err == nil {
		if f := bytes.Fields(b); len(f) > 0 && string(f[0]) != "max" {
			return true
		}
	}
	if b, err := os.ReadFile(quotaFiles.cgroup1); err == nil {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 {
			return true
		}
	}
	return false
}
