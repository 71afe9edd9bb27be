package memory_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/pipeline/data"
	"github.com/permitd/permitd/pipeline/gazetteer"
	"github.com/permitd/permitd/pipeline/gen"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// The permit benchmarks run on 1M generated permits (pipeline/gen over the
// real gazetteer) that enter the store only through indexer.Project, as in
// production. PERMITD_BENCH_PERMITS overrides the size. The corpus is
// built once per process, so run them together:
//
//	go test ./readmodel/memory -run '^$' -bench 'Permits|Property' -benchtime 20000x

var bench struct {
	once      sync.Once
	err       error
	store     *memory.Store
	permits   int
	build     time.Duration // wall clock
	buildCPU  time.Duration // user+system CPU of the process during the build
	bytesPer  float64
	cityID    string
	addresses []string // canonical addresses of sampled properties
}

func benchSize() int {
	if n, err := strconv.Atoi(os.Getenv("PERMITD_BENCH_PERMITS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func buildCorpus(b *testing.B) {
	bench.once.Do(func() {
		ctx := context.Background()
		s := memory.New(memory.Params{})
		var batch readmodel.Batch
		flush := func() error {
			if batch.Len() == 0 {
				return nil
			}
			_, err := s.Apply(ctx, batch)
			batch = readmodel.Batch{}
			return err
		}
		project := func(env events.Envelope) error {
			out, err := indexer.Project(ctx, env, s)
			if err != nil {
				return err
			}
			batch.Append(out)
			if batch.Len() >= 4096 {
				return flush()
			}
			return nil
		}
		if _, err := gazetteer.Import(ctx, data.Open, project); err != nil {
			bench.err = err
			return
		}
		if bench.err = flush(); bench.err != nil {
			return
		}
		base := heapInUse()
		// A bulk load: the heap only grows, so collect only when it nears
		// a bound instead of every time it doubles from a small start.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(6 << 30))
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		start, cpu0 := time.Now(), cpuTime()
		n := benchSize()
		if err := loadGenerated(ctx, s, n); err != nil {
			bench.err = err
			return
		}
		bench.build, bench.buildCPU = time.Since(start), cpuTime()-cpu0
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		bench.addresses = slices.Clip(bench.addresses)
		bench.bytesPer = float64(heapInUse()-base) / float64(n)
		bench.store, bench.permits = s, n
		bench.cityID = events.GeoID("city", "1840021117") // Seattle
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
}

// loadGenerated projects n generated permits (and their properties) into
// s. Projection is pure, so two workers decode and project chunks while
// the caller applies them in generation order, as one indexer per
// partition would.
func loadGenerated(ctx context.Context, s *memory.Store, n int) error {
	type chunk struct {
		envs []events.Envelope
		out  readmodel.Batch
		err  error
		done chan struct{}
	}
	work := make(chan *chunk, 8)
	order := make(chan *chunk, 8)
	var genErr error
	go func() {
		defer close(work)
		defer close(order)
		r := rand.New(rand.NewPCG(9, 9))
		c := &chunk{done: make(chan struct{})}
		send := func() {
			work <- c
			order <- c
			c = &chunk{done: make(chan struct{})}
		}
		_, genErr = gen.Generate(ctx, gen.Params{Permits: n, Seed: 1, Now: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)}, func(env events.Envelope) error {
			if env.Type == events.PropertyUpserted && r.IntN(200) == 0 {
				var p events.Property
				if err := json.Unmarshal(env.Data, &p); err != nil {
					return err
				}
				bench.addresses = append(bench.addresses, p.CanonicalAddress)
			}
			c.envs = append(c.envs, env)
			if len(c.envs) == 2048 {
				send()
			}
			return nil
		})
		if len(c.envs) > 0 {
			send()
		}
	}()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				for _, env := range c.envs {
					b, err := indexer.Project(ctx, env, s)
					if err != nil {
						c.err = err
						break
					}
					c.out.Append(b)
				}
				close(c.done)
			}
		}()
	}
	var err error
	for c := range order {
		<-c.done
		if err == nil {
			err = c.err
		}
		if err == nil {
			_, err = s.Apply(ctx, c.out)
		}
	}
	wg.Wait()
	if genErr != nil {
		return genErr
	}
	return err
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// latencies records one duration per op and reports p50/p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	slices.Sort(l)
	if len(l) == 0 {
		return
	}
	pct := func(p float64) float64 { return float64(l[int(p*float64(len(l)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
	b.ReportMetric(bench.bytesPer, "bytes/permit")
	b.ReportMetric(bench.build.Seconds(), "build-s")
	b.ReportMetric(bench.buildCPU.Seconds(), "build-cpu-s")
}

// benchPages reads 25-permit pages of geoID: first pages and pages after
// a random permit of the geo, in both orders.
func benchPages(b *testing.B, geoID string) {
	buildCorpus(b)
	ctx := context.Background()
	s := bench.store
	// cursors: positions spread over the whole walk
	var keys []readmodel.PermitKey
	q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geoID), Desc: true, Limit: 100}
	for {
		p, err := s.SearchPermits(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Permits) > 0 {
			last := p.Permits[len(p.Permits)-1].Permit
			keys = append(keys, readmodel.PermitKey{IssueDate: last.IssueDate, PermitID: last.PermitID})
		}
		if p.Next == nil {
			break
		}
		q.After = p.Next
	}
	loc, err := s.Location(ctx, readmodel.ParseGeoRef(geoID))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(loc.PermitCount), "geo-permits")
	r := rand.New(rand.NewPCG(1, 1))
	n := samples(b)
	lat := make(latencies, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		q := readmodel.PermitQuery{Geo: readmodel.ParseGeoRef(geoID), Desc: i%2 == 0, Limit: 25}
		if i%4 >= 2 && len(keys) > 0 {
			k := keys[r.IntN(len(keys))]
			q.After = &k
		}
		t0 := time.Now()
		p, err := s.SearchPermits(ctx, q)
		lat = append(lat, time.Since(t0))
		if err != nil || len(p.Permits) == 0 && q.After == nil {
			b.Fatalf("page: %v %d", err, len(p.Permits))
		}
	}
	b.StopTimer()
	lat.report(b)
}

// samples is how many timed reads a latency benchmark takes: at least
// 20,000 so p99 means something even at -benchtime 1x (make bench).
func samples(b *testing.B) int { return max(b.N, 20000) }

func BenchmarkPermitsPageState(b *testing.B) { benchPages(b, events.GeoID("state", "WA")) }

func BenchmarkPermitsPageCity(b *testing.B) {
	buildCorpus(b)
	benchPages(b, bench.cityID)
}

func BenchmarkPropertySearch(b *testing.B) {
	buildCorpus(b)
	ctx := context.Background()
	if len(bench.addresses) == 0 {
		b.Fatal("no sampled addresses")
	}
	n := samples(b)
	lat := make(latencies, 0, n)
	found := 0
	b.ResetTimer()
	for i := 0; i < n; i++ {
		a := bench.addresses[i%len(bench.addresses)]
		t0 := time.Now()
		m, err := bench.store.SearchProperties(ctx, readmodel.PropertyQuery{Address: a, Limit: 1})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if len(m) == 1 {
			found++
		}
	}
	b.StopTimer()
	if found != n {
		b.Fatalf("found %d of %d sampled addresses", found, n)
	}
	lat.report(b)
}
