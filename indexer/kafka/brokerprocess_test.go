package kafka_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/permitd/permitd/indexer/kafka"
)

// brokerProcessEnv, set to 1 in this test binary's environment, makes it
// a Kafka-protocol broker instead of a test run (TestMain): a separate
// process with its own heap and collector, as a real broker is.
const brokerProcessEnv = "PERMITD_TEST_BROKER_PROCESS"

// serveBrokerProcess runs kfake as a single broker on a loopback port
// with its default limits (and a CPU profile of its whole life into the
// file PERMITD_BENCH_BROKER_CPUPROFILE names), prints the broker's
// address on stdout, and
// returns (the process exits) once stdin is closed: by
// startBrokerProcess's cleanup, or by the end of its parent, however it
// ends (kill -9 included), so no broker outlives its benchmark.
func serveBrokerProcess() int {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker process:", err)
		return 1
	}
	defer c.Close()
	if path := os.Getenv("PERMITD_BENCH_BROKER_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	fmt.Println(c.ListenAddrs()[0])
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startBrokerProcess starts this test binary as a broker process
// (serveBrokerProcess) and returns its address, and a channel closed once
// the process has exited. It holds no topics: the caller creates them.
// The process is stopped when tb ends.
func startBrokerProcess(tb testing.TB) (addr string, exited <-chan struct{}) {
	tb.Helper()
	exe, err := os.Executable()
	require.NoError(tb, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), brokerProcessEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(tb, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	stopped := make(chan struct{})
	tb.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-stopped
			tb.Errorf("the broker process did not end when its stdin closed: killed")
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(stopped)
	}()
	require.NoError(tb, err, "the broker process printed no address")
	addr = strings.TrimSpace(line)
	tb.Logf("broker process %d on %s", cmd.Process.Pid, addr)
	brokerPIDs.Store(addr, cmd.Process.Pid)
	tb.Cleanup(func() { brokerPIDs.Delete(addr) })
	return addr, stopped
}

// brokerPIDs maps the address of each running broker process
// (startBrokerProcess) to its process id.
var brokerPIDs sync.Map

// brokerCPU is the CPU time the broker process at addrs[0] used so far;
// false when the broker is not a process this binary started (in process,
// or a caller's) or its time cannot be read (processCPU: Linux only).
func brokerCPU(addrs []string) (time.Duration, bool) {
	pid, ok := brokerPIDs.Load(addrs[0])
	if !ok {
		return 0, false
	}
	return processCPU(pid.(int))
}

// TestBrokerProcess starts a broker process, publishes to it and reads
// the messages back, and checks that the process ends with its test,
// once its stdin closes (as when its parent ends, however it ends).
func TestBrokerProcess(t *testing.T) {
	var exited <-chan struct{}
	t.Run("serves", func(t *testing.T) {
		var addr string
		addr, exited = startBrokerProcess(t)
		var d mixData
		for i := range 50 {
			d.recs = append(d.recs, kafka.Record{Topic: locTopic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"n":%d}`, i)})
		}
		addrs := brokerWithMix(t, addr, d)
		total := int64(0)
		for _, end := range watermarks(t, addrs) {
			total += end
		}
		require.Equal(t, int64(50), total)
		require.Positive(t, rawConsumeAll(t, addrs, watermarks(t, addrs)))
		select {
		case <-exited:
			t.Fatal("the broker process ended while its test ran")
		default:
		}
	})
	// The subtest's cleanup stopped the process and waited for it.
	select {
	case <-exited:
	default:
		t.Fatal("the broker process outlived its test")
	}
}
