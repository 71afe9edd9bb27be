package main

import (
	"math"
	"strings"
	"testing"
)

const handleMixOutput = `goos: linux
goarch: amd64
pkg: github.com/permitd/permitd/indexer/kafka
cpu: AMD EPYC
BenchmarkHandleMix-2   	       1	      1833 B/event	         9.509 allocs/event	      9608 cpu-ns/event	      6826 ns/event	901173720 B/op	 4673546 allocs/op
--- BENCH: BenchmarkHandleMix-2
    mix_bench_test.go:386: mix of 491489 events
PASS
`

func TestMetricOf(t *testing.T) {
	for metric, want := range map[string]float64{"cpu-ns/event": 9608, "allocs/event": 9.509, "B/op": 901173720} {
		got, err := metricOf(handleMixOutput, metric)
		if err != nil || got != want {
			t.Errorf("metricOf(%q) = %v, %v; want %v", metric, got, err, want)
		}
	}
	if _, err := metricOf(handleMixOutput, "events/s"); err == nil {
		t.Error("a metric the line does not print: no error")
	}
	two := handleMixOutput + "BenchmarkHandleMixLive-2 \t 1\t 23909 cpu-ns/event\n"
	if _, err := metricOf(two, "cpu-ns/event"); err == nil || !strings.Contains(err.Error(), "2 benchmarks") {
		t.Errorf("two result lines: err %v, want one naming them", err)
	}
	if _, err := metricOf("PASS\n", "cpu-ns/event"); err == nil {
		t.Error("no result line: no error")
	}
	// A log line that starts like a result is not one.
	if got, err := metricOf("BenchmarkX-2 starts\n"+handleMixOutput, "cpu-ns/event"); err != nil || got != 9608 {
		t.Errorf("with a log line first: %v, %v", got, err)
	}
}

func TestSummarize(t *testing.T) {
	a := []float64{100, 130, 90, 120, 110, 95, 140, 105}
	faster := make([]float64, len(a))
	same := make([]float64, len(a))
	for i, v := range a {
		faster[i] = v * 0.9 * (1 + 0.01*float64(i%3-1)) // 10% lower, a little noise
		same[i] = v * (1 + 0.05*float64(2*(i%2)-1))     // +5%, -5%, ...
	}
	s := summarize(a, faster, false)
	if !strings.Contains(s, "B is better") || !strings.Contains(s, "B better in 8 of 8") {
		t.Errorf("B 10%% lower, lower better:\n%s", s)
	}
	if s := summarize(a, faster, true); !strings.Contains(s, "B is worse") {
		t.Errorf("B 10%% lower, higher better:\n%s", s)
	}
	if s := summarize(a, same, false); !strings.Contains(s, "no difference shown") {
		t.Errorf("B within 5%% both ways:\n%s", s)
	}
	if !strings.Contains(s, "median A 107.5") {
		t.Errorf("median of A:\n%s", s)
	}
}

func TestFmtFig(t *testing.T) {
	for v, want := range map[float64]string{(0.4599 + 0.46) / 2: "0.45995", 9355.5: "9355.5", 901173720: "901173720", 7.25e-5: "7.25e-05"} {
		if got := fmtFig(v); got != want {
			t.Errorf("fmtFig(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestTQuantile(t *testing.T) {
	for df, want := range map[int]float64{1: 12.706, 9: 2.262, 30: 2.042, 45: 2.021, 1000: 1.960} {
		if got := tQuantile975(df); math.Abs(got-want) > 1e-9 {
			t.Errorf("df %d: %v, want %v", df, got, want)
		}
	}
	if !math.IsInf(tQuantile975(0), 1) {
		t.Error("df 0: want +Inf")
	}
}
