// Command measure runs the acceptance measurements of the connection cap
// and the drain against a permitd binary, printing what it saw.
//
//	go run ./test/faults/measure -mode idle -conns 30000
//	    opens -conns keep-alive connections (each makes one request, then
//	    idles) from child processes, while a normal client makes a request
//	    on a new connection every 50ms; prints that client's latencies.
//	go run ./test/faults/measure -mode drain
//	    drives load on keep-alive connections, sends SIGTERM, stops
//	    sending when readiness turns 503 (as a load balancer does); prints
//	    failed requests and the shutdown's timings.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/permitd/permitd/internal/servelines"
)

func main() {
	mode := flag.String("mode", "idle", "idle, drain (or flood: a child of idle)")
	bin := flag.String("permitd", "", "permitd binary; empty: go build ./cmd/permitd")
	conns := flag.Int("conns", 30000, "idle: connections to open")
	addr := flag.String("addr", "", "flood: server host:port")
	src := flag.String("src", "127.0.0.1", "flood: local address to dial from")
	serveArgs := flag.String("serve-args", "", "extra arguments to permitd serve")
	flag.Parse()
	var err error
	switch *mode {
	case "flood":
		err = flood(*addr, *src, *conns)
	case "idle", "drain":
		err = measure(*mode, *bin, *conns, strings.Fields(*serveArgs))
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

type server struct {
	cmd       *exec.Cmd
	base, key string
	admin     string // the admin listener (metrics)
	exited    chan error
}

func startServer(bin string, args []string) (*server, error) {
	cmd := exec.Command(bin, append([]string{"serve", "-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-log-level", "info"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := servelines.Read(out, servelines.All)
	s := &server{cmd: cmd, base: lines.Base, key: lines.DevKey, admin: lines.Admin, exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait() }()
	if s.base == "" {
		return nil, errors.New("permitd serve printed no address")
	}
	return s, nil
}

func measure(mode, bin string, conns int, serveArgs []string) error {
	if bin == "" {
		tmp, err := os.MkdirTemp("", "permitd-measure")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "permitd")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/permitd").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	if mode == "idle" {
		serveArgs = append([]string{"-data", "none"}, serveArgs...)
	}
	s, err := startServer(bin, serveArgs)
	if err != nil {
		return err
	}
	defer func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		<-s.exited
	}()
	if mode == "idle" {
		return idle(s, conns)
	}
	return drain(s)
}

// idle floods the server from two child processes (a process may hold
// fewer descriptors than the flood needs, and a source address has fewer
// ephemeral ports) and times a normal client meanwhile.
func idle(s *server, conns int) error {
	var rl syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	fmt.Printf("ulimit -n: soft %d hard %d (per process); flooding with %d connections from 2 processes\n", rl.Cur, rl.Max, conns)
	hostport := strings.TrimPrefix(s.base, "http://")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var children []*exec.Cmd
	var holding atomic.Int32
	for i, src := range []string{"127.0.0.2", "127.0.0.3"} {
		n := conns / 2
		if i == 0 {
			n += conns % 2
		}
		c := exec.Command(self, "-mode", "flood", "-addr", hostport, "-src", src, "-conns", fmt.Sprint(n))
		c.Stderr = os.Stderr
		out, err := c.StdoutPipe()
		if err != nil {
			return err
		}
		if err := c.Start(); err != nil {
			return err
		}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				fmt.Println(sc.Text())
				if strings.Contains(sc.Text(), "holding them idle") {
					holding.Add(1)
				}
			}
		}()
		children = append(children, c)
	}
	defer func() {
		for _, c := range children {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	phase := func(name string, done func() bool) {
		var took []time.Duration
		failed := 0
		start := time.Now()
		for !done() {
			t0 := time.Now()
			req, _ := http.NewRequest(http.MethodGet, s.base+"/v1/locations/gabc", nil)
			req.Header.Set("X-API-Key", s.key)
			res, err := client.Do(req)
			if err != nil || res.StatusCode != http.StatusNotFound {
				failed++
				if err == nil {
					res.Body.Close()
				}
			} else {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				took = append(took, time.Since(t0))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(took) == 0 {
			fmt.Printf("normal client %s: nothing answered, %d failed\n", name, failed)
			return
		}
		slices.Sort(took)
		q := func(p float64) time.Duration {
			return took[min(int(p*float64(len(took))), len(took)-1)].Round(10 * time.Microsecond)
		}
		fmt.Printf("normal client %s (%s, a new connection every 50ms): %d answered, %d failed; p50 %s p99 %s max %s; over 100ms: %d\n",
			name, time.Since(start).Round(time.Second), len(took), failed, q(0.5), q(0.99), took[len(took)-1].Round(10*time.Microsecond), countOver(took, 100*time.Millisecond))
	}
	deadline := time.Now().Add(2 * time.Minute)
	phase("while the flood opens its connections", func() bool { return holding.Load() == 2 || time.Now().After(deadline) })
	heldUntil := time.Now().Add(15 * time.Second)
	phase("while the flood holds them idle", func() bool { return time.Now().After(heldUntil) })
	res, err := http.Get(s.admin + "/metrics")
	if err == nil {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "permitd_http_") {
				fmt.Println("  " + sc.Text())
			}
		}
		res.Body.Close()
	}
	return nil
}

func countOver(d []time.Duration, limit time.Duration) int {
	n := 0
	for _, v := range d {
		if v > limit {
			n++
		}
	}
	return n
}

// flood opens n connections from src, makes one request on each and
// holds them idle until SIGTERM.
func flood(addr, src string, n int) error {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	var opened, answered, failed atomic.Int64
	var mu sync.Mutex
	var held []net.Conn
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	var wg sync.WaitGroup
	start := time.Now()
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					failed.Add(1)
					continue
				}
				opened.Add(1)
				_, _ = io.WriteString(c, "GET /v1/health/live HTTP/1.1\r\nHost: flood\r\n\r\n")
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if res, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					answered.Add(1)
				}
				_ = c.SetReadDeadline(time.Time{})
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("flood from %s: %d connections opened, %d answered, %d dials failed, in %s; holding them idle\n",
		src, opened.Load(), answered.Load(), failed.Load(), time.Since(start).Round(time.Millisecond))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	for _, c := range held {
		c.Close()
	}
	return nil
}

// drain drives load until readiness turns 503 after a SIGTERM.
func drain(s *server) error {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := client.Get(s.base + "/v1/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return errors.New("never ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var stop atomic.Bool
	var sent, ok, failed atomic.Int64
	var firstFail atomic.Value
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				req, _ := http.NewRequest(http.MethodGet, s.base+"/v1/locations/resolve?query=Seattle", nil)
				req.Header.Set("X-API-Key", s.key)
				sent.Add(1)
				res, err := client.Do(req)
				if err != nil || res.StatusCode >= 500 {
					failed.Add(1)
					if err != nil {
						firstFail.CompareAndSwap(nil, err.Error())
					} else {
						firstFail.CompareAndSwap(nil, res.Status)
					}
				} else {
					ok.Add(1)
				}
				if res != nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		}()
	}
	// The balancer: readiness every 100ms.
	time.Sleep(3 * time.Second)
	term := time.Now()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var notReady time.Duration
	for {
		res, err := client.Get(s.base + "/v1/health/ready")
		if err != nil || res.StatusCode != http.StatusOK {
			notReady = time.Since(term)
			if res != nil {
				res.Body.Close()
			}
			break
		}
		res.Body.Close()
		time.Sleep(100 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	stopped := time.Since(term)
	err := <-s.exited
	exited := time.Since(term)
	s.exited <- err // for the deferred stop
	fmt.Printf("drain: %d requests sent, %d answered (<500), %d failed; readiness 503 seen %s after SIGTERM; client stopped at %s; process exited %s after SIGTERM (err %v)\n",
		sent.Load(), ok.Load(), failed.Load(), notReady.Round(time.Millisecond), stopped.Round(time.Millisecond), exited.Round(time.Millisecond), err)
	if f := firstFail.Load(); f != nil {
		fmt.Println("first failure:", f)
	}
	return nil
}
