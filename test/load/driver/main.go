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
//	driver -permitd bin/permitd -floor bin/floor [-duration 5s] [-workers 32] [-procs 1]
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// proc is a started server process.
type proc struct {
	cmd  *exec.Cmd
	base string
}

// start runs bin with args and env, waits for its "serving on" line.
func start(bin string, args, env []string, errFile string) (*proc, error) {
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
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if p.base == "" {
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

	srv, err := start(c.permitd, []string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-response-cache-mb", strconv.Itoa(c.cacheMB)}, []string{
		procs, "PERMITD_API_KEYS=" + strings.Join(keys, ","), "PERMITD_NOW=" + c.now, "PERMITD_LOG_LEVEL=" + c.logLevel,
	}, filepath.Join(tmp, "permitd.err"))
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := waitReady(srv.base, 5*time.Minute); err != nil {
		return err
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
	floor, err := start(c.floor, []string{"-addr", "127.0.0.1:0", "-recordings", recFile}, []string{procs}, filepath.Join(tmp, "floor.err"))
	if err != nil {
		return err
	}
	defer floor.stop()

	fmt.Printf("load: %d workers, %s per endpoint and server (after %s warm-up), GOMAXPROCS=%d for permitd and the floor, %d keys, %d resolve queries\n",
		c.workers, c.duration, c.warmup, c.procs, len(keys), len(eps[0].urls))
	fmt.Printf("load: permitd log level %s (info: an access-log line per request), response cache %d MB\n", c.logLevel, c.cacheMB)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "endpoint\treq/s\tp50 ms\tp99 ms\tfloor req/s\tratio\tnon-2xx\t")
	for i, ep := range eps {
		if c.only != "" && !strings.Contains(ep.name, c.only) {
			continue
		}
		var s, f stats
		// alternate which goes first, so that drift favours neither
		if i%2 == 0 {
			s = attack(srv.base, ep, keys, c)
			f = attack(floor.base, ep, keys, c)
		} else {
			f = attack(floor.base, ep, keys, c)
			s = attack(srv.base, ep, keys, c)
		}
		non2xx := fmt.Sprint(s.non2xx)
		if f.non2xx > 0 {
			non2xx += fmt.Sprintf(" (floor %d)", f.non2xx)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%.0f\t%.2f\t%s\t\n", ep.name, s.rps, ms(s.p50), ms(s.p99), f.rps, s.rps/f.rps, non2xx)
		fmt.Fprintf(os.Stderr, "load: %s done (%.2f)\n", ep.name, s.rps/f.rps)
	}
	_ = tw.Flush()
	fmt.Println("cold permit stats (first request, one at a time, before the load):")
	for _, l := range cold {
		fmt.Println("  " + l)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type stats struct {
	rps      float64
	p50, p99 time.Duration
	non2xx   uint64
}

// attack drives ep at saturation: a warm-up, then the measured run.
func attack(base string, ep endpoint, keys []string, c config) stats {
	var n atomic.Uint64
	tr := func(t *vegeta.Target) error {
		i := n.Add(1)
		t.Method = http.MethodGet
		t.URL = base + ep.urls[i%uint64(len(ep.urls))]
		t.Header = http.Header{"X-Api-Key": {keys[i%uint64(len(keys))]}, "Accept-Encoding": {"identity"}}
		return nil
	}
	// One client for the warm-up and the measured run (an attacker cannot
	// be reused once its attack ends), so the measured run starts warm.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConns: c.workers, MaxIdleConnsPerHost: c.workers, MaxConnsPerHost: c.workers,
		DisableCompression: true, IdleConnTimeout: time.Minute,
	}}
	defer client.CloseIdleConnections()
	w := uint64(c.workers)
	newAttacker := func() *vegeta.Attacker {
		return vegeta.NewAttacker(vegeta.Workers(w), vegeta.MaxWorkers(w), vegeta.MaxBody(0), vegeta.Client(client))
	}
	if c.warmup > 0 {
		for range newAttacker().Attack(tr, vegeta.ConstantPacer{}, c.warmup, ep.name) {
		}
	}
	atk := newAttacker()
	var m vegeta.Metrics
	var bad uint64
	for res := range atk.Attack(tr, vegeta.ConstantPacer{}, c.duration, ep.name) {
		if res.Code < 200 || res.Code > 299 {
			bad++
		}
		m.Add(res)
	}
	m.Close()
	return stats{rps: float64(m.Requests) / m.Duration.Seconds(), p50: m.Latencies.P50, p99: m.Latencies.P99, non2xx: bad}
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
