// The load itself: rounds of attacks per endpoint, their statistics (median, paired standard error) and profiles.

package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pairedSE is the standard error of the mean difference of a's and b's
// req/s, round by round (the two ran side by side in each round), over
// scale: the spread of a run's difference that the machine's drift
// leaves, which comparing the two totals alone would not show.
func pairedSE(a, b []float64, scale float64) float64 {
	n := min(len(a), len(b))
	if n < 2 {
		return math.NaN()
	}
	d := make([]float64, n)
	var mean float64
	for i := range n {
		d[i] = (a[i] - b[i]) / scale
		mean += d[i]
	}
	mean /= float64(n)
	var ss float64
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(n-1) / float64(n))
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

type stats struct {
	rps      float64
	p50, p99 time.Duration
	non2xx   uint64
	rounds   []float64 // req/s in each round
}

// attackRounds drives ep at saturation against each server: a warm-up
// each, then c.rounds measured rounds of c.duration/c.rounds in which the
// servers take turns. Each of profs runs during one more attack of
// c.duration against its server, after the measured rounds (not counted).
func attackRounds(servers []*proc, ep endpoint, keys []string, c config, profs []profiled) map[*proc]stats {
	type acc struct {
		m        vegeta.Metrics
		took     time.Duration
		requests uint64
		bad      uint64
		rounds   []float64
	}
	accs := map[*proc]*acc{}
	clients := map[*proc]*http.Client{}
	for _, p := range servers {
		// One client per server for the warm-up and every round, so each
		// round starts on warm connections.
		clients[p] = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			MaxIdleConns: c.workers, MaxIdleConnsPerHost: c.workers, MaxConnsPerHost: c.workers,
			DisableCompression: true, IdleConnTimeout: time.Minute,
		}}
		defer clients[p].CloseIdleConnections()
		accs[p] = &acc{}
		if c.warmup > 0 {
			attack(p.base, ep, keys, c, clients[p], c.warmup, func(*vegeta.Result) {})
		}
	}
	rounds := max(c.rounds, 1)
	per := c.duration / time.Duration(rounds)
	for r := range rounds {
		// Every other round in the reverse order, so that within an
		// endpoint each server runs as often before as after the others.
		order := servers
		if r%2 == 1 {
			order = slices.Clone(servers)
			slices.Reverse(order)
		}
		for _, p := range order {
			a := accs[p]
			n := a.requests
			t0 := time.Now()
			attack(p.base, ep, keys, c, clients[p], per, func(res *vegeta.Result) {
				if res.Code < 200 || res.Code > 299 {
					a.bad++
				}
				a.requests++
				a.m.Add(res)
			})
			took := time.Since(t0)
			a.took += took
			a.rounds = append(a.rounds, float64(a.requests-n)/took.Seconds())
		}
	}
	for _, p := range profs {
		done := make(chan error, 1)
		go func() { done <- p.prof() }()
		attack(p.p.base, ep, keys, c, clients[p.p], c.duration, func(*vegeta.Result) {})
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "load: profile:", err)
		}
	}
	out := map[*proc]stats{}
	for p, a := range accs {
		a.m.Close()
		out[p] = stats{rps: float64(a.requests) / a.took.Seconds(), p50: a.m.Latencies.P50, p99: a.m.Latencies.P99, non2xx: a.bad, rounds: a.rounds}
	}
	return out
}

// attack drives ep at saturation for d, handing each result to each.
func attack(base string, ep endpoint, keys []string, c config, client *http.Client, d time.Duration, each func(*vegeta.Result)) {
	var n atomic.Uint64
	tr := func(t *vegeta.Target) error {
		i := n.Add(1)
		t.Method = http.MethodGet
		t.URL = base + ep.urls[i%uint64(len(ep.urls))]
		t.Header = http.Header{"X-Api-Key": {keys[i%uint64(len(keys))]}, "Accept-Encoding": {"identity"}}
		return nil
	}
	w := uint64(c.workers)
	atk := vegeta.NewAttacker(vegeta.Workers(w), vegeta.MaxWorkers(w), vegeta.MaxBody(0), vegeta.Client(client))
	for res := range atk.Attack(tr, vegeta.ConstantPacer{}, d, ep.name) {
		each(res)
	}
}

// profiled is a server to profile and what profiles it (profile).
type profiled struct {
	p    *proc
	prof func() error
}

// profile returns what takes a CPU profile and an allocation profile
// (the allocations of that interval) of permitd over most of the measured
// time, into dir.
func profile(admin, dir, name string, d time.Duration) func() error {
	secs := max(int(d.Seconds())-1, 1)
	base := strings.NewReplacer(" ", "_", "(", "", ")", "", ",", "").Replace(name)
	fetch := func(path, file string) error {
		res, err := http.Get(admin + path)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", path, res.Status)
		}
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, res.Body); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return func() error {
		errc := make(chan error, 1)
		go func() { errc <- fetch(fmt.Sprintf("/debug/pprof/allocs?seconds=%d", secs), base+".allocs.pprof") }()
		return errors.Join(fetch(fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), base+".cpu.pprof"), <-errc)
	}
}
