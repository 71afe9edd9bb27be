package gctarget

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Resume ends a phase run with the collector off (a snapshot's load,
// snapshot.LoadGCPercent) and sets the target pct again, as if a cycle
// had just found the whole heap live: the next cycle starts once the heap
// has grown pct percent from its size now. The runtime computes its goal
// from the heap its last cycle marked, from before the phase, so setting
// pct alone started a cycle at once, which marked all the phase had
// loaded (gigabytes, all of it live) while the process was catching up
// and building its second side. After that next cycle the target is pct
// as set, unless a target was set through this package meanwhile (Apply,
// Replay, another Resume): that one stands. Resume(-1) turns the
// collector off.
func Resume(pct int) {
	g := supersede() // an earlier Resume's pending target too
	if pct < 0 {
		debug.SetGCPercent(pct)
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	debug.SetGCPercent(resumePercent(pct, s[0].Value.Uint64(), s[1].Value.Uint64()))
	cycles := s[2].Value.Uint64()
	go func() {
		c := s[2:]
		for generation.Load() == g {
			time.Sleep(resumePoll)
			metrics.Read(c)
			if c[0].Value.Uint64() != cycles {
				resumeMu.Lock()
				if generation.Load() == g {
					debug.SetGCPercent(pct)
				}
				resumeMu.Unlock()
				return
			}
		}
	}()
}

// generation counts the targets set through this package: a Resume's
// goroutine sets its target only while none was set after it (it waits
// for its cycle, which may come after a later Apply or Replay, and would
// undo that). resumeMu orders the goroutine's check and set with
// supersede.
var (
	generation atomic.Uint64
	resumeMu   sync.Mutex
)

// supersede ends what a pending Resume would still set, and returns the
// new generation. Under resumeMu: a goroutine that has checked its
// generation sets its target before this returns, never after.
func supersede() uint64 {
	resumeMu.Lock()
	defer resumeMu.Unlock()
	return generation.Add(1)
}

// resumePoll is how often Resume's goroutine looks for the next cycle.
var resumePoll = 250 * time.Millisecond

// resumePercent is the target that makes the runtime's goal, computed
// from marked (the heap its last cycle marked), the goal pct gives a
// heap of now bytes: at least pct.
func resumePercent(pct int, marked, now uint64) int {
	if marked == 0 || now <= marked {
		return pct
	}
	goal := float64(now) * (1 + float64(pct)/100)
	return int(math.Min(math.Max(goal/float64(marked)*100-100, float64(pct)), math.MaxInt32))
}
