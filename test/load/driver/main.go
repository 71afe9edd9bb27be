// Command driver is `make load`: it starts permitd with the bundled data
// and a bare Gin floor (test/load/floor) serving the bytes permitd
// answered for the same URLs, then drives every v1 endpoint at
// saturation against each in turn, in the same run, and prints a table:
// requests per second, p50, p99, the floor's requests per second, the
// ratio, and the answers that were not 2xx.
//
// permitd and the floor run as separate processes with the same
// GOMAXPROCS; the load generator (vegeta as a library) runs here. Many
// development keys rotate so that no answer is a 429; resolve rotates
// over the resolve quality set's queries. Loopback only; every attack is
// bounded in time.
//
// The measured time is split into rounds in which the servers take turns
// (-rounds; every other round in the reverse order), so the machine's
// drift hits each alike. -tracing (or -env) adds a second permitd with
// tracing on (or those variables) and prints its ratio beside the first's
// (metrics only), the difference, two standard errors of the difference
// from the rounds (each round a pair of the two permitds side by side),
// and the mean difference over the endpoints; -pprof writes CPU and
// allocation profiles of each endpoint's load.
//
//	driver -permitd bin/permitd -floor bin/floor [-duration 5s] [-workers 32] [-procs 1]
//	       [-rounds 5|20] [-tracing discard|otlp-sink|off-sampler] [-env K=V,...] [-env-all K=V,...]
//	       [-pprof dir]
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/permitd/permitd/events"
)

// recording is what the floor serves (test/load/floor.Recording).
type recording struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	Body        []byte `json:"body"`
}

type endpoint struct {
	name string
	urls []string
}

type config struct {
	permitd, floor, quality, now string
	duration, warmup             time.Duration
	workers, procs, keys         int
	only, logLevel               string
	cacheMB                      int
	rounds                       int
	pprofDir, tracing, env       string
	envAll                       string
}

