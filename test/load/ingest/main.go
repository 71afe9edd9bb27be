// Command ingest measures the Kafka ingest as separate processes: a
// kfake-broker (../shared/tools/kfake-broker, a real broker's default
// limits), `permitd serve -data none` consuming from it, and `permitd
// publish` feeding it. It prints how long the replay of a base took and
// how long a second set of files published into the running server took
// to be handled, with the cores the server kept busy, as measured from
// its /proc/<pid>/stat.
//
//	go run ./test/load/ingest [-permitd bin/permitd] [-permits 100000] [-runs 2] [-A BIN -B BIN] [-live leads]
//
// The base is the bundled gazetteer and Seattle data, `permitd gen
// -permits N -seed 1` and `permitd signals` of the three; the live set is
// `gen -permits N -seed 3` and its signals (with the gazetteer), or with
// -live leads only those signals' lead events (new leads into a running
// server, the write path of the lead trees and roll-ups). The files
// are generated once into -work and reused. With -restart the server
// keeps a snapshot file; after the live set it is stopped (its shutdown
// snapshot) and started again from the snapshot, timed to ready.
// -cpuprofile N and -replay-cpuprofile N write CPU profiles of the live
// phase and of the replay (from serve's admin address's first answer)
// into -work.
//
// The harness polls the server's readiness (admin /v1/health/ready) with
// one kept-alive HTTP connection every 100ms, and reads the process's CPU
// from /proc: the measurement costs the machine next to nothing. (A
// shell loop that started a python3 per poll took 0.12 CPU-s each time,
// a whole core at 20 polls a second, and made the server look idle.)
// With -A and -B two binaries take turns, run by run; -env-b adds
// variables to the second's environment (the same binary twice: an A/B
// of the variables). The server's kernel share is printed too: on a VM
// that hands memory back to its host, the first touch of new heap pages
// is much of a replay's CPU, and moves from run to run.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/child"
	"github.com/permitd/permitd/internal/freeport"
	"github.com/permitd/permitd/internal/servelines"
)

type config struct {
	permitd, a, b string
	brokerDir     string
	work          string
	permits       int
	runs          int
	together      bool
	now           string
	profile       int
	replayProfile int
	settleProfile int
	settleTrace   int
	liveTrace     int
	restart       bool
	env, envB     string
	live          string
}

