// Command handlecount counts the work of the indexer's replay of the real
// mix: the instructions it executes and the cache misses it takes, under
// valgrind's cachegrind, per event. It compares two builds of itself, so
// that a change of a few percent in the indexer's or the store's work
// shows, where on the 2-core development machine the speed moves by a
// third within an hour and timed runs need tens of pairs to show it
// (docs/kafka-history.md, "Ninety-third session").
//
//	go run ./test/handlecount -A /tmp/a.handlecount -B /tmp/b.handlecount [-pairs 2] [-permits 100000]
//
// The binaries are this command built at the two revisions (go build
// -pgo=cmd/permitd/default.pgo -o /tmp/a.handlecount ./test/handlecount
// in each tree; `make count` builds HEAD and the work tree). Each run
// replays the mix as BenchmarkHandleMix does (the consumer's batches of
// 2,000 messages of one topic, the locations first, then the other topics
// taking turns, into an empty memory store in replay mode) to ready:
// until EndReplay has returned and the place index it starts beside the
// readers is built (a place search waits for it). The second side's
// build after ready is not started (-settled counts it too, about as
// much work again). A count that stopped when EndReplay returned would
// hold whatever part of the background work the scheduler had run (with
// the collector off, two runs of one binary counted 15.92 and 16.18
// billion instructions that way). The mix is written to a file once
// (-file) and read by every run; a run that only reads it, of each
// binary, is the baseline taken off. Runs have GOMAXPROCS=1, since
// valgrind runs one thread at a time and a second P would add the
// scheduler's spinning to the count, and GOGC=off: with the collector
// on, how long its write barriers stay on depends on the scheduling too
// (34.8 against 37.4 billion instructions, two runs of one binary until
// settled). With both, two runs of one binary until settled counted
// 25,965 and 25,955 million instructions (0.04% apart).
//
// What it does not measure: time. Memory latency is counted only as
// simulated misses (valgrind's model of this machine's caches), the two
// cores' overlap not at all, and the collector's work not at all (its
// allocations' cost is). Valgrind hides some of the machine's
// instructions from the program (SHA-NI: SHA-256 runs the AVX2 code,
// about 1,500 instructions a block), so those paths count more than
// they cost. A change that executes fewer
// instructions and takes no more misses does less work; whether that
// moves the ingest's rate is for BenchmarkIngestMix to show.
//
// The other modes are what the comparison runs:
//
//	handlecount -write FILE [-permits N]   build the mix and write it
//	handlecount -read FILE [-handle=false] [-settled]
//	                                       replay it (or only read it)
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/internal/memstore"
	"github.com/permitd/permitd/pipeline/mix"
	"github.com/permitd/permitd/readmodel"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "handlecount:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("handlecount", flag.ContinueOnError)
	write := fs.String("write", "", "build the mix and write it to this file")
	read := fs.String("read", "", "replay the mix in this file")
	handle := fs.Bool("handle", true, "with -read: replay the mix (false: only read it, the baseline)")
	settled := fs.Bool("settled", false, "count the second side's build after ready too (the store settled)")
	a := fs.String("A", "", "build A of this command (the base)")
	b := fs.String("B", "", "build B of this command")
	file := fs.String("file", "", "the mix's file for -A and -B (default: in the temporary directory, named by -permits; written when missing: remove it after a change to the mix's producers)")
	permits := fs.Int("permits", 100_000, "the mix's generated permits (as BenchmarkHandleMix's PERMITD_BENCH_MIX_PERMITS)")
	pairs := fs.Int("pairs", 2, "runs of each build, alternated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *write != "":
		return writeMix(*write, *permits)
	case *read != "":
		n, err := replay(*read, *handle, *settled)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "events %d\n", n)
		return nil
	case *a != "" && *b != "":
		if *pairs < 1 {
			return errors.New("-pairs must be at least 1")
		}
		if *file == "" {
			*file = filepath.Join(os.TempDir(), fmt.Sprintf("permitd-mix-%d.bin", *permits))
		}
		return compare(out, [2]string{*a, *b}, *file, *permits, *pairs, *settled)
	}
	return errors.New("say -write FILE, -read FILE, or -A BIN -B BIN")
}

