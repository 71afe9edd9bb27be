package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/indexer"
	"github.com/permitd/permitd/pipeline/signals"
	"github.com/permitd/permitd/readmodel"
	"github.com/permitd/permitd/readmodel/memory"
)

// The signal benchmarks load one store with a synthetic Washington (39
// counties, 300 cities with their jurisdictions, 900 ZIPs) and the leads
// and geo signals the reference pipeline derives from 1M generated
// permits issued over 15 years, all entering through indexer.Project.
// Cities are weighted 1/rank, so city 0 is a Seattle-sized anchor. Each
// benchmark times single reads and reports p50 and p99 in microseconds.
// The store's stats cache is off: stats are timed uncached.
// PERMITD_BENCH_PERMITS sets a smaller (or larger) load while iterating.

const defaultBenchPermits = 1_000_000

func benchPermits(b *testing.B) int {
	s := os.Getenv("PERMITD_BENCH_PERMITS")
	if s == "" {
		return defaultBenchPermits
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("PERMITD_BENCH_PERMITS=%q: want a positive integer", s)
	}
	return n
}

var benchNow = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)

type signalBench struct {
	store       *memory.Store
	state, city string
	leads       int
	// writes are batches of the real mix (permits, leads, geo signals) a
	// concurrent writer applies again and again at rising versions.
	writes []readmodel.Batch
}

var (
	benchOnce sync.Once
	benchData signalBench
)

func loadSignalBench(b *testing.B) signalBench {
	benchOnce.Do(func() { benchData = buildSignalBench(b) })
	if benchData.store == nil {
		b.Fatal("bench data failed to load")
	}
	return benchData
}

