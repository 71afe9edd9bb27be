// The servers under load: starting and stopping permitd and the floor, their environment, and waiting until they are ready and settled.

package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/permitd/permitd/internal/child"
	"github.com/permitd/permitd/internal/servelines"
)

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
	lines := servelines.Read(out, func(l servelines.Lines) bool { return l.Base != "" && (!wantAdmin || l.Admin != "") })
	p := &proc{cmd: cmd, base: lines.Base, admin: lines.Admin}
	if p.base == "" || wantAdmin && p.admin == "" {
		p.stop()
		return nil, fmt.Errorf("%s printed no address (see %s)", bin, errFile)
	}
	return p, nil
}

func (p *proc) stop() {
	_, _ = child.Stop(p.cmd, 20*time.Second)
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
// measured first, read from 0.36 to 0.81 between runs). Since the
// eighty-sixth session serve collects the load's garbage itself before it
// reports ready (cmd/permitd/embedded.go); this collection stays, for
// what the driver's own first requests left.
func settle(p *proc) error {
	res, err := http.Get(p.admin + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return err
}

// waitReady polls readiness every 20 ms, so that what the driver asks
// first (the cold stats requests) comes right after ready, as a load
// balancer's first requests would: polled every 250 ms, those requests
// met the work serve did just after ready in some runs and not in others.
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
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("permitd not ready within " + within.String())
}