// The mix's file: mixMagic, then per record the topic, the key and the
// value, each a uvarint length and its bytes.
const mixMagic = "permitd-mix 1\n"

type record struct{ topic, key, value []byte }

var mixAsOf = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // BenchmarkIngestMix's

func writeMix(path string, permits int) error {
	var buf bytes.Buffer
	buf.WriteString(mixMagic)
	put := func(b []byte) {
		buf.Write(binary.AppendUvarint(nil, uint64(len(b))))
		buf.Write(b)
	}
	err := mix.Events(context.Background(), mix.Params{Permits: permits, Seed: 1, AsOf: mixAsOf}, indexer.Envelopes(func(topic string, key, value []byte) error {
		put([]byte(topic))
		put(key)
		put(value)
		return nil
	}))
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readMix returns the records of the file at path; they alias one buffer.
func readMix(path string) ([]record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte(mixMagic)) {
		return nil, fmt.Errorf("%s: not a mix file of this version", path)
	}
	b = b[len(mixMagic):]
	take := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("%s: truncated", path)
		}
		v := b[k : k+int(n) : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	var recs []record
	for len(b) > 0 {
		var r record
		var err error
		for _, f := range []*[]byte{&r.topic, &r.key, &r.value} {
			if *f, err = take(); err != nil {
				return nil, err
			}
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// replay reads the mix and, with handle, replays it as BenchmarkHandleMix
// does, returning once EndReplay has and the place index is built (with
// settled, once the second side is in place too); it returns the events
// read.
func replay(path string, handle, settled bool) (int, error) {
	recs, err := readMix(path)
	if err != nil {
		return 0, err
	}
	msgs := make([]indexer.Message, len(recs))
	for i, r := range recs {
		msgs[i] = indexer.Message{Topic: string(r.topic), Offset: int64(i), Key: r.key, Value: r.value}
	}
	first, rest := mix.HandleOrder(msgs, func(m indexer.Message) string { return m.Topic }, 2000)
	if !handle {
		return len(msgs), nil
	}
	ctx := context.Background()
	store := memstore.New()
	if !store.BeginReplay() {
		return 0, errors.New("the store would not begin a replay")
	}
	var dead atomic.Int64
	ix, err := indexer.New(indexer.Params{Writer: store, Logger: slog.New(slog.DiscardHandler),
		DeadLetter: func(context.Context, indexer.Message, error) error { dead.Add(1); return nil }})
	if err != nil {
		return 0, err
	}
	for _, m := range first {
		if err := ix.HandleBatch(ctx, m); err != nil {
			return 0, err
		}
	}
	if err := ix.Settle(ctx); err != nil {
		return 0, err
	}
	for _, m := range rest {
		if err := ix.HandleBatch(ctx, m); err != nil {
			return 0, err
		}
	}
	if !settled {
		store.StopBuilding() // no second side: EndReplay starts none
	}
	store.EndReplay()
	// What EndReplay starts beside the readers runs in the background; a
	// count that stopped at ready would take the part of it the scheduler
	// had run. The place index's build is counted whole (a place search
	// waits for it), and with settled the second side's too.
	if _, err := store.ResolveCandidates(ctx, readmodel.ResolveQuery{Text: "seattle", Limit: 1}); err != nil {
		return 0, err
	}
	if settled {
		store.Settle()
	}
	if n := dead.Load(); n > 0 {
		return 0, fmt.Errorf("%d dead letters in the mix", n)
	}
	return len(msgs), nil
}

// counts is what cachegrind printed for a run.
type counts struct {
	events          int
	ir, dr, d1, lld float64 // instructions, data references, D1 and last-level data misses
}

var cgLine = regexp.MustCompile(`(?m)^==\d+== (I|D|D1|LLd)\s+(refs|misses):\s+([\d,]+)`)

// once runs bin under cachegrind on the mix and returns its counts.
func once(bin, file string, handle, settled bool) (counts, error) {
	cmd := exec.Command("valgrind", "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null",
		bin, "-read", file, "-handle="+strconv.FormatBool(handle), "-settled="+strconv.FormatBool(settled))
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GOGC=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return counts{}, fmt.Errorf("%s: %v: %s%s", bin, err, stdout.String(), tail(stderr.String()))
	}
	c, err := parseCounts(stderr.String())
	if err != nil {
		return counts{}, fmt.Errorf("%s: %w", bin, err)
	}
	if _, err := fmt.Sscanf(stdout.String(), "events %d", &c.events); err != nil {
		return counts{}, fmt.Errorf("%s printed %q", bin, stdout.String())
	}
	return c, nil
}

// parseCounts reads cachegrind's summary (its lines on standard error).
func parseCounts(stderr string) (counts, error) {
	var c counts
	into := map[string]*float64{"I refs": &c.ir, "D refs": &c.dr, "D1 misses": &c.d1, "LLd misses": &c.lld}
	for _, m := range cgLine.FindAllStringSubmatch(stderr, -1) {
		v, err := strconv.ParseFloat(strings.ReplaceAll(m[3], ",", ""), 64)
		if err != nil {
			return counts{}, err
		}
		if p := into[m[1]+" "+m[2]]; p != nil { // nil for a pair cachegrind does not print
			*p = v
		}
	}
	if c.ir == 0 {
		return counts{}, fmt.Errorf("no cachegrind summary: %s", tail(stderr))
	}
	return c, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// less is c's counts with the baseline's taken off.
func (c counts) less(base counts) counts {
	return counts{events: c.events, ir: c.ir - base.ir, dr: c.dr - base.dr, d1: c.d1 - base.d1, lld: c.lld - base.lld}
}

// perEvent formats c per event.
func (c counts) perEvent() string {
	n := float64(c.events)
	return fmt.Sprintf("%.0f instructions, %.0f data refs, %.2f D1 misses, %.3f LL data misses an event",
		c.ir/n, c.dr/n, c.d1/n, c.lld/n)
}

func compare(out io.Writer, bins [2]string, file string, permits, pairs int, settled bool) error {
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(out, "writing the mix (%d generated permits) to %s\n", permits, file)
		if err := writeMix(file, permits); err != nil {
			return err
		}
	}
	var base [2]counts
	for i, bin := range bins {
		c, err := once(bin, file, false, false)
		if err != nil {
			return err
		}
		base[i] = c
		fmt.Fprintf(out, "%c baseline (the mix read, %d events): %.0f instructions\n", 'A'+i, c.events, c.ir)
	}
	var runs [2][]counts
	for p := range pairs {
		order := []int{0, 1}
		if p%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			c, err := once(bins[i], file, true, settled)
			if err != nil {
				return err
			}
			c = c.less(base[i])
			runs[i] = append(runs[i], c)
			fmt.Fprintf(out, "%s run %d %c: %s\n", time.Now().UTC().Format("15:04:05"), p+1, 'A'+i, c.perEvent())
		}
	}
	fmt.Fprint(out, summary(runs))
	return nil
}

// summary prints each build's mean counts and B/A, with the runs'
// spread within a build (valgrind counts the same run the same, up to
// the runtime's scheduling and collections).
func summary(runs [2][]counts) string {
	var mean [2]counts
	var spread [2]float64
	for i, rs := range runs {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range rs {
			mean[i].events = c.events
			mean[i].ir += c.ir / float64(len(rs))
			mean[i].dr += c.dr / float64(len(rs))
			mean[i].d1 += c.d1 / float64(len(rs))
			mean[i].lld += c.lld / float64(len(rs))
			lo, hi = min(lo, c.ir), max(hi, c.ir)
		}
		spread[i] = (hi - lo) / mean[i].ir
	}
	var s strings.Builder
	for i := range mean {
		fmt.Fprintf(&s, "%c mean: %s (instructions within %.2f%% across runs)\n", 'A'+i, mean[i].perEvent(), 100*spread[i])
	}
	ratio := func(b, a float64) string {
		if a == 0 {
			return "-"
		}
		return strconv.FormatFloat(b/a, 'f', 4, 64)
	}
	fmt.Fprintf(&s, "B/A: instructions %s, data refs %s, D1 misses %s, LL data misses %s\n",
		ratio(mean[1].ir, mean[0].ir), ratio(mean[1].dr, mean[0].dr), ratio(mean[1].d1, mean[0].d1), ratio(mean[1].lld, mean[0].lld))
	return s.String()
}