func buildSignalBench(b *testing.B) signalBench {
	ctx := context.Background()
	start := time.Now()
	store := memory.New(memory.Params{StatsCacheSize: -1})
	var batch []events.Envelope
	var writes []readmodel.Batch
	var permitDocs readmodel.Batch
	leadBatches := 0
	flush := func() {
		var rb readmodel.Batch
		for _, env := range batch {
			out, err := indexer.Project(ctx, env, store)
			if err != nil {
				b.Fatalf("project %s %s: %v", env.Type, env.EntityID, err)
			}
			rb.Append(out)
		}
		if _, err := store.Apply(ctx, rb); err != nil {
			b.Fatal(err)
		}
		if len(rb.Leads) > 0 {
			leadBatches++
		}
		if len(rb.Leads) > 0 && len(writes) < 16 && leadBatches%8 == 1 { // a sample along the load
			w := readmodel.Batch{Leads: rb.Leads[:len(rb.Leads)*3/4], GeoSignals: rb.GeoSignals}
			if n := len(permitDocs.Permits); n > 0 {
				w.Permits = permitDocs.Permits[:min(n, 1024)]
				permitDocs.Permits = permitDocs.Permits[min(n, 1024):]
			}
			writes = append(writes, cloneBatch(w))
		}
		batch = batch[:0]
	}
	publish := func(env events.Envelope, err error) {
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, env)
		if len(batch) == 4096 {
			flush()
		}
	}
	loc := func(scope, id string, l events.Location) (events.Envelope, error) {
		l.GeoType, l.State, l.StateName, l.Lat, l.Lon = scope, "WA", "Washington", 47.5, -121
		return events.New(events.LocationUpserted, events.GeoID(scope, id), 1, benchNow, "bench", l)
	}
	state := events.GeoID("state", "WA")
	publish(loc("state", "WA", events.Location{Name: "Washington", DisplayName: "Washington"}))
	type city struct{ name, county, zip0 string }
	var cities []city
	for c := range 39 {
		fips := fmt.Sprintf("53%03d", 2*c+1)
		name := fmt.Sprintf("County %d", c)
		publish(loc("county", fips, events.Location{Name: name, DisplayName: name + ", WA", County: name, StateGeoID: state}))
	}
	for i := range 300 {
		fips := fmt.Sprintf("53%03d", 2*(i%39)+1)
		county := fmt.Sprintf("County %d", i%39)
		name := fmt.Sprintf("City %d", i)
		id := fmt.Sprint(1840000000 + i)
		jur := events.GeoID("jurisdiction", "city:"+id)
		cgeo := events.GeoID("county", fips)
		publish(loc("jurisdiction", "city:"+id, events.Location{Name: "City of " + name, DisplayName: "City of " + name + ", WA", County: county, City: name, Jurisdiction: "City of " + name, StateGeoID: state, CountyGeoID: cgeo}))
		publish(loc("city", id, events.Location{Name: name, DisplayName: name + ", WA", County: county, City: name, Jurisdiction: "City of " + name, StateGeoID: state, CountyGeoID: cgeo, JurisdictionGeoID: jur}))
		for z := range 3 {
			zip := fmt.Sprintf("9%04d", 3*i+z)
			publish(loc("zip", zip, events.Location{Name: zip, DisplayName: zip + " (" + name + ", WA)", County: county, City: name, Zipcode: zip, Jurisdiction: "City of " + name,
				StateGeoID: state, CountyGeoID: cgeo, CityGeoID: events.GeoID("city", id), JurisdictionGeoID: jur}))
		}
		cities = append(cities, city{name: name, county: county, zip0: fmt.Sprintf("9%04d", 3*i)})
	}
	flush()

	// Cumulative 1/rank weights.
	cum := make([]float64, len(cities))
	total := 0.0
	for i := range cities {
		total += 1 / float64(i+1)
		cum[i] = total
	}
	works := []struct {
		work  string
		share float64
		val   float64
	}{{"Addition/Alteration", 0.40, 45_000}, {"Mechanical/Electrical/Plumbing", 0.30, 8_000}, {"New Construction", 0.15, 350_000}, {"Demolition", 0.08, 20_000}, {"Grading/Site Prep", 0.07, 60_000}}
	pl, err := signals.New(signals.Params{AsOf: benchNow}, func(env events.Envelope) error { publish(env, nil); return nil })
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	permits := benchPermits(b)
	for i := range permits {
		ci, _ := slices.BinarySearch(cum, r.Float64()*total)
		c := cities[min(ci, len(cities)-1)]
		u, w := r.Float64(), works[0]
		for _, x := range works {
			if u < x.share {
				w = x
				break
			}
			u -= x.share
		}
		v := w.val * (0.3 + 1.4*r.Float64())
		zip := c.zip0[:4] + string(rune('0'+(int(c.zip0[4]-'0')+r.IntN(3))%10))
		p := events.Permit{
			PermitNumber: fmt.Sprintf("B%07d", i), PermitType: "Building", WorkType: w.work, Status: "Issued",
			IssueDate: benchNow.AddDate(0, 0, -r.IntN(15*365)).Format(time.DateOnly), Valuation: &v,
			Address: events.PermitAddress{Line: fmt.Sprintf("%d MAIN ST", i), City: c.name, State: "WA", Zipcode: zip},
			Source:  "synthetic",
		}
		env, err := events.New(events.PermitUpserted, events.PermitDocID("synthetic", p.PermitNumber), 1, benchNow, "synthetic", p)
		if err != nil {
			b.Fatal(err)
		}
		if err := pl.Add(env); err != nil {
			b.Fatal(err)
		}
		if i%8 == 0 && len(permitDocs.Permits) < 16*1024 { // permits for the writer's batches
			out, err := indexer.Project(ctx, env, store)
			if err != nil {
				b.Fatal(err)
			}
			permitDocs.Append(out)
		}
	}
	rep, err := pl.Finish(ctx)
	if err != nil {
		b.Fatal(err)
	}
	flush()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.Logf("loaded %d permits -> %d leads, %d geo signals in %v; heap in use %d MiB", permits, rep.Leads, rep.GeoSignals, time.Since(start).Round(time.Millisecond), ms.HeapInuse>>20)
	for i := range writes {
		if len(writes[i].Permits) == 0 && len(permitDocs.Permits) > 0 {
			n := min(len(permitDocs.Permits), 1024)
			writes[i].Permits, permitDocs.Permits = cloneBatch(readmodel.Batch{Permits: permitDocs.Permits[:n]}).Permits, permitDocs.Permits[n:]
		}
	}
	return signalBench{store: store, state: state, city: events.GeoID("city", "1840000000"), leads: rep.Leads, writes: writes}
}

