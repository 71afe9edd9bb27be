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
// allocation profiles of each endpoint's load (of the 2nd permitd too,
// named 2nd_*).
//
//	driver -permitd bin/permitd -floor bin/floor [-duration 5s] [-workers 32] [-procs 1]
//	       [-rounds 5|20] [-tracing discard|otlp-sink|off-sampler] [-env K=V,...] [-env-all K=V,...]
//	       [-pprof dir]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

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
	flag.StringVar(&c.pprofDir, "pprof", "", "directory: permitd runs with -pprof, and after each endpoint's measured rounds one more attack on it (not counted) is profiled: CPU and allocations, written there (a 2nd permitd's too, as 2nd_*)")
	flag.StringVar(&c.env, "env", "", "comma-separated K=V: also run a second permitd with these variables added (with -tracing: the traced one) and compare it to the first in the same run, e.g. GOGC=400")
	flag.StringVar(&c.envAll, "env-all", "", "comma-separated K=V added to every permitd's environment, e.g. GOMEMLIMIT=6GiB (under a memory limit serve's collector target is 400, as in the Kubernetes manifests)")
	flag.StringVar(&c.tracing, "tracing", "", "also run a second permitd with tracing on and compare it to the first (metrics only) in the same run: discard (every span sampled and dropped by an in-process exporter), otlp-sink (every span exported over OTLP/HTTP to a sink here that drops it), off-sampler (OTEL_TRACES_SAMPLER=always_off)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
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
		var profs []profiled
		if c.pprofDir != "" {
			profs = append(profs, profiled{srv, profile(srv.admin, c.pprofDir, ep.name, c.duration)})
			if traced != nil {
				profs = append(profs, profiled{traced, profile(traced.admin, c.pprofDir, "2nd "+ep.name, c.duration)})
			}
		}
		res := attackRounds(order, ep, keys, c, profs)
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
