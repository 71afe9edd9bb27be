package quota

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/permitd/permitd/api/apikey"
	"github.com/permitd/permitd/api/quota/redistest"
)

// benchSamples is the least number of checks timed, so that p99 means
// something even with -benchtime 1x (make bench).
const benchSamples = 20_000

// BenchmarkAllow is the latency the quota check adds to a request: one
// Allow call, on Redis over loopback (the standard plan: GCRA script plus
// the monthly INCR in one pipelined round trip; the development plan: GCRA
// only) and
// in process. Reports p50-us and p99-us; the target is p99 <= 200 µs on
// Redis.
func BenchmarkAllow(b *testing.B) {
	srv := redistest.Start(b)
	lim, err := NewRedis(RedisParams{Client: newTestClient(b, srv.Addr)})
	if err != nil {
		b.Fatal(err)
	}
	// Limits high enough that every check is admitted: the common path.
	standard := apikey.PlanStandard
	standard.RatePerSecond, standard.Burst, standard.MonthlyQuota = 1e6, 1e6, 1e9
	dev := apikey.DefaultDevPlan
	dev.RatePerSecond, dev.Burst = 1e6, 1e6
	for _, bc := range []struct {
		name string
		lim  Limiter
		plan apikey.Plan
	}{
		{"redis/rate+monthly", lim, standard},
		{"redis/rate", lim, dev},
		{"memory/rate+monthly", NewMemory(nil, nil), standard},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := principal("bench-"+bc.name, bc.plan)
			ctx := context.Background()
			for range 200 { // warm the pool and the script cache
				_, _ = bc.lim.Allow(ctx, p)
			}
			n := max(b.N, benchSamples)
			lat := make([]time.Duration, n)
			b.ResetTimer()
			for i := range n {
				start := time.Now()
				d, err := bc.lim.Allow(ctx, p)
				lat[i] = time.Since(start)
				if err != nil || !d.Allowed || d.Fallback {
					b.Fatalf("check %d: %+v %v", i, d, err)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			var sum time.Duration
			for _, l := range lat {
				sum += l
			}
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			b.ReportMetric(float64(sum)/float64(n), "ns/op")
			b.ReportMetric(us(lat[n/2]), "p50-us")
			b.ReportMetric(us(lat[n*99/100]), "p99-us")
		})
	}
}
