// Package gen generates synthetic building permits at scale, for
// benchmarks and load tests, as the same permit.upserted and
// property.upserted events the real importers emit.
//
// Permits are spread over the real gazetteer's places (simplemaps US
// cities) in proportion to population; each lands on an address of its
// place, in one of the place's real ZIPs (one GeoNames knows, so the
// projection links it to ZIP, city, county and state). The mix of work
// (share, median valuation):
//
//	Addition/Alteration             40%   $45k
//	Mechanical/Electrical/Plumbing  30%   $8k
//	New Construction                15%   $350k
//	Demolition                       8%   $20k
//	Grading/Site Prep                7%   $60k
//
// Valuations are log-normal around those medians. Issue dates are uniform
// over the three years up to Params.Now; about 4% of permits are still in
// review (no issue date). Statuses follow the dates: a permit whose work
// should be done by Now is "Completed" (with a completion date) 85% of the
// time, one older than its 18-month expiry and not completed is "Expired",
// the rest "Issued". About three permits share every four addresses, so
// properties have histories.
//
// Output is a pure function of Params: the same seed, count and Now give
// the same events byte for byte. Generation streams: memory is the place
// table and one bit per address, whatever the permit count.
package gen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/permitd/permitd/events"
	"github.com/permitd/permitd/internal/address"
	"github.com/permitd/permitd/pipeline/data"
)

// Source is the envelope and permit source of every generated event.
const Source = "synthetic"

// Version is the entity version of every generated event.
const Version int64 = 1

// Params says what to generate.
type Params struct {
	// Permits is the number of permits, 1 to MaxPermits.
	Permits int
	// Seed selects the output; the same seed gives the same events.
	Seed int64
	// Now is the service clock's today: the newest issue date, and the
	// occurred_at of every event. Zero means the system clock's date.
	Now time.Time
	// Open reads the gazetteer sources; nil means the bundled data
	// (data.Open).
	Open func(name string) (io.ReadCloser, error)
	// States limits the places permits are spread over to these states
	// (USPS codes, any case); empty means every state.
	States []string
}

// Report says what was generated.
type Report struct {
	Permits    int `json:"permits"`
	Properties int `json:"properties"`
	Events     int `json:"events"`
	// Places is the number of gazetteer places permits were spread over.
	Places int `json:"places"`
	// WorkTypes counts permits per work type.
	WorkTypes map[string]int `json:"work_types"`
	// Statuses counts permits per status.
	Statuses map[string]int `json:"statuses"`
	Elapsed  time.Duration  `json:"elapsed_ns"`
}

// WriteText writes the report for people.
func (r Report) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "generated %d permits and %d properties (%d events) over %d places in %v\n",
		r.Permits, r.Properties, r.Events, r.Places, r.Elapsed.Round(time.Millisecond))
	for _, k := range slices.Sorted(maps.Keys(r.WorkTypes)) {
		if err == nil {
			_, err = fmt.Fprintf(w, "  work %-32s %d\n", k, r.WorkTypes[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Statuses)) {
		if err == nil {
			_, err = fmt.Fprintf(w, "  status %-30s %d\n", k, r.Statuses[k])
		}
	}
	return err
}

// MaxPermits bounds Params.Permits. The generator keeps a bit per
// address slot (three for every four permits): 94 MB at the bound. Above
// it the bits outgrew the memory (at 2,000,000,000,000 gen stopped, out
// of memory), and at 9e18 the slot count overflowed.
const MaxPermits = 1_000_000_000

// Generate emits p.Permits permits, each preceded by its property the
// first time the property appears. It stops at the first error of emit or
// when ctx is done, returning the report so far.
func Generate(ctx context.Context, p Params, emit func(events.Envelope) error) (Report, error) {
	start := time.Now()
	rep := Report{WorkTypes: map[string]int{}, Statuses: map[string]int{}}
	if p.Permits < 1 || p.Permits > MaxPermits {
		return rep, fmt.Errorf("gen: Permits must be 1 to %d", MaxPermits)
	}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC().Truncate(24 * time.Hour)
	open := p.Open
	if open == nil {
		open = data.Open
	}
	places, err := loadPlaces(open, p.States)
	if err != nil {
		return rep, err
	}
	rep.Places = len(places)
	g := newGenerator(p, now, places)

	var permit events.Permit
	var prop events.Property
	buf := make([]byte, 0, 1024)
	for i := 0; i < p.Permits; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				rep.Elapsed = time.Since(start)
				return rep, err
			}
		}
		slot, pi := g.pickAddress()
		pl := &places[pi]
		line, zip, lat, lon := g.address(pi, slot)
		// line is already normal (TestStreetsAreNormalised), so this is
		// address.PropertyIdentity without parsing it again.
		propID := events.PropertyID("addr:" + line + "|" + pl.city + "|" + pl.state)
		if !g.seen(slot) {
			prop = events.Property{
				CanonicalAddress:  address.Canonical(line, pl.city, pl.state, zip),
				NormalizedAddress: line,
				City:              pl.city,
				State:             pl.state,
				Zipcode:           zip,
				Lat:               &lat,
				Lon:               &lon,
			}
			buf = appendProperty(buf[:0], &prop)
			env := envelope(events.PropertyUpserted, propID, now, bytes.Clone(buf))
			if err := emit(env); err != nil {
				rep.Elapsed = time.Since(start)
				return rep, err
			}
			rep.Properties++
			rep.Events++
		}
		g.permit(&permit, i, line, pl, zip, lat, lon, propID)
		buf = appendPermit(buf[:0], &permit)
		env := envelope(events.PermitUpserted, events.PermitDocID(Source, permit.PermitNumber), now, bytes.Clone(buf))
		if err := emit(env); err != nil {
			rep.Elapsed = time.Since(start)
			return rep, err
		}
		rep.Permits++
		rep.Events++
		rep.WorkTypes[permit.WorkType]++
		rep.Statuses[permit.Status]++
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// addressesPerPermit is the number of distinct addresses per expected
// permit of a place: about four permits on every three addresses.
const addressesPerPermit = 0.75

