// Command benchab compares one benchmark metric between two revisions of
// the tree, run by run: it builds each revision's test binary for a
// package (as `make bench` builds it, with the binary's PGO profile),
// runs the two in turn in new processes, pair after pair, and prints each
// run's figure as the benchmark printed it, then the medians, the mean of
// the pairs' ratios (B/A, geometric) with a 95% interval, and how many
// pairs B won.
//
//	go run ./test/benchab [-a HEAD~1] [-b .] [-pkg ./indexer/kafka/] [-bench 'HandleMix$'] [-metric cpu-ns/event] [-pairs 10]
//
// Why: on the 2-core development machine the speed moves by a third
// within an hour (docs/kafka-history.md, "Sixty-first session"), so single runs
// of two builds tell nothing about a change of a few percent. Pairs run
// back to back see the same machine; their ratio keeps what the change
// did. The order within a pair alternates (AB, BA, AB, ...), so that a
// drift or the second run's warmer caches fall on both builds alike.
//
// A revision is anything `git worktree add` takes (a commit, a branch,
// HEAD~2); "." is the work tree as it is, uncommitted changes included.
// The binaries run in their package's directory of their own tree.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchab:", err)
		os.Exit(1)
	}
}

type config struct {
	a, b      string
	pkg       string
	bench     string
	benchtime string
	metric    string
	higher    bool
	pairs     int
	pgo       string
}

