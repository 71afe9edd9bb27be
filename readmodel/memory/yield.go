package memory

import "runtime"

// A side's writer yields its P every applyStep documents (store_side.go)
// so that a reader waiting for a P does not wait for the writer's whole
// batch, and so that the P's scheduler runs its expired timers and the
// network poll, which make readers ready.
//
// A replay's side (side.quiet) does not yield: no reader sees it before
// EndReplay, and the read model is not ready before then anyway. The
// yields cost more than they seem to: runtime.Gosched with a P idle wakes
// an idle thread, about 14 to 27 µs of CPU on the development machine (a
// futex wake; a scratch benchmark, 2026-12-04), and in a replay the other
// P is often idle. In BenchmarkHandleMix (the real mix's replay) they were
// 5.4% of the CPU profile's samples (runtime.futex under
// runtime.gosched_m), 0.15% without them.
//
// Elsewhere the yields stay. Taking them only while every P runs Go code
// (the runtime's /sched/goroutines/running gauge) was tried and not kept:
// in the live mix (BenchmarkHandleMixLive) they are 1.6% of the samples,
// both lanes keeping the Ps busy, and without the yields' wakes an idle
// thread is slower to take up a reader made ready by a timer.

// yieldEvery takes a step's yield after every applyStep changes, unless
// the side is quiet.
func (s *side) yieldEvery(i int) {
	if (i+1)%applyStep == 0 && !s.quiet {
		if s.yields != nil {
			s.yields.Add(1)
		}
		runtime.Gosched()
	}
}