type generator struct {
	seed    int64
	now     time.Time
	rng     *rand.Rand
	places  []place
	cum     []float64 // cumulative population
	offset  []int     // first address slot of each place
	nSlots  int
	emitted []uint64 // one bit per address slot: property emitted
}

func newGenerator(p Params, now time.Time, places []place) *generator {
	g := &generator{
		seed:   p.Seed,
		now:    now,
		rng:    rand.New(rand.NewPCG(uint64(p.Seed), 0x7065726d697464)), // "permitd"
		places: places,
		cum:    make([]float64, len(places)),
		offset: make([]int, len(places)+1),
	}
	total := 0.0
	for i := range places {
		total += places[i].weight
		g.cum[i] = total
	}
	for i := range places {
		expected := float64(p.Permits) * places[i].weight / total
		g.offset[i+1] = g.offset[i] + max(1, int(math.Ceil(expected*addressesPerPermit)))
	}
	g.nSlots = g.offset[len(places)]
	g.emitted = make([]uint64, (g.nSlots+63)/64)
	return g
}

// pickAddress draws a place by population and an address slot of it.
func (g *generator) pickAddress() (slot, place int) {
	x := g.rng.Float64() * g.cum[len(g.cum)-1]
	place = sort.SearchFloat64s(g.cum, x)
	if place >= len(g.places) {
		place = len(g.places) - 1
	}
	n := g.offset[place+1] - g.offset[place]
	return g.offset[place] + g.rng.IntN(n), place
}

// seen marks slot and reports whether it was marked before.
func (g *generator) seen(slot int) bool {
	w, b := slot/64, uint64(1)<<(slot%64)
	was := g.emitted[w]&b != 0
	g.emitted[w] |= b
	return was
}

// address derives a slot's street line, ZIP and coordinates from the
// slot alone, so every permit at the slot agrees. Distinct slots of a
// place get distinct lines.
func (g *generator) address(pi, slot int) (line, zip string, lat, lon float64) {
	pl := &g.places[pi]
	local := slot - g.offset[pi]
	h := mix(uint64(g.seed), uint64(slot))
	k := local % len(streets)
	block := local / len(streets)
	number := 100 + 4*block + int(h%4)
	line = strconv.Itoa(number) + " " + streets[k]
	zip = pl.zips[int((h>>8)%uint64(len(pl.zips)))]
	// Within about 5 km of the place's centre.
	dlat := (float64((h>>16)%20001)/10000 - 1) * 0.045
	dlon := (float64((h>>32)%20001)/10000 - 1) * 0.045 / math.Max(0.2, math.Cos(pl.lat*math.Pi/180))
	lat = math.Round((pl.lat+dlat)*1e6) / 1e6
	lon = math.Round((pl.lon+dlon)*1e6) / 1e6
	return line, zip, lat, lon
}

// mix is splitmix64 of a and b: a well-spread hash.
func mix(a, b uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 + b + 0x632be59bd9b4e019
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
