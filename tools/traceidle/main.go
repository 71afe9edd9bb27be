// Command traceidle reads a Go execution trace (runtime/trace, or
// /debug/pprof/trace) and says how busy the program kept its Ps and what
// ran while the rest of the machine waited:
//
//	go -C tools/traceidle run . [-match RE] [-frames N] [-top N] TRACE
//
// (-C runs it in tools/traceidle: give TRACE as an absolute path.)
//
// It prints the share of the trace's wall time spent with each number of
// goroutines running and runnable, and the time during which exactly one
// goroutine ran and none waited to run ("alone"), by where that goroutine
// last stopped: its stack at its last switch away from running, which is
// where it went on from (the first -frames frames whose function matches
// -match). On a machine of two cores, "alone" is time one core had
// nothing to do; the stacks name the work the other core waited for (the
// permitd memory store's single writer, in the ingest benchmarks' live
// rounds: docs/kafka-history.md, "Forty-sixth session").
//
// The ingest benchmarks write such traces (PERMITD_BENCH_*_TRACE beside
// their CPU profile variables, indexer/kafka), and so does a server run
// with -pprof (/debug/pprof/trace?seconds=N on its admin address).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/exp/trace"
)

func main() {
	match := flag.String("match", "permitd|kafka-go", "functions whose frames name a stack (a regular expression)")
	frames := flag.Int("frames", 4, "frames of a stack to print")
	top := flag.Int("top", 15, "stacks to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: traceidle [-match RE] [-frames N] [-top N] TRACE")
		os.Exit(2)
	}
	re, err := regexp.Compile(*match)
	if err != nil {
		fmt.Fprintln(os.Stderr, "traceidle:", err)
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "traceidle:", err)
		os.Exit(1)
	}
	defer f.Close()
	r, err := analyse(f, re, *frames)
	if err != nil {
		fmt.Fprintln(os.Stderr, "traceidle:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, *top)
}

// report is what analyse found.
type report struct {
	wall    float64            // seconds from the first event to the last
	busy    float64            // goroutine-seconds running (average cores: busy/wall)
	states  map[[2]int]float64 // seconds with [running, runnable] goroutines (each capped: maxCount)
	alone   float64            // seconds with one goroutine running and none runnable
	aloneAt map[string]float64 // alone's seconds by where that goroutine last stopped
	idle    float64            // seconds with no goroutine running
}

// maxCount caps the counts of states: more are shown as maxCount.
const maxCount = 9

// analyse replays the trace's goroutine state transitions.
func analyse(in io.Reader, match *regexp.Regexp, frames int) (*report, error) {
	tr, err := trace.NewReader(in)
	if err != nil {
		return nil, err
	}
	r := &report{states: map[[2]int]float64{}, aloneAt: map[string]float64{}}
	where := map[trace.GoID]string{} // where each goroutine last stopped
	running := map[trace.GoID]bool{}
	runnable := 0
	var first, prev trace.Time
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		t := ev.Time()
		if first == 0 {
			first = t
		} else if dt := float64(t-prev) / 1e9; dt > 0 {
			r.states[[2]int{min(len(running), maxCount), min(runnable, maxCount)}] += dt
			r.busy += dt * float64(len(running))
			switch {
			case len(running) == 0:
				r.idle += dt
			case len(running) == 1 && runnable == 0:
				r.alone += dt
				for id := range running {
					r.aloneAt[cmpOr(where[id], "(not seen stopping)")] += dt
				}
			}
		}
		prev = t
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		id := st.Resource.Goroutine()
		from, to := st.Goroutine()
		if from == trace.GoRunning {
			where[id] = stackName(st.Stack, match, frames, st.Reason)
		}
		if from == trace.GoRunnable {
			runnable = max(0, runnable-1)
		}
		if to == trace.GoRunnable {
			runnable++
		}
		if to == trace.GoRunning {
			running[id] = true
		} else {
			delete(running, id)
		}
	}
	r.wall = float64(prev-first) / 1e9
	return r, nil
}

// stackName is the first frames of s whose function matches, short
// names joined by " < ", or, with none, the transition's reason.
func stackName(s trace.Stack, match *regexp.Regexp, frames int, reason string) string {
	var names []string
	for f := range s.Frames() {
		if !match.MatchString(f.Func) {
			continue
		}
		names = append(names, f.Func[strings.LastIndex(f.Func, "/")+1:])
		if len(names) == frames {
			break
		}
	}
	if len(names) == 0 {
		return "(no matching frame) " + reason
	}
	return strings.Join(names, " < ")
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func (r *report) print(w io.Writer, top int) {
	if r.wall <= 0 {
		fmt.Fprintln(w, "no events")
		return
	}
	pct := func(s float64) float64 { return 100 * s / r.wall }
	fmt.Fprintf(w, "wall %.3f s, goroutines running %.3f on average\n", r.wall, r.busy/r.wall)
	fmt.Fprintf(w, "none running %.1f%%, one running and none runnable (alone) %.1f%%\n", pct(r.idle), pct(r.alone))
	keys := make([][2]int, 0, len(r.states))
	for k := range r.states {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	fmt.Fprintln(w, "running runnable  share")
	for _, k := range keys {
		if p := pct(r.states[k]); p >= 0.5 {
			fmt.Fprintf(w, "%7s %8s %5.1f%%\n", count(k[0]), count(k[1]), p)
		}
	}
	type entry struct {
		at string
		s  float64
	}
	es := make([]entry, 0, len(r.aloneAt))
	for at, s := range r.aloneAt {
		es = append(es, entry{at, s})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].s > es[j].s || es[i].s == es[j].s && es[i].at < es[j].at })
	fmt.Fprintln(w, "alone, by where the goroutine last stopped:")
	for _, e := range es[:min(top, len(es))] {
		fmt.Fprintf(w, "  %7.3f s %5.1f%%  %s\n", e.s, pct(e.s), e.at)
	}
}

func count(n int) string {
	if n == maxCount {
		return fmt.Sprintf("%d+", n)
	}
	return fmt.Sprint(n)
}