func cloneBatch(b readmodel.Batch) readmodel.Batch {
	var out readmodel.Batch
	for _, l := range b.Leads {
		out.Leads = append(out.Leads, l.Clone())
	}
	for _, g := range b.GeoSignals {
		out.GeoSignals = append(out.GeoSignals, g.Clone())
	}
	for _, p := range b.Permits {
		out.Permits = append(out.Permits, p.Clone())
	}
	return out
}

// timeIt runs fn max(b.N, 2000) times (stopping after 15s once it has 200
// samples), after a full GC so the load's garbage is not charged to the
// reads, and reports p50 and p99.
func timeIt(b *testing.B, fn func(i int)) {
	n := max(b.N, 2000)
	d := make([]time.Duration, 0, n)
	runtime.GC()
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		t0 := time.Now()
		fn(i)
		d = append(d, time.Since(t0))
		if i >= 200 && time.Since(start) > 15*time.Second {
			break
		}
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(len(d)), "samples")
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-us")
}

func freshSince(days int) string { return benchNow.AddDate(0, 0, -days).Format(time.DateOnly) }

// BenchmarkLeadsCityPage: 25-lead pages of the largest city, default
// 60-day window, walking up to 20 pages by cursor then restarting.
func BenchmarkLeadsCityPage(b *testing.B) {
	for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
		b.Run(string(sort), func(b *testing.B) {
			d := loadSignalBench(b)
			ctx := context.Background()
			var after *readmodel.LeadKey
			page := 0
			timeIt(b, func(int) {
				res, err := d.store.PermitLeads(ctx, readmodel.LeadQuery{
					Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(d.city), FreshSince: freshSince(60)}, Sort: sort, Limit: 25, After: after,
				})
				if err != nil || len(res.Leads) == 0 {
					b.Fatalf("page: %d leads, %v", len(res.Leads), err)
				}
				page++
				after = res.Next
				if page == 20 || after == nil {
					after, page = nil, 0
				}
			})
		})
	}
}