func run(args []string, out io.Writer) error {
	var c config
	fs := flag.NewFlagSet("benchab", flag.ContinueOnError)
	fs.StringVar(&c.a, "a", "HEAD", "revision A (the base)")
	fs.StringVar(&c.b, "b", ".", `revision B ("." is the work tree, uncommitted changes included)`)
	fs.StringVar(&c.pkg, "pkg", "./indexer/kafka/", "the benchmark's package")
	fs.StringVar(&c.bench, "bench", "HandleMix$", "the -test.bench pattern: it must match one benchmark")
	fs.StringVar(&c.benchtime, "benchtime", "1x", "-test.benchtime")
	fs.StringVar(&c.metric, "metric", "cpu-ns/event", "the metric compared, as the benchmark prints its unit")
	fs.BoolVar(&c.higher, "higher", false, "a higher figure is better (events/s); default: lower is")
	fs.IntVar(&c.pairs, "pairs", 10, "pairs of runs")
	fs.StringVar(&c.pgo, "pgo", "cmd/permitd/default.pgo", `the PGO profile: relative to each tree (an absolute path inside this one is made so), an absolute path elsewhere, or "off"`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.pairs < 2 {
		return errors.New("-pairs must be at least 2")
	}
	top, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(top, c.pgo); filepath.IsAbs(c.pgo) && err == nil && !strings.HasPrefix(rel, "..") {
		c.pgo = rel // each tree's own profile (make passes the work tree's path)
	}
	tmp, err := os.MkdirTemp("", "benchab-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var bins [2]string
	var dirs [2]string
	for i, rev := range []string{c.a, c.b} {
		tree := top
		if rev != "." {
			tree = filepath.Join(tmp, fmt.Sprintf("tree%d", i))
			if _, err := git(top, "worktree", "add", "--detach", tree, rev); err != nil {
				return err
			}
			defer git(top, "worktree", "remove", "--force", tree) //nolint:errcheck // best effort
		}
		bins[i] = filepath.Join(tmp, fmt.Sprintf("%c.test", 'a'+i))
		if err := build(tree, c.pkg, c.pgo, bins[i]); err != nil {
			return fmt.Errorf("build %s: %w", rev, err)
		}
		dirs[i] = filepath.Join(tree, c.pkg)
	}
	fmt.Fprintf(out, "A %s, B %s: %s -bench %q -benchtime %s, %s (%s), %d pairs\n",
		c.a, c.b, c.pkg, c.bench, c.benchtime, c.metric, better(c.higher), c.pairs)
	var a, b []float64
	for p := range c.pairs {
		order := []int{0, 1}
		if p%2 == 1 {
			order = []int{1, 0}
		}
		var got [2]float64
		for _, i := range order {
			v, err := once(bins[i], dirs[i], c)
			if err != nil {
				return fmt.Errorf("pair %d, %c: %w", p+1, 'A'+i, err)
			}
			got[i] = v
			fmt.Fprintf(out, "%s pair %d %c %s %s\n", time.Now().UTC().Format("15:04:05"), p+1, 'A'+i, strconv.FormatFloat(v, 'f', -1, 64), c.metric)
		}
		a, b = append(a, got[0]), append(b, got[1])
	}
	fmt.Fprint(out, summarize(a, b, c.higher))
	return nil
}

func better(higher bool) string {
	if higher {
		return "higher is better"
	}
	return "lower is better"
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(outb)), nil
}

func build(tree, pkg, pgo, bin string) error {
	args := []string{"test", "-c", "-o", bin}
	switch {
	case pgo == "off":
	case filepath.IsAbs(pgo):
		args = append(args, "-pgo="+pgo)
	default:
		args = append(args, "-pgo="+filepath.Join(tree, pgo))
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = tree
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// once runs the benchmark once and returns its figure for the metric.
func once(bin, dir string, c config) (float64, error) {
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", c.bench, "-test.benchtime", c.benchtime)
	cmd.Dir = dir
	var outb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &outb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %s", err, tail(outb.String()))
	}
	v, err := metricOf(outb.String(), c.metric)
	if err != nil {
		return 0, fmt.Errorf("-bench %q: %w", c.bench, err)
	}
	return v, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// metricOf finds the figure printed for metric in a benchmark's output:
// on its one result line ("BenchmarkX-2  1  123 unit  456 metric ...").
// More than one result line is an error: the pattern matched several
// benchmarks, and which to compare would be a guess.
func metricOf(output, metric string) (float64, error) {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 2 && strings.HasPrefix(f[0], "Benchmark") {
			if _, err := strconv.Atoi(f[1]); err == nil {
				lines = append(lines, sc.Text())
			}
		}
	}
	switch len(lines) {
	case 0:
		return 0, errors.New("no benchmark result in the output")
	case 1:
	default:
		return 0, fmt.Errorf("%d benchmarks matched; narrow -bench", len(lines))
	}
	f := strings.Fields(lines[0])
	for i := 3; i < len(f); i += 2 {
		if f[i] == metric {
			return strconv.ParseFloat(f[i-1], 64)
		}
	}
	return 0, fmt.Errorf("no %q in %s", metric, lines[0])
}

// summarize compares a and b, pair by pair (a[i] and b[i] ran back to
// back): the medians, the geometric mean of b[i]/a[i] with a 95%
// interval (Student's t over the pairs' log ratios), and the pairs B won.
func summarize(a, b []float64, higher bool) string {
	n := len(a)
	logs := make([]float64, n)
	wins := 0
	for i := range n {
		logs[i] = math.Log(b[i] / a[i])
		if (higher && b[i] > a[i]) || (!higher && b[i] < a[i]) {
			wins++
		}
	}
	mean, sd := meanSD(logs)
	half := tQuantile975(n-1) * sd / math.Sqrt(float64(n))
	var s strings.Builder
	fmt.Fprintf(&s, "median A %s, B %s\n", fmtFig(median(a)), fmtFig(median(b)))
	fmt.Fprintf(&s, "B/A %.4f, 95%% interval %.4f to %.4f, over %d pairs; B better in %d of %d\n",
		math.Exp(mean), math.Exp(mean-half), math.Exp(mean+half), n, wins, n)
	lo, hi := math.Exp(mean-half), math.Exp(mean+half)
	switch {
	case lo <= 1 && hi >= 1:
		s.WriteString("no difference shown: the interval holds 1\n")
	case (hi < 1) != higher:
		s.WriteString("B is better\n")
	default:
		s.WriteString("B is worse\n")
	}
	return s.String()
}

// fmtFig prints a figure to six significant digits (a median of two
// runs is their mean, which binary floating point rarely prints short),
// without an exponent below 10^9.
func fmtFig(v float64) string {
	if math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// tQuantile975 is Student's t distribution's 97.5th percentile for df
// degrees of freedom (a two-sided 95% interval).
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.Inf(1)
	case df < len(table):
		return table[df]
	case df < 60:
		return 2.021 // df 40: a little wide for 31 to 59
	case df < 120:
		return 2.000
	}
	return 1.960
}
