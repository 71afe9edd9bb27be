// Command chaos runs permitd serve against a real redis-server, drives a
// steady load of authenticated requests, kills redis-server mid-run,
// restarts it, and reports what the clients saw in each phase (answers by
// status, latency of keys the server had checked before the outage, of
// keys it had not) and how long the service took to recover after Redis
// came back. `make load-chaos` runs it; it exits 1 when a 500 was seen
// or the service did not recover.
//
//	go run ./test/faults/chaos -duration 20s -rate 300 -kill-at 6s -down 5s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/internal/freeport"
	"github.com/permitd/permitd/internal/servelines"
)

type options struct {
	duration, killAt, down time.Duration
	rate                   int
	path, bin, redisBin    string
	serveArgs              string
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "length of the run")
	flag.IntVar(&o.rate, "rate", 300, "requests per second")
	flag.DurationVar(&o.killAt, "kill-at", 6*time.Second, "when redis-server is killed (SIGKILL)")
	flag.DurationVar(&o.down, "down", 5*time.Second, "how long Redis stays down")
	flag.StringVar(&o.path, "path", "/v1/locations/gabc", "request path (with -data none: an authenticated 404)")
	flag.StringVar(&o.bin, "permitd", "", "permitd binary; empty: go build ./cmd/permitd")
	flag.StringVar(&o.redisBin, "redis-server", "redis-server", "redis-server binary")
	flag.StringVar(&o.serveArgs, "serve-args", "-data none", "extra arguments to permitd serve")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// sample is one request's outcome.
type sample struct {
	at     time.Duration // since the start of the load
	cold   bool          // key first used during the outage
	status int           // 0: transport error
	took   time.Duration
}

func run(o options) error {
	tmp, err := os.MkdirTemp("", "permitd-chaos")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.bin == "" {
		o.bin = filepath.Join(tmp, "permitd")
		if out, err := exec.Command("go", "build", "-o", o.bin, "./cmd/permitd").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	port, err := freeport.Loopback()
	if err != nil {
		return err
	}
	rs := &redisServer{bin: o.redisBin, port: port, dir: tmp}
	if err := rs.start(); err != nil {
		return err
	}
	defer rs.kill()

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: rs.addr()})
	defer rdb.Close()
	store := apikey.NewRedisStore(rdb, "")
	var warm, cold []string
	for i := range 40 {
		k, _, err := apikey.Issue(ctx, store, "enterprise", time.Now())
		if err != nil {
			return fmt.Errorf("issue keys: %w", err)
		}
		if i < 20 {
			warm = append(warm, k)
		} else {
			cold = append(cold, k)
		}
	}

	args := append([]string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-redis-url", "redis://" + rs.addr(), "-log-level", "warn", "-drain-delay", "0s"},
		strings.Fields(o.serveArgs)...)
	srv := exec.Command(o.bin, args...)
	srv.Stderr = io.Discard
	out, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() }()
	base := servelines.Read(out, func(l servelines.Lines) bool { return l.Base != "" }).Base
	if base == "" {
		return errors.New("permitd serve printed no address")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	for _, k := range warm { // the server checks these before the outage
		if _, err := get(client, base+o.path, k); err != nil {
			return err
		}
	}

	var mu sync.Mutex
	var samples []sample
	var wg sync.WaitGroup
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	killed, restarted := false, false
	var restartedAt time.Duration
	recovered := time.Duration(-1)
	for n := 0; ; n++ {
		<-tick.C
		now := time.Since(start)
		if now >= o.duration {
			break
		}
		if !killed && now >= o.killAt {
			killed = true
			rs.kill()
			fmt.Printf("%6.2fs redis-server killed\n", now.Seconds())
		}
		if killed && !restarted && now >= o.killAt+o.down {
			restarted = true
			if err := rs.start(); err != nil {
				return err
			}
			restartedAt = time.Since(start)
			fmt.Printf("%6.2fs redis-server restarted (from its append-only file)\n", restartedAt.Seconds())
		}
		// Cold keys are used only from the kill on: the server has never
		// checked them.
		isCold := killed && n%4 == 0
		key := warm[n%len(warm)]
		if isCold {
			key = cold[n%len(cold)]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			status, _ := get(client, base+o.path, key)
			s := sample{at: t0.Sub(start), cold: isCold, status: status, took: time.Since(t0)}
			mu.Lock()
			samples = append(samples, s)
			if restarted && recovered < 0 && isCold && status != 0 && status != http.StatusServiceUnavailable && s.at >= restartedAt {
				recovered = s.at - restartedAt
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return report(o, samples, restartedAt, recovered)
}

func report(o options, samples []sample, restartedAt, recovered time.Duration) error {
	phases := []struct {
		name     string
		from, to time.Duration
	}{
		{"before", 0, o.killAt},
		{"redis down", o.killAt, restartedAt},
		{"after restart", restartedAt, o.duration},
	}
	fmt.Printf("\n%-14s %-5s %7s  %-32s %9s %9s %9s\n", "phase", "keys", "count", "answers", "p50", "p99", "max")
	bad := 0
	for _, ph := range phases {
		for _, cold := range []bool{false, true} {
			var took []time.Duration
			statuses := map[int]int{}
			for _, s := range samples {
				if s.at >= ph.from && s.at < ph.to && s.cold == cold {
					took = append(took, s.took)
					statuses[s.status]++
				}
			}
			if len(took) == 0 {
				continue
			}
			bad += statuses[http.StatusInternalServerError] + statuses[0]
			slices.Sort(took)
			q := func(p float64) time.Duration { return took[min(int(p*float64(len(took))), len(took)-1)] }
			var parts []string
			for _, code := range slices.Sorted(maps.Keys(statuses)) {
				name := strconv.Itoa(code)
				if code == 0 {
					name = "error"
				}
				parts = append(parts, fmt.Sprintf("%s:%d", name, statuses[code]))
			}
			kind := "seen"
			if cold {
				kind = "new"
			}
			fmt.Printf("%-14s %-5s %7d  %-32s %9s %9s %9s\n", ph.name, kind, len(took), strings.Join(parts, " "),
				q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), took[len(took)-1].Round(10*time.Microsecond))
		}
	}
	if recovered >= 0 {
		fmt.Printf("\nrecovery: new keys answered %s after redis-server restarted\n", recovered.Round(time.Millisecond))
	} else {
		fmt.Println("\nrecovery: new keys were still refused at the end of the run")
	}
	fmt.Printf("500s and transport errors: %d\n", bad)
	if bad > 0 || recovered < 0 {
		return errors.New("the service failed under chaos")
	}
	return nil
}

func get(c *http.Client, url, key string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", key)
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

// redisServer is a redis-server process on a fixed port, with an
// append-only file synced on every write (as a production Redis keeping
// issued keys would be), so that a restart after SIGKILL keeps them.
type redisServer struct {
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
}

func (r *redisServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

func (r *redisServer) start() error {
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--daemonize", "no", "--loglevel", "warning", "--logfile", "")
	r.cmd.Dir = r.dir
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w (install redis-server)", r.bin, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", r.addr(), 100*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("redis-server did not start")
}

func (r *redisServer) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}