func main() {
	var c config
	flag.StringVar(&c.permitd, "permitd", "bin/permitd", "permitd binary")
	flag.StringVar(&c.floor, "floor", "bin/floor", "floor binary (test/load/floor)")
	flag.StringVar(&c.quality, "quality", "readmodel/resolve/testdata/quality.tsv", "resolve quality set (queries)")
	flag.StringVar(&c.now, "now", "2026-11-22", "PERMITD_NOW, the service clock")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "measured attack per endpoint and server")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured attack before each measured one")
	flag.IntVar(&c.workers, "workers", 32, "concurrent workers (and connections)")
	flag.IntVar(&c.procs, "procs", 1, "GOMAXPROCS of permitd and of the floor")
	flag.IntVar(&c.keys, "keys", 64, "development API keys rotated")
	flag.StringVar(&c.logLevel, "log-level", "info", "permitd's log level: info logs every request (the buffered access log), as in production")
	flag.IntVar(&c.cacheMB, "response-cache-mb", 64, "permitd's -response-cache-mb (0: no response cache, every request reads the read model)")
	flag.StringVar(&c.only, "only", "", "run only the endpoints whose name contains this")
	flag.IntVar(&c.rounds, "rounds", 0, "the measured time per server is split into this many rounds, the servers taking turns, so that the machine's drift hits each alike (0: 5, or 20 with a 2nd permitd, whose difference is read round by round)")
	flag.StringVar(&c.pprofDir, "pprof", "", "directory: permitd runs with -pprof, and after each endpoint's measured rounds one more attack on it (not counted) is profiled: CPU and allocations, written there")
	flag.StringVar(&c.env, "env", "", "comma-separated K=V: also run a second permitd with these variables added (with -tracing: the traced one) and compare it to the first in the same run, e.g. GOGC=400")
	flag.StringVar(&c.envAll, "env-all", "", "comma-separated K=V added to every permitd's environment, e.g. GOMEMLIMIT=6GiB (under a memory limit serve's collector target is 400, as in the Kubernetes manifests)")
	flag.StringVar(&c.tracing, "tracing", "", "also run a second permitd with tracing on and compare it to the first (metrics only) in the same run: discard (every span sampled and dropped by an in-process exporter), otlp-sink (every span exported over OTLP/HTTP to a sink here that drops it), off-sampler (OTEL_TRACES_SAMPLER=always_off)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// proc is a started server process.
type proc struct {
	cmd   *exec.Cmd
	base  string
	admin string // permitd's admin listener, when it printed one
}

// start runs bin with args and env, waits for its "serving on" line (and,
// with wantAdmin, its "admin on" line).
func start(bin string, args, env []string, errFile string, wantAdmin bool) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ef, err := os.Create(errFile)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = ef
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "serving on "); ok {
			p.base = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "admin on "); ok {
			p.admin = v
		}
		if p.base != "" && (!wantAdmin || p.admin != "") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if p.base == "" || wantAdmin && p.admin == "" {
		p.stop()
		return nil, fmt.Errorf("%s printed no address (see %s)", bin, errFile)
	}
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func run(c config) error {
	tmp, err := os.MkdirTemp("", "permitd-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	keys := make([]string, c.keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("load-key-%03d-0123456789abcdef", i)
	}
	procs := fmt.Sprintf("GOMAXPROCS=%d", c.procs)

	// -pprof: the profiles (-pprof here) and settle's forced collection.
	permitdArgs := []string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-pprof", "-response-cache-mb", strconv.Itoa(c.cacheMB)}
	if c.pprofDir != "" {
		if err := os.MkdirAll(c.pprofDir, 0o755); err != nil {
			return err
		}
	}
	permitdEnv := []string{procs, "PERMITD_API_KEYS=" + strings.Join(keys, ","), "PERMITD_NOW=" + c.now, "PERMITD_LOG_LEVEL=" + c.logLevel}
	if c.envAll != "" {
		permitdEnv = append(permitdEnv, strings.Split(c.envAll, ",")...)
	}
	srv, err := start(c.permitd, permitdArgs, permitdEnv, filepath.Join(tmp, "permitd.err"), true)
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := waitReady(srv.base, 5*time.Minute); err != nil {
		return err
	}
	// The traced permitd: the same, with tracing on (see tracingEnv).
	var traced *proc
	if c.tracing != "" || c.env != "" {
		var tenv []string
		if c.tracing != "" {
			var stopSink func()
			if tenv, stopSink, err = tracingEnv(c.tracing); err != nil {
				return err
			}
			defer stopSink()
		}
		if c.env != "" {
			tenv = append(tenv, strings.Split(c.env, ",")...)
		}
		if traced, err = start(c.permitd, permitdArgs[:len(permitdArgs):len(permitdArgs)], append(permitdEnv, tenv...), filepath.Join(tmp, "permitd-traced.err"), true); err != nil {
			return err
		}
		defer traced.stop()
		if err := waitReady(traced.base, 5*time.Minute); err != nil {
			return err
		}
	}

	if c.rounds <= 0 {
		c.rounds = 5
		if traced != nil {
			c.rounds = 20
		}
	}

	client := &http.Client{Timeout: 30 * time.Second}
	get := func(u string) (int, string, []byte, time.Duration, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.base+u, nil)
		req.Header.Set("X-API-Key", keys[0])
		req.Header.Set("Accept-Encoding", "identity")
		t0 := time.Now()
		res, err := client.Do(req)
		if err != nil {
			return 0, "", nil, 0, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), b, time.Since(t0), err
	}

	// Targets, from the bundled data.
	seattle := events.GeoID("city", "1840021117")
	wa := events.GeoID("state", "WA")
	queries, err := resolveQueries(c.quality)
	if err != nil {
		return err
	}
	statsURL := "/v1/signals/permit/stats?geo_id=" + wa + "&include_stale=true"
	// The first (cold) cost of state-wide stats, before anything is cached.
	var cold []string
	for _, u := range []string{statsURL, "/v1/signals/permit/stats?geo_id=" + wa,
		"/v1/signals/permit/stats?geo_id=" + wa + "&include_stale=true&min_confidence=0.5"} {
		code, _, _, took, err := get(u)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("cold %s: %d %v", u, code, err)
		}
		cold = append(cold, fmt.Sprintf("%s: %.2f ms", u, float64(took.Microseconds())/1000))
	}
	propID, addr, err := findProperty(get, seattle)
	if err != nil {
		return err
	}
	eps := []endpoint{
		{"resolve (quality set)", queries},
		{"location detail", []string{"/v1/locations/" + seattle}},
		{"permits search (city, 25)", []string{"/v1/permits/search?geo_id=" + seattle + "&limit=25"}},
		{"property search", []string{"/v1/search/property?address=" + url.QueryEscape(addr)}},
		{"property permits", []string{"/v1/property/" + propID + "/permits"}},
		{"catalog", []string{"/v1/signals/catalog?state=WA"}},
		{"geo signals location", []string{"/v1/signals/geo/location/" + seattle}},
		{"geo signal search", []string{"/v1/signals/geo/search?state=WA&limit=25"}},
		{"permit leads (Seattle, stale)", []string{"/v1/signals/permit/leads?geo_id=" + seattle + "&include_stale=true"}},
		{"permit stats (WA, stale)", []string{statsURL}},
	}

	// Record every target's answer for the floor.
	var recs []recording
	for i := range eps {
		var kept []string
		for _, u := range eps[i].urls {
			code, ct, body, _, err := get(u)
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				if eps[i].name == "resolve (quality set)" {
					continue // a quality-set text the API rejects is left out
				}
				return fmt.Errorf("record %s: %d %s", u, code, body)
			}
			kept = append(kept, u)
			recs = append(recs, recording{URL: u, ContentType: ct, Body: body})
		}
		eps[i].urls = kept
	}
	if n := len(eps[0].urls); n < 300 {
		return fmt.Errorf("only %d resolve queries answered 200; want at least 300", n)
	}
	recFile := filepath.Join(tmp, "recordings.json")
	raw, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(recFile, raw, 0o600); err != nil {
		return err
	}
	floor, err := start(c.floor, []string{"-addr", "127.0.0.1:0", "-recordings", recFile}, []string{procs}, filepath.Join(tmp, "floor.err"), false)
	if err != nil {
		return err
	}
	defer floor.stop()

	fmt.Printf("load: %d workers, %s per endpoint and server in %d alternating rounds (after %s warm-up), GOMAXPROCS=%d for permitd and the floor, %d keys, %d resolve queries\n",
		c.workers, c.duration, c.rounds, c.warmup, c.procs, len(keys), len(eps[0].urls))
	fmt.Printf("load: permitd log level %s (info: an access-log line per request), response cache %d MB, metrics on\n", c.logLevel, c.cacheMB)
	if c.envAll != "" {
		fmt.Printf("load: every permitd with %s\n", c.envAll)
	}
	for _, p := range []*proc{srv, traced} {
		if p != nil {
			if err := settle(p); err != nil {
				return err
			}
		}
	}
	servers := []*proc{srv, floor}
	head := "endpoint\treq/s\tp50 ms\tp99 ms\tfloor req/s\tratio\tnon-2xx\t"
	if traced != nil {
		servers = append(servers, traced)
		head += "2nd req/s\t2nd p99 ms\t2nd ratio\tdifference\t±\t"
		fmt.Printf("load: a 2nd permitd runs with tracing %q and variables %q; difference is its ratio minus the first's (metrics only, no tracing), ± two standard errors of it from the %d rounds, each a pair of the two permitds side by side\n", c.tracing, c.env, c.rounds)
	}
	var diffs, ses []float64 // per endpoint, with a 2nd permitd
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, head)
	for i, ep := range eps {
		if c.only != "" && !strings.Contains(ep.name, c.only) {
			continue
		}
		// Alternate which goes first, so that drift favours neither.
		order := servers
		if i%2 == 1 {
			order = slices.Clone(servers)
			slices.Reverse(order)
		}
		var prof func() error
		if c.pprofDir != "" {
			prof = profile(srv.admin, c.pprofDir, ep.name, c.duration)
		}
		res := attackRounds(order, ep, keys, c, srv, prof)
		s, f := res[srv], res[floor]
		non2xx := fmt.Sprint(s.non2xx)
		if f.non2xx > 0 {
			non2xx += fmt.Sprintf(" (floor %d)", f.non2xx)
		}
		line := fmt.Sprintf("%s\t%.0f\t%.2f\t%.2f\t%.0f\t%.2f\t%s\t", ep.name, s.rps, ms(s.p50), ms(s.p99), f.rps, s.rps/f.rps, non2xx)
		if traced != nil {
			t := res[traced]
			d, se := t.rps/f.rps-s.rps/f.rps, pairedSE(t.rounds, s.rounds, f.rps)
			diffs, ses = append(diffs, d), append(ses, se)
			line += fmt.Sprintf("%.0f\t%.2f\t%.2f\t%+.3f\t%.3f\t", t.rps, ms(t.p99), t.rps/f.rps, d, 2*se)
			if t.non2xx > 0 {
				line += fmt.Sprintf(" (2nd non-2xx %d)", t.non2xx)
			}
		}
		fmt.Fprintln(tw, line)
		fmt.Fprintf(os.Stderr, "load: %s done (%.2f)\n", ep.name, s.rps/f.rps)
	}
	_ = tw.Flush()
	if len(diffs) > 0 {
		var sum, v float64
		for i := range diffs {
			sum += diffs[i]
			v += ses[i] * ses[i]
		}
		k := float64(len(diffs))
		fmt.Printf("load: 2nd permitd's difference over the %d endpoints: mean %+.3f ± %.3f (two standard errors), median %+.3f, from %+.3f to %+.3f\n",
			len(diffs), sum/k, 2*math.Sqrt(v)/k, median(diffs), slices.Min(diffs), slices.Max(diffs))
	}
	fmt.Println("cold permit stats (first request, one at a time, before the load):")
	for _, l := range cold {
		fmt.Println("  " + l)
	}
	return nil
}

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
// servers take turns. prof, when set, runs during one more attack of
// c.duration against profiled, after the measured rounds (not counted).
func attackRounds(servers []*proc, ep endpoint, keys []string, c config, profiled *proc, prof func() error) map[*proc]stats {
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
	if prof != nil {
		done := make(chan error, 1)
		go func() { done <- prof() }()
		attack(profiled.base, ep, keys, c, clients[profiled], c.duration, func(*vegeta.Result) {})
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

// tracingEnv is the traced permitd's environment for mode, and what stops
// the OTLP sink (otlp-sink) when the run ends.
func tracingEnv(mode string) ([]string, func(), error) {
	switch mode {
	case "discard":
		return []string{"OTEL_TRACES_EXPORTER=discard"}, func() {}, nil
	case "off-sampler":
		return []string{"OTEL_TRACES_EXPORTER=discard", "OTEL_TRACES_SAMPLER=always_off"}, func() {}, nil
	case "otlp-sink":
		// A collector that accepts every export and drops it: an empty
		// ExportTraceServiceResponse is a valid answer.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK)
		})}
		go func() { _ = srv.Serve(ln) }()
		return []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://" + ln.Addr().String() + "/v1/traces"}, func() { _ = srv.Close() }, nil
	}
	return nil, nil, fmt.Errorf("tracing %q: want discard, otlp-sink or off-sampler", mode)
}