func main() {
	var c config
	flag.StringVar(&c.permitd, "permitd", "", "permitd binary (empty: go build ./cmd/permitd into -work); also generates the files")
	flag.StringVar(&c.a, "A", "", "with -B: two permitd binaries measured in turns (A, B, A, B, ...)")
	flag.StringVar(&c.b, "B", "", "the second binary of -A")
	flag.StringVar(&c.brokerDir, "broker-dir", "", "source of kfake-broker (empty: ../shared/tools/kfake-broker beside the repository)")
	flag.StringVar(&c.work, "work", filepath.Join(os.TempDir(), "permitd-ingest"), "directory for the binaries, the generated files and the logs")
	flag.IntVar(&c.permits, "permits", 100000, "generated permits in the base and in the live set each")
	flag.IntVar(&c.runs, "runs", 1, "runs (per binary)")
	flag.StringVar(&c.live, "live", "mix", `the live set: "mix" (gen -seed 3 and its signals) or "leads" (only the lead events of those signals: what a pipeline publishing nightly leads into a running server sends)`)
	flag.BoolVar(&c.together, "together", false, "publish the live set's two files at once (default: one after the other)")
	flag.StringVar(&c.now, "now", "2026-11-22", "the generator's and the signals' clock")
	flag.StringVar(&c.env, "env", "", "comma-separated K=V added to serve's environment, e.g. GOGC=200")
	flag.StringVar(&c.envB, "env-b", "", "comma-separated K=V added to serve's environment in -B's runs only (with -A and -B the same binary: an A/B of the variables)")
	flag.BoolVar(&c.restart, "restart", false, "serve writes a snapshot (-snapshot-file in -work); after the live set it is stopped (its shutdown snapshot) and started again from the snapshot, timed to ready")
	flag.IntVar(&c.profile, "cpuprofile", 0, "seconds: serve runs with -pprof and a CPU profile of that many seconds from the live publish's start is written to -work")
	flag.IntVar(&c.settleProfile, "settle-cpuprofile", 0, "seconds: serve runs with -pprof and a CPU profile of that many seconds from ready after the replay (the second side's build) is written to -work")
	flag.IntVar(&c.settleTrace, "settle-trace", 0, "seconds: serve runs with -pprof and an execution trace of that many seconds from ready after the replay is written to -work (go tool trace)")
	flag.IntVar(&c.liveTrace, "live-trace", 0, "seconds: serve runs with -pprof and an execution trace of that many seconds from the live publish's start is written to -work")
	flag.IntVar(&c.replayProfile, "replay-cpuprofile", 0, "seconds: serve runs with -pprof and a CPU profile of that many seconds from its admin address's first answer (the replay) is written to -work")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.live != "mix" && c.live != "leads" {
		return fmt.Errorf("-live %q: want mix or leads", c.live)
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	bins := []string{c.permitd}
	if c.a != "" || c.b != "" {
		if c.a == "" || c.b == "" {
			return errors.New("-A and -B go together")
		}
		bins = []string{c.a, c.b}
	}
	if bins[0] == "" {
		bins[0] = filepath.Join(c.work, "permitd")
		if err := goBuild(bins[0], "./cmd/permitd", ""); err != nil {
			return err
		}
	}
	broker, err := buildBroker(c)
	if err != nil {
		return err
	}
	files, err := generate(c, bins[0])
	if err != nil {
		return err
	}
	for r := range c.runs {
		for i, bin := range bins {
			name := fmt.Sprintf("run %d", r+1)
			if len(bins) > 1 {
				name += " " + string(rune('A'+i))
			}
			env := splitEnv(c.env)
			if i == 1 {
				env = append(env, splitEnv(c.envB)...)
			}
			if err := measure(c, name, bin, env, broker, files); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

func splitEnv(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func goBuild(out, pkg, dir string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// buildBroker builds kfake-broker into the work directory.
func buildBroker(c config) (string, error) {
	dir := c.brokerDir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
			if p := filepath.Join(d, "shared", "tools", "kfake-broker"); exists(filepath.Join(p, "main.go")) {
				dir = p
				break
			}
		}
		if dir == "" {
			return "", errors.New("no ../shared/tools/kfake-broker found: give -broker-dir")
		}
	}
	out := filepath.Join(c.work, "kfake-broker")
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	return abs, goBuild(abs, ".", dir)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// dataFiles are the generated NDJSON files: the base's and the live set's,
// in publishing order, with their event counts.
type dataFiles struct {
	base, live   []string
	nBase, nLive int
}

func generate(c config, bin string) (dataFiles, error) {
	var f dataFiles
	p := func(name string) string { return filepath.Join(c.work, name) }
	n := strconv.Itoa(c.permits)
	steps := []struct {
		out  string
		args []string
		in   []string // concatenated into the command's stdin
	}{
		{p("gazetteer.ndjson"), []string{"import", "gazetteer"}, nil},
		{p("seattle.ndjson"), []string{"import", "seattle"}, nil},
		{p("gen1-" + n + ".ndjson"), []string{"gen", "-permits", n, "-seed", "1", "-now", c.now}, nil},
		{p("sig1-" + n + ".ndjson"), []string{"signals", "-as-of", c.now}, []string{p("gazetteer.ndjson"), p("seattle.ndjson"), p("gen1-" + n + ".ndjson")}},
		{p("gen3-" + n + ".ndjson"), []string{"gen", "-permits", n, "-seed", "3", "-now", c.now}, nil},
		{p("sig3-" + n + ".ndjson"), []string{"signals", "-as-of", c.now}, []string{p("gazetteer.ndjson"), p("gen3-" + n + ".ndjson")}},
	}
	for _, s := range steps {
		if !exists(s.out) {
			if err := writeCmd(bin, s.args, s.in, s.out); err != nil {
				return f, err
			}
		}
	}
	f.base = []string{steps[0].out, steps[1].out, steps[2].out, steps[3].out}
	switch c.live {
	case "mix":
		f.live = []string{steps[4].out, steps[5].out}
	case "leads":
		leads := p("lead3-" + n + ".ndjson")
		if !exists(leads) {
			if err := keepLeads(steps[5].out, leads); err != nil {
				return f, err
			}
		}
		f.live = []string{leads}
	}
	for _, name := range f.base {
		f.nBase += lines(name)
	}
	for _, name := range f.live {
		f.nLive += lines(name)
	}
	return f, nil
}

// keepLeads writes the lead events of the NDJSON file in to out (through
// a temporary file), in their order.
func keepLeads(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var kept bytes.Buffer
	for line := range bytes.Lines(b) {
		var env struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &env); err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		if strings.HasPrefix(env.Type, "permit_lead.") {
			kept.Write(line)
		}
	}
	if kept.Len() == 0 {
		return fmt.Errorf("%s holds no lead event", in)
	}
	fmt.Fprintf(os.Stderr, "ingest: the lead events of %s > %s\n", in, out)
	if err := os.WriteFile(out+".tmp", kept.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}

// writeCmd runs bin args with the files in concatenated on its stdin and
// its stdout written to out (through a temporary file).
func writeCmd(bin string, args, in []string, out string) error {
	tmp := out + ".tmp"
	o, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer o.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = o, os.Stderr
	if len(in) > 0 {
		var rs []io.Reader
		for _, name := range in {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			rs = append(rs, f)
		}
		cmd.Stdin = io.MultiReader(rs...)
	}
	fmt.Fprintf(os.Stderr, "ingest: %s %s > %s\n", bin, strings.Join(args, " "), out)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %v: %w", bin, args, err)
	}
	if err := o.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func lines(name string) int {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte{'\n'})
}

// measure runs one broker and one server: the base published before the
// server starts (its replay), then the live set into it.
func measure(c config, name, bin string, env []string, broker string, f dataFiles) error {
	port, err := freeport.Loopback()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	bl, err := os.Create(filepath.Join(c.work, "broker.log"))
	if err != nil {
		return err
	}
	defer bl.Close()
	bcmd := exec.Command(broker, "-port", strconv.Itoa(port))
	bcmd.Stdout, bcmd.Stderr = bl, bl
	if err := bcmd.Start(); err != nil {
		return err
	}
	defer child.Stop(bcmd, 5*time.Second)
	if err := waitDial(addr, 10*time.Second); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	start := time.Now()
	for _, file := range f.base {
		if err := publish(bin, addr, file); err != nil {
			return err
		}
	}
	fmt.Printf("%s: base of %d events published in %.2f s; serve's added environment: %q\n", name, f.nBase, time.Since(start).Seconds(), env)

	args := []string{"serve", "-data", "none", "-kafka-brokers", addr, "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-api-keys", probeKey}
	if c.profile > 0 || c.replayProfile > 0 || c.settleProfile > 0 || c.settleTrace > 0 || c.liveTrace > 0 {
		args = append(args, "-pprof")
	}
	snap := filepath.Join(c.work, "serve.snapshot")
	if c.restart {
		if err := os.Remove(snap); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		args = append(args, "-snapshot-file", snap)
	}
	start = time.Now()
	srv, err := startServe(c, bin, args, env, "serve.log")
	if err != nil {
		return err
	}
	defer srv.stop()
	lines := srv.lines
	pid := srv.cmd.Process.Pid
	cl := &http.Client{Timeout: 5 * time.Second}
	if c.replayProfile > 0 {
		go saveProfile(lines.Admin, c.replayProfile, filepath.Join(c.work, strings.ReplaceAll(name, " ", "-")+".replay.cpu.prof"), "the replay")
	}
	cpu0, bcpu0, mcpu0, sys0 := cpuSeconds(pid), cpuSeconds(bcmd.Process.Pid), machineSeconds(), sysSeconds(pid)
	st, err := waitFor(cl, lines.Admin, 120*time.Second, func(s state) bool { return s.CaughtUp })
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("%s: replay of %d events ready %.2f s after serve started (%.0f events/s); cores: server %.3f (%.3f of it in the kernel), broker %.3f, machine %.3f\n",
		name, st.events(), took.Seconds(), float64(st.events())/took.Seconds(), (cpuSeconds(pid)-cpu0)/took.Seconds(),
		(sysSeconds(pid)-sys0)/took.Seconds(), (cpuSeconds(bcmd.Process.Pid)-bcpu0)/took.Seconds(), (machineSeconds()-mcpu0)/took.Seconds())
	if c.settleProfile > 0 {
		go saveProfile(lines.Admin, c.settleProfile, filepath.Join(c.work, strings.ReplaceAll(name, " ", "-")+".settle.cpu.prof"), "after ready")
	}
	if c.settleTrace > 0 {
		go saveTrace(lines.Admin, c.settleTrace, filepath.Join(c.work, strings.ReplaceAll(name, " ", "-")+".settle.trace"), "after ready")
	}
	stopProbe := make(chan struct{})
	probed := probe(lines.Base, probePath, stopProbe)
	settled := waitIdle(pid, 60*time.Second)
	close(stopProbe)
	fmt.Printf("%s: the server idle %.2f s after ready (the second side built); %s\n", name, settled.Seconds(), <-probed)

	base := st.events()
	want := base + f.nLive
	if c.profile > 0 {
		go saveProfile(lines.Admin, c.profile, filepath.Join(c.work, strings.ReplaceAll(name, " ", "-")+".cpu.prof"), "the live phase")
	}
	if c.liveTrace > 0 {
		go saveTrace(lines.Admin, c.liveTrace, filepath.Join(c.work, strings.ReplaceAll(name, " ", "-")+".live.trace"), "the live phase")
	}
	start = time.Now()
	cpu0, bcpu0, mcpu0, sys0 = cpuSeconds(pid), cpuSeconds(bcmd.Process.Pid), machineSeconds(), sysSeconds(pid)
	flt0, vm0 := minorFaults(pid), vmstat()
	pubDone := make(chan error, 1)
	var pubEnd time.Time
	var cpuPub float64
	go func() {
		var err error
		if c.together {
			errs := make(chan error, len(f.live))
			for _, file := range f.live {
				go func() { errs <- publish(bin, addr, file) }()
			}
			for range f.live {
				err = errors.Join(err, <-errs)
			}
		} else {
			for _, file := range f.live {
				if err = publish(bin, addr, file); err != nil {
					break
				}
			}
		}
		pubEnd, cpuPub = time.Now(), cpuSeconds(pid)
		pubDone <- err
	}()
	stopLive := make(chan struct{})
	probedLive := probe(lines.Base, probePath, stopLive)
	st, err = waitFor(cl, lines.Admin, 300*time.Second, func(s state) bool { return s.events() >= want && s.Lag == 0 })
	close(stopLive)
	if err != nil {
		return err
	}
	end, cpuEnd, bcpuEnd, mcpuEnd, sysEnd := time.Now(), cpuSeconds(pid), cpuSeconds(bcmd.Process.Pid), machineSeconds(), sysSeconds(pid)
	flt, vm := minorFaults(pid)-flt0, vmstat()
	if err := <-pubDone; err != nil {
		return err
	}
	how := "one file after the other"
	if c.together {
		how = "the files at once"
	}
	whole := end.Sub(start).Seconds()
	fmt.Printf("%s: live %d events (%s) handled %.2f s after the publish began (%.0f events/s); published in %.2f s\n",
		name, f.nLive, how, whole, float64(f.nLive)/whole, pubEnd.Sub(start).Seconds())
	fmt.Printf("%s: reads while the live events applied: %s\n", name, <-probedLive)
	fmt.Printf("%s: cores over the whole: server %.3f (%.3f of it in the kernel), broker %.3f, machine %.3f; server over the %.2f s after the publish ended %.3f\n",
		name, (cpuEnd-cpu0)/whole, (sysEnd-sys0)/whole, (bcpuEnd-bcpu0)/whole, (mcpuEnd-mcpu0)/whole, end.Sub(pubEnd).Seconds(), (cpuEnd-cpuPub)/end.Sub(pubEnd).Seconds())
	// Where the server's kernel time goes: its first touches of new
	// pages, and whether the machine reclaimed memory to give them.
	perFault := 0.0
	if flt > 0 {
		perFault = (sysEnd - sys0) / flt * 1e6
	}
	d := func(k string) int64 { return vm[k] - vm0[k] }
	fmt.Printf("%s: server %.0f page faults (%.2f µs of its kernel time a fault); machine: %d direct reclaim stalls, %d pages reclaimed directly and %d by kswapd, free memory %d MiB after\n",
		name, flt, perFault, d("allocstall_normal")+d("allocstall_movable")+d("allocstall_dma32"), d("pgsteal_direct"), d("pgsteal_kswapd"), vm["nr_free_pages"]*4/1024)
	if c.restart {
		return restart(c, name, bin, srv, args, env, snap)
	}
	return nil
}

// server is a started permitd serve.
type server struct {
	cmd     *exec.Cmd
	lines   servelines.Lines
	log     *os.File
	stopped bool
}

// startServe starts bin with args and env, its standard error into
// logName in the work directory, and waits for its addresses.
func startServe(c config, bin string, args, env []string, logName string) (*server, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(c.work, logName))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	s := &server{cmd: cmd, log: log}
	s.lines = servelines.Read(out, func(l servelines.Lines) bool { return l.Base != "" && l.Admin != "" })
	if s.lines.Admin == "" {
		s.stop()
		return nil, fmt.Errorf("serve printed no admin address (see %s)", log.Name())
	}
	return s, nil
}

// stop ends the server with SIGTERM (its shutdown, and its shutdown
// snapshot when it has a snapshot file), once.
func (s *server) stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	_, _ = child.Stop(s.cmd, 60*time.Second)
	s.log.Close()
}

// restart stops the server (its shutdown snapshot) and starts it again
// from that snapshot, timing both, as a rolling restart does.
func restart(c config, name, bin string, srv *server, args, env []string, snap string) error {
	start := time.Now()
	srv.stop()
	stopped := time.Since(start)
	info, err := os.Stat(snap)
	if err != nil {
		return fmt.Errorf("no snapshot after the shutdown: %w", err)
	}
	start = time.Now()
	again, err := startServe(c, bin, args, env, "serve-restart.log")
	if err != nil {
		return err
	}
	defer again.stop()
	pid := again.cmd.Process.Pid
	cl := &http.Client{Timeout: 5 * time.Second}
	if _, err := waitFor(cl, again.lines.Admin, 120*time.Second, func(s state) bool { return s.CaughtUp }); err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("%s: stopped in %.2f s (its shutdown snapshot %.0f MB); started again from it, ready %.2f s after serve started; cores: server %.3f (%.3f of it in the kernel)\n",
		name, stopped.Seconds(), float64(info.Size())/(1<<20), took.Seconds(), cpuSeconds(pid)/took.Seconds(), sysSeconds(pid)/took.Seconds())
	stopProbe := make(chan struct{})
	probed := probe(again.lines.Base, probePath, stopProbe)
	idle := waitIdle(pid, 60*time.Second)
	close(stopProbe)
	fmt.Printf("%s: the restarted server idle %.2f s after ready (the second side built); %s\n", name, idle.Seconds(), <-probed)
	return nil
}

func publish(bin, addr, file string) error {
	cmd := exec.Command(bin, "publish", "-brokers", addr, "-file", file)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("publish %s: %w: %s", file, err, lastLine(errb.String()))
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func waitDial(addr string, limit time.Duration) error {
	end := time.Now().Add(limit)
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(end) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// state is the indexer's part of serve's readiness answer.
type state struct {
	CaughtUp    bool  `json:"caught_up"`
	Lag         int64 `json:"lag"`
	Applied     int   `json:"events_applied"`
	Stale       int   `json:"events_stale"`
	DeadLetters int   `json:"dead_letters"`
}

// events are the events the indexer is done with.
func (s state) events() int { return s.Applied + s.Stale + s.DeadLetters }

// waitFor polls readiness every 100ms until ok holds.
func waitFor(cl *http.Client, admin string, limit time.Duration, ok func(state) bool) (state, error) {
	end := time.Now().Add(limit)
	var last state
	for time.Now().Before(end) {
		if s, err := readState(cl, admin); err == nil {
			last = s
			if ok(s) {
				return s, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last, fmt.Errorf("not there after %s: %+v", limit, last)
}

func readState(cl *http.Client, admin string) (state, error) {
	resp, err := cl.Get(admin + "/v1/health/ready")
	if err != nil {
		return state{}, err
	}
	defer resp.Body.Close()
	var body struct {
		Checks struct {
			Indexer state `json:"indexer"`
		} `json:"checks"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	return body.Checks.Indexer, err
}

// probeKey is the API key serve is started with: probe's reads need one.
const probeKey = "ingest-probe-key-0123456789abcdef"

// probePath is what probe reads: a location's detail (Seattle's), a read
// of the read model whose own cost is about 0.1 ms.
var probePath = "/v1/locations/" + events.GeoID("city", "1840021117")

// probe reads path every 10 ms (about 1% of a core of serve's, so that
// waitIdle still sees serve idle) until stop is closed, and then sends a
// summary of the reads' latencies: what a reader meets while serve works
// after ready (the second side's build).
func probe(base, path string, stop <-chan struct{}) <-chan string {
	out := make(chan string, 1)
	go func() {
		cl := &http.Client{Timeout: 5 * time.Second}
		var took []time.Duration
		failed := 0
		for {
			select {
			case <-stop:
				out <- probeSummary(took, failed)
				return
			case <-time.After(10 * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodGet, base+path, nil)
			req.Header.Set("X-API-Key", probeKey)
			t0 := time.Now()
			res, err := cl.Do(req)
			if err != nil {
				failed++
				continue
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				failed++
				continue
			}
			took = append(took, time.Since(t0))
		}
	}()
	return out
}

func probeSummary(took []time.Duration, failed int) string {
	if len(took) == 0 {
		return fmt.Sprintf("no read answered meanwhile (%d failed)", failed)
	}
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	over := 0
	for _, d := range took {
		if d > 5*time.Millisecond {
			over++
		}
	}
	return fmt.Sprintf("a location read every 10 ms meanwhile: %d reads, p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d over 5 ms, %d failed",
		len(took), ms(took[len(took)/2]), ms(took[len(took)*99/100]), ms(took[len(took)-1]), over, failed)
}

// waitIdle waits until the process used under 5% of a core over half a
// second, and says how long that took.
func waitIdle(pid int, limit time.Duration) time.Duration {
	start := time.Now()
	prev := cpuSeconds(pid)
	for time.Since(start) < limit {
		time.Sleep(500 * time.Millisecond)
		now := cpuSeconds(pid)
		if now-prev < 0.025 {
			return time.Since(start)
		}
		prev = now
	}
	return time.Since(start)
}

// cpuSeconds is the process's user and system CPU time so far (Linux;
// 0 elsewhere), in seconds (clock ticks of 1/100 s).
func cpuSeconds(pid int) float64 {
	u, k := cpuTimes(pid)
	return u + k
}

// sysSeconds is the process's system CPU time so far (page faults, system
// calls), in seconds.
func sysSeconds(pid int) float64 {
	_, k := cpuTimes(pid)
	return k
}

// cpuTimes are the process's user and system CPU times so far, in
// seconds.
func cpuTimes(pid int) (user, sys float64) {
	f := procStat(pid)
	if len(f) < 13 {
		return 0, 0
	}
	u, _ := strconv.ParseFloat(f[11], 64) // utime, field 14
	k, _ := strconv.ParseFloat(f[12], 64) // stime, field 15
	return u / 100, k / 100
}

// procStat is the fields of the process's /proc/<pid>/stat after its
// command name (f[0] is field 3, the state); nil when unreadable.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 <= len(s) {
		s = s[i+2:] // the command name may hold spaces
	}
	return strings.Fields(s)
}

// minorFaults is the process's minor page faults so far.
func minorFaults(pid int) float64 {
	f := procStat(pid)
	if len(f) < 8 {
		return 0
	}
	n, _ := strconv.ParseFloat(f[7], 64) // minflt, field 10
	return n
}

// vmstat is the machine's /proc/vmstat counters (Linux; empty elsewhere).
func vmstat() map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			out[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return out
}

// machineSeconds is the CPU time all cores spent busy so far (Linux:
// /proc/stat's first line, all but idle and iowait), in seconds.
func machineSeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // guest time is counted in user already
			break
		}
		n, _ := strconv.ParseFloat(v, 64)
		busy += n
	}
	return busy / 100
}

func saveProfile(admin string, seconds int, path, what string) {
	savePprof(admin, "profile", seconds, path, "CPU profile of "+what)
}

// saveTrace writes an execution trace of serve (what its goroutines
// waited on, not only where its CPU went).
func saveTrace(admin string, seconds int, path, what string) {
	savePprof(admin, "trace", seconds, path, "execution trace of "+what)
}

func savePprof(admin, kind string, seconds int, path, what string) {
	cl := &http.Client{Timeout: time.Duration(seconds+30) * time.Second}
	resp, err := cl.Get(admin + "/debug/pprof/" + kind + "?seconds=" + strconv.Itoa(seconds))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest: "+kind+":", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest: "+kind+":", err)
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
	fmt.Fprintln(os.Stderr, "ingest:", what, "in", path)
}