// BenchmarkStatsState: stats of the WA state geo (every lead) for the
// filter combinations a dashboard sends: the default window, no window,
// confidence floors (fixed, and swept from 0 to 1 by 0.05 so p99 holds
// the worst floor), signal key subsets, and from/to dates.
func BenchmarkStatsState(b *testing.B) {
	fixed := func(f float64) *float64 { return &f }
	sweep := func(i int) *float64 { return fixed(float64(i%21) / 20) }
	keys := events.PermitSignalKeys
	yearAgo, monthAgo := benchNow.AddDate(-1, 0, 0).Format(time.DateOnly), benchNow.AddDate(0, -1, 0).Format(time.DateOnly)
	for _, c := range []struct {
		name string
		f    func(i int) readmodel.LeadFilter
	}{
		{"default_60d", func(int) readmodel.LeadFilter { return readmodel.LeadFilter{FreshSince: freshSince(60)} }},
		{"include_stale", func(int) readmodel.LeadFilter { return readmodel.LeadFilter{} }},
		{"min_confidence_60d", func(int) readmodel.LeadFilter {
			return readmodel.LeadFilter{FreshSince: freshSince(60), MinConfidence: fixed(0.5)}
		}},
		{"min_confidence_sweep_60d", func(i int) readmodel.LeadFilter {
			return readmodel.LeadFilter{FreshSince: freshSince(60), MinConfidence: sweep(i)}
		}},
		{"min_confidence_include_stale", func(int) readmodel.LeadFilter { return readmodel.LeadFilter{MinConfidence: fixed(0.5)} }},
		{"min_confidence_sweep_include_stale", func(i int) readmodel.LeadFilter { return readmodel.LeadFilter{MinConfidence: sweep(i)} }},
		{"max_freshness_30_min_confidence_0.8", func(int) readmodel.LeadFilter {
			return readmodel.LeadFilter{FreshSince: freshSince(30), MinConfidence: fixed(0.8)}
		}},
		{"signal_keys_1_include_stale", func(i int) readmodel.LeadFilter {
			return readmodel.LeadFilter{SignalKeys: keys[i%len(keys) : i%len(keys)+1]}
		}},
		{"signal_keys_2_min_confidence_sweep_60d", func(i int) readmodel.LeadFilter {
			return readmodel.LeadFilter{SignalKeys: []string{keys[i%len(keys)], keys[(i+3)%len(keys)]}, FreshSince: freshSince(60), MinConfidence: sweep(i)}
		}},
		{"signal_keys_3_min_confidence_sweep_include_stale", func(i int) readmodel.LeadFilter {
			return readmodel.LeadFilter{SignalKeys: []string{keys[i%len(keys)], keys[(i+2)%len(keys)], keys[(i+4)%len(keys)]}, MinConfidence: sweep(i)}
		}},
		{"from_to_year", func(int) readmodel.LeadFilter { return readmodel.LeadFilter{FromDate: yearAgo, ToDate: monthAgo} }},
		{"from_to_year_min_confidence_sweep", func(i int) readmodel.LeadFilter {
			return readmodel.LeadFilter{FromDate: yearAgo, ToDate: monthAgo, MinConfidence: sweep(i)}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := loadSignalBench(b)
			ctx := context.Background()
			timeIt(b, func(i int) {
				f := c.f(i)
				f.Geo = readmodel.ParseGeoRef(d.state)
				_, err := d.store.PermitStats(ctx, readmodel.StatsQuery{Filter: f, Today: benchNow.Format(time.DateOnly), TopN: 10})
				if err != nil {
					b.Fatalf("stats: %v", err)
				}
			})
		})
	}
}

// BenchmarkGeoSearchPage: 25-row pages of WA geo signals, all keys,
// walking by cursor.
func BenchmarkGeoSearchPage(b *testing.B) {
	d := loadSignalBench(b)
	ctx := context.Background()
	var after *readmodel.GeoSignalKey
	timeIt(b, func(int) {
		res, err := d.store.SearchGeoSignals(ctx, readmodel.GeoSignalQuery{State: "WA", Limit: 25, After: after})
		if err != nil || len(res.Signals) == 0 {
			b.Fatalf("search: %v", err)
		}
		after = res.Next
	})
}

// BenchmarkLeadsStatePage: 25-lead pages of the whole state, all time,
// in both orders, walking up to 20 pages by cursor then restarting.
func BenchmarkLeadsStatePage(b *testing.B) {
	for _, sort := range []readmodel.LeadSort{readmodel.SortEventDateDesc, readmodel.SortConfidenceDesc} {
		b.Run(string(sort), func(b *testing.B) {
			d := loadSignalBench(b)
			ctx := context.Background()
			var after *readmodel.LeadKey
			page := 0
			timeIt(b, func(int) {
				res, err := d.store.PermitLeads(ctx, readmodel.LeadQuery{Filter: readmodel.LeadFilter{Geo: readmodel.ParseGeoRef(d.state)}, Sort: sort, Limit: 25, After: after})
				if err != nil || len(res.Leads) == 0 {
					b.Fatalf("page: %d leads, %v", len(res.Leads), err)
				}
				page++
				after = res.Next
				if page == 20 || after == nil {
					after, page = nil, 0
				}
			})
		})
	}
}