// settle forces a full collection in permitd (through its admin port's
// pprof handler) before the measurement: the collections that follow
// loading the bundled data (a heap still holding the load's garbage) are
// behind a server that has run for a while, and would otherwise fall on
// the first endpoint measured (with GODEBUG=gctrace=1, the two cycles
// after the load took 3.1 and 7.1 s of wall time at GOMAXPROCS=1; resolve,
// measured first, read from 0.36 to 0.81 between runs).
func settle(p *proc) error {
	res, err := http.Get(p.admin + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return err
}

func waitReady(base string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/v1/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return errors.New("permitd not ready within " + within.String())
}

// resolveQueries are the resolve URLs of the quality set's rows.
func resolveQueries(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "query\t") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 3 || strings.TrimSpace(cols[0]) == "" {
			continue
		}
		v := url.Values{"query": {cols[0]}}
		if cols[1] != "" {
			v.Set("state", cols[1])
		}
		if cols[2] != "" {
			v.Set("geo_type", cols[2])
		}
		u := "/v1/locations/resolve?" + v.Encode()
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out, sc.Err()
}

// findProperty finds a Seattle permit's address that property search
// matches, and the property's id.
func findProperty(get func(string) (int, string, []byte, time.Duration, error), geoID string) (id, addr string, err error) {
	code, _, body, _, err := get("/v1/permits/search?limit=100&geo_id=" + geoID)
	if err != nil || code != http.StatusOK {
		return "", "", fmt.Errorf("permits search: %d %v", code, err)
	}
	var page struct {
		Permits []struct {
			Location struct {
				FullAddress *string `json:"full_address"`
			} `json:"location"`
		} `json:"permits"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return "", "", err
	}
	for _, p := range page.Permits {
		if p.Location.FullAddress == nil {
			continue
		}
		a := *p.Location.FullAddress
		code, _, body, _, err := get("/v1/search/property?address=" + url.QueryEscape(a))
		if err != nil || code != http.StatusOK {
			continue
		}
		var m struct {
			PropertyID string `json:"property_id"`
		}
		if json.Unmarshal(body, &m) == nil && m.PropertyID != "" {
			return m.PropertyID, a, nil
		}
	}
	return "", "", errors.New("no Seattle permit address matched a property")
}
